package scim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// emailSubs are the sub-attributes of an email that Perch keeps.
var emailSubs = map[string]bool{"value": true, "type": true, "primary": true, "display": true}

// patchEmails applies op to emails, emails.sub, emails[filter] or
// emails[filter].sub. Setting primary on an email clears it on the others.
func (u *User) patchEmails(op string, p Path, path string, value json.RawMessage) *Error {
	if p.Sub != "" && !emailSubs[p.Sub] {
		return pathError("%q: an email has no sub-attribute %q.", path, p.Sub)
	}
	for _, c := range p.Filter {
		if !emailSubs[c.Attr] {
			return pathError("%q: an email has no sub-attribute %q to filter on.", path, c.Attr)
		}
	}
	if p.Filter == nil && p.Sub == "" {
		return u.patchEmailList(op, path, value)
	}

	var matches []int
	for i, e := range u.Emails {
		if matchesEmail(p.Filter, e) {
			matches = append(matches, i)
		}
	}
	if len(matches) == 0 {
		if t, ok := typedValue(op, p); ok {
			return u.addTypedEmail(t, path, value)
		}
		return Errorf(http.StatusBadRequest, NoTarget, "%q matches no email.", path)
	}
	if op == "remove" && p.Sub == "" {
		u.Emails = deleteAt(u.Emails, matches)
		return nil
	}
	for _, i := range matches {
		var err *Error
		switch {
		case op == "remove":
			err = u.Emails[i].set(p.Sub, json.RawMessage("null"), path)
		case p.Sub == "":
			u.Emails[i], err = mergeEmail(u.Emails[i], value, path)
		default:
			err = u.Emails[i].set(p.Sub, value, path)
		}
		if err != nil {
			return err
		}
	}
	for _, i := range matches {
		if u.Emails[i].Primary {
			clearPrimary(u.Emails, matches)
			break
		}
	}
	return nil
}

// patchEmailList applies op to the whole list: add appends, replace
// replaces, remove clears.
func (u *User) patchEmailList(op, path string, value json.RawMessage) *Error {
	if op == "remove" {
		u.Emails = nil
		return nil
	}
	list, err := emailList(value, path, true)
	if err != nil {
		return err
	}
	if op == "replace" {
		u.Emails = list
		return nil
	}
	if primaries(list) > 0 {
		clearPrimary(u.Emails, nil)
	}
	u.Emails = append(u.Emails, list...)
	return nil
}

// typedValue reports whether a path that matched nothing is Entra's way of
// setting the address of a type, `emails[type eq "work"].value`, which adds
// an email of that type when there is none.
func typedValue(op string, p Path) (string, bool) {
	if op == "remove" || p.Sub != "value" || len(p.Filter) != 1 || p.Filter[0].Attr != "type" {
		return "", false
	}
	t, ok := p.Filter[0].Value.(string)
	return t, ok
}

// addTypedEmail appends an email of type t with the address value, primary
// when no other email is.
func (u *User) addTypedEmail(t, path string, value json.RawMessage) *Error {
	if len(t) > maxText {
		return valueError("%q: the type is longer than %d bytes.", path, maxText)
	}
	e := Email{Type: t, Primary: primaries(u.Emails) == 0}
	if err := e.set("value", value, path); err != nil {
		return err
	}
	u.Emails = append(u.Emails, e)
	return nil
}

// matchesEmail reports whether e meets every comparison of f; type and value
// compare without case, as addresses and their types do.
func matchesEmail(f Filter, e Email) bool {
	for _, c := range f {
		var ok bool
		switch c.Attr {
		case "value":
			s, isString := c.Value.(string)
			ok = isString && strings.EqualFold(s, e.Value)
		case "type":
			s, isString := c.Value.(string)
			ok = isString && strings.EqualFold(s, e.Type)
		case "display":
			s, isString := c.Value.(string)
			ok = isString && s == e.Display
		case "primary":
			b, isBool := c.Value.(bool)
			ok = isBool && b == e.Primary
		}
		if !ok {
			return false
		}
	}
	return true
}

// clearPrimary clears primary on every email whose index is not in keep.
func clearPrimary(emails []Email, keep []int) {
	for i := range emails {
		if !slices.Contains(keep, i) {
			emails[i].Primary = false
		}
	}
}

// deleteAt returns emails without the entries at the given indexes.
func deleteAt(emails []Email, indexes []int) []Email {
	kept := emails[:0]
	for i, e := range emails {
		if !slices.Contains(indexes, i) {
			kept = append(kept, e)
		}
	}
	return kept
}
