package scim

import (
	"encoding/json"
	"strings"
)

// The organisation roles a User's roles may name, most privileged first.
// A value names one when it equals it without regard to case and to the
// white space around it; every other value ("Viewer", "platform admin",
// "superuser") is ignored. No value names a platform admin: that is never
// an identity provider's to give.
var orgRoles = []string{"owner", "admin", "member"}

// RoleMember is the role a member has when the identity provider takes
// away the role it gave.
const RoleMember = "member"

// roleEntry is one entry of roles (RFC 7643 §4.1.2) as far as Perch reads it.
type roleEntry struct {
	value   string
	primary bool
}

// orgRole is the organisation role value names, "" for none.
func orgRole(value string) string {
	v := strings.TrimSpace(value)
	for _, r := range orgRoles {
		if strings.EqualFold(v, r) {
			return r
		}
	}
	return ""
}

// pickRole is the role a list of roles names: the primary entry's when it
// names one, else the most privileged one named, else "" (none).
func pickRole(entries []roleEntry) string {
	for _, e := range entries {
		if r := orgRole(e.value); r != "" && e.primary {
			return r
		}
	}
	for _, r := range orgRoles {
		for _, e := range entries {
			if orgRole(e.value) == r {
				return r
			}
		}
	}
	return ""
}

// roleList reads roles: an array of {value, display, type, primary}
// objects (or of bare strings); null is none. single lets one entry stand
// for a list of one, as PATCH allows.
func roleList(raw json.RawMessage, name string, single bool) ([]roleEntry, *Error) {
	if isNull(raw) {
		return nil, nil
	}
	if single && raw[0] != '[' {
		raw = json.RawMessage("[" + string(raw) + "]")
	}
	var items []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, valueError("%q must be an array of role objects.", name)
	}
	if len(items) > maxOperations {
		return nil, valueError("%q has %d entries; Perch reads at most %d.", name, len(items), maxOperations)
	}
	entries := make([]roleEntry, 0, len(items))
	for _, item := range items {
		e, err := roleOf(item, name)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// roleOf reads one entry of roles; sub-attributes other than value and
// primary (display, type) are read past.
func roleOf(raw json.RawMessage, name string) (roleEntry, *Error) {
	if len(raw) > 0 && raw[0] == '"' {
		s, err := trimmedString(raw, name, maxText)
		return roleEntry{value: s}, err
	}
	ms, ok := objectMembers(raw)
	if !ok {
		return roleEntry{}, valueError("The entries of %q must be objects.", name)
	}
	if err := uniqueNames(ms, name); err != nil {
		return roleEntry{}, err
	}
	var e roleEntry
	for _, m := range ms {
		var err *Error
		switch strings.ToLower(m.name) {
		case "value":
			e.value, err = trimmedString(m.value, name+".value", maxText)
		case "primary":
			if !isNull(m.value) {
				e.primary, err = boolValue(m.value, name+".primary")
			}
		}
		if err != nil {
			return roleEntry{}, err
		}
	}
	return e, nil
}

// patchRoles applies op to roles. Perch keeps one role, so the user's
// roles read as the one entry {value: Role, primary: true}, and:
//   - add or replace of entries (roles, or roles[filter] with an entry)
//     makes the role the one they name, if they name one;
//   - add or replace of a value (roles.value, roles[primary eq true].value:
//     Entra's single-role mapping) makes it that value's role, if any;
//   - remove of roles, of the entry holding the user's role (by value
//     filter or by a value listing it), makes them a member; a removal
//     that does not match the role they have changes nothing.
//
// Other sub-attributes (display, type, primary) change nothing.
func (u *User) patchRoles(op string, p Path, path string, value json.RawMessage) *Error {
	for _, c := range p.Filter {
		if c.Attr != "value" && c.Attr != "primary" && c.Attr != "type" && c.Attr != "display" {
			return pathError("%q: a role has no sub-attribute %q to filter on.", path, c.Attr)
		}
	}
	switch p.Sub {
	case "", "value", "display", "type", "primary":
	default:
		return pathError("%q: a role has no sub-attribute %q.", path, p.Sub)
	}
	if op == "remove" {
		switch {
		case p.Sub != "":
			return nil
		case p.Filter != nil:
			if u.Role != "" && matchesRole(p.Filter, u.Role) {
				u.Role = RoleMember
			}
			return nil
		case isNull(value):
			u.Role = RoleMember
			return nil
		}
		entries, err := roleList(value, path, true)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if u.Role != "" && orgRole(e.value) == u.Role {
				u.Role = RoleMember
			}
		}
		return nil
	}
	var entries []roleEntry
	switch p.Sub {
	case "value":
		s, err := trimmedString(value, path, maxText)
		if err != nil {
			return err
		}
		entries = []roleEntry{{value: s, primary: true}}
	case "":
		var err *Error
		if entries, err = roleList(value, path, true); err != nil {
			return err
		}
	default:
		return nil
	}
	if r := pickRole(entries); r != "" {
		u.Role = r
	}
	return nil
}

// matchesRole reports whether the one entry {value: role, primary: true}
// meets every comparison of f. Roles compare without case.
func matchesRole(f Filter, role string) bool {
	for _, c := range f {
		var ok bool
		switch c.Attr {
		case "value":
			s, isString := c.Value.(string)
			ok = isString && orgRole(s) == role
		case "primary":
			b, isBool := c.Value.(bool)
			if s, isString := c.Value.(string); isString {
				b, isBool = strings.EqualFold(s, "true"), strings.EqualFold(s, "true") || strings.EqualFold(s, "false")
			}
			ok = isBool && b
		}
		if !ok {
			return false
		}
	}
	return true
}

// RoleResource is an entry of roles as rendered.
type RoleResource struct {
	Value   string `json:"value"`
	Primary bool   `json:"primary"`
}

// renderRoles is the user's role as the one entry of roles, nil for none.
func renderRoles(role string) []RoleResource {
	if role == "" {
		return nil
	}
	return []RoleResource{{Value: role, Primary: true}}
}
