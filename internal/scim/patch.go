package scim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

const maxOperations = 100

// operation is one entry of a PatchOp's Operations.
type operation struct {
	op      string          // "add", "replace" or "remove"
	path    string          // as sent
	hasPath bool            // false when path is absent or null
	value   json.RawMessage // nil when absent
}

// ApplyPatch applies a PatchOp body (RFC 7644 §3.5.2) to u and returns the
// result. It takes both Okta's and Entra's shapes: op names in any case, a
// value object without a path, paths like `name.givenName`,
// `emails[type eq "work"].value`, `title`, `roles[primary eq "True"].value`
// and `urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department`.
// Attributes of the core User schema and of the enterprise extension that
// Perch does not keep are accepted and change nothing.
//
// All or nothing: on error, the result is u as given, and u itself is never
// changed. Errors are *Error 400 with scimType InvalidSyntax, InvalidPath,
// InvalidValue, NoTarget or Mutability.
func ApplyPatch(u User, body []byte) (User, error) {
	ops, err := decodePatch(body)
	if err != nil {
		return u, err
	}
	out := u
	out.Emails = slices.Clone(u.Emails)
	if err := applyEach(ops, out.apply); err != nil {
		return u, err
	}
	if err := out.check(); err != nil {
		return u, err
	}
	return out, nil
}

// applyEach applies ops in order with apply, and stops at the first that
// fails, its error naming the operation (counted from 1).
func applyEach(ops []operation, apply func(operation) *Error) error {
	for i, op := range ops {
		if err := apply(op); err != nil {
			err.Detail = "Operation " + strconv.Itoa(i+1) + ": " + err.Detail
			return err
		}
	}
	return nil
}

// decodePatch reads a PatchOp message.
func decodePatch(body []byte) ([]operation, *Error) {
	ms, err := decodeBody(body)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	found := false
	for _, m := range ms {
		switch strings.ToLower(m.name) {
		case "schemas":
			if err := checkSchemas(m.value, PatchSchema); err != nil {
				return nil, err
			}
		case "operations":
			found = true
			if json.Unmarshal(m.value, &items) != nil {
				return nil, syntaxError(`"Operations" must be an array.`)
			}
		default:
			return nil, syntaxError("%q is not a member of a PatchOp message.", m.name)
		}
	}
	switch {
	case !found || len(items) == 0:
		return nil, syntaxError(`"Operations" must list at least one operation.`)
	case len(items) > maxOperations:
		return nil, syntaxError(`"Operations" has %d operations; Perch takes at most %d.`, len(items), maxOperations)
	}
	ops := make([]operation, len(items))
	for i, item := range items {
		op, err := decodeOperation(item)
		if err != nil {
			err.Detail = "Operation " + strconv.Itoa(i+1) + ": " + err.Detail
			return nil, err
		}
		ops[i] = op
	}
	return ops, nil
}

// decodeOperation reads one {"op", "path", "value"} object.
func decodeOperation(raw json.RawMessage) (operation, *Error) {
	ms, ok := objectMembers(raw)
	if !ok {
		return operation{}, syntaxError("An operation must be an object.")
	}
	if err := uniqueNames(ms, "op"); err != nil {
		return operation{}, err
	}
	var op operation
	for _, m := range ms {
		switch strings.ToLower(m.name) {
		case "op":
			var s string
			if json.Unmarshal(m.value, &s) != nil {
				return op, syntaxError(`"op" must be "add", "replace" or "remove".`)
			}
			op.op = strings.ToLower(s)
		case "path":
			if isNull(m.value) {
				continue
			}
			s, err := text(m.value, "path")
			if err != nil {
				return op, pathError(`"path" must be a string.`)
			}
			op.path, op.hasPath = s, true
		case "value":
			op.value = m.value
		default:
			return op, syntaxError("%q is not a member of an operation.", m.name)
		}
	}
	switch {
	case op.op != "add" && op.op != "replace" && op.op != "remove":
		return op, syntaxError(`"op" must be "add", "replace" or "remove".`)
	case op.op != "remove" && op.value == nil:
		return op, syntaxError(`%q needs a "value".`, op.op)
	}
	return op, nil
}

// apply applies one operation to u.
func (u *User) apply(op operation) *Error {
	if op.hasPath && !strings.EqualFold(op.path, UserSchema) {
		return u.applyPath(op.op, op.path, op.value)
	}
	if op.op == "remove" {
		return Errorf(http.StatusBadRequest, NoTarget, `"remove" needs a "path".`)
	}
	ms, ok := objectMembers(op.value)
	if !ok {
		return valueError(`Without a "path", "value" must be an object of attributes.`)
	}
	if err := uniqueNames(ms, "value"); err != nil {
		return err
	}
	for _, m := range ms {
		if err := u.applyPath(op.op, m.name, m.value); err != nil {
			return err
		}
	}
	return nil
}

// applyPath applies op with value (nil for remove) at path, as sent.
func (u *User) applyPath(op, path string, value json.RawMessage) *Error {
	if strings.EqualFold(path, EnterpriseSchema) {
		// The whole extension: its URN alone would parse as a path of
		// the attribute "User".
		return u.patchEnterprise(op, Path{Schema: enterpriseKey}, path, value)
	}
	parsed, err := parsePath(path)
	if err != nil {
		return err
	}
	switch parsed.Schema {
	case "":
	case enterpriseKey:
		return u.patchEnterprise(op, parsed, path, value)
	default:
		return pathError("%q: Perch does not know the schema %q.", path, parsed.Schema)
	}
	keep, known := userAttrs[parsed.Attr]
	switch {
	case !known:
		return pathError("%q is not an attribute of a User.", path)
	case !keep:
		return nil
	case parsed.Attr == "name":
		return u.patchName(op, parsed, path, value)
	case parsed.Attr == "emails":
		return u.patchEmails(op, parsed, path, value)
	case parsed.Attr == "roles":
		return u.patchRoles(op, parsed, path, value)
	case parsed.Filter != nil || parsed.Sub != "":
		return pathError("%q: that attribute has no sub-attributes or values to filter.", path)
	}

	switch {
	case op == "remove" && (parsed.Attr == "username" || parsed.Attr == "active"):
		return Errorf(http.StatusBadRequest, Mutability, "%q cannot be removed.", path)
	case op == "remove" && parsed.Attr == "externalid":
		u.ExternalID = ""
	case op == "remove" && parsed.Attr == "displayname":
		u.DisplayName = ""
	case op == "remove" && parsed.Attr == "title":
		u.Title = ""
	case parsed.Attr == "title":
		u.Title, err = optString(value, path, maxText)
	case parsed.Attr == "username":
		u.UserName, err = userName(value, path)
	case parsed.Attr == "externalid":
		u.ExternalID, err = optString(value, path, maxText)
	case parsed.Attr == "displayname":
		u.DisplayName, err = optString(value, path, maxText)
	case parsed.Attr == "active":
		u.Active, err = boolValue(value, path)
	}
	return err
}

// patchName applies op to name or one of its sub-attributes.
func (u *User) patchName(op string, p Path, path string, value json.RawMessage) *Error {
	if p.Filter != nil {
		return pathError("%q: name is not multi-valued.", path)
	}
	if p.Sub == "" {
		if op == "remove" {
			u.Name = Name{}
			return nil
		}
		n, err := mergeName(u.Name, value, path)
		u.Name = n
		return err
	}
	field := u.Name.field(p.Sub)
	if field == nil {
		return pathError("%q: name has no sub-attribute %q.", path, p.Sub)
	}
	if op == "remove" {
		*field = ""
		return nil
	}
	s, err := optString(value, path, maxText)
	*field = s
	return err
}

// check keeps the rules every User obeys after a whole PATCH.
func (u *User) check() *Error {
	switch {
	case strings.TrimSpace(u.UserName) == "":
		return valueError(`"userName" must not be empty.`)
	case len(u.Emails) > maxEmails:
		return valueError(`"emails" has %d entries; Perch keeps at most %d.`, len(u.Emails), maxEmails)
	case primaries(u.Emails) > 1:
		return valueError(`"emails" has more than one primary email.`)
	}
	for _, e := range u.Emails {
		if e.Value == "" {
			return valueError(`Every entry of "emails" needs a "value".`)
		}
	}
	return nil
}
