package scim

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// member is one name and value of a JSON object, in the order sent.
type member struct {
	name  string
	value json.RawMessage
}

// decodeBody reads body as exactly one JSON object whose names, compared
// without case as SCIM compares attribute names, are all different.
func decodeBody(body []byte) ([]member, *Error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, syntaxError("The body is not JSON.")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, syntaxError("The body has more after its JSON object.")
	}
	ms, ok := objectMembers(raw)
	if !ok {
		return nil, syntaxError("The body must be a JSON object.")
	}
	return ms, uniqueNames(ms, "")
}

// objectMembers reads raw, one valid JSON value, as an object; ok is false
// for any other kind of value.
func objectMembers(raw json.RawMessage) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var ms []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, ok := t.(string)
		if !ok {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		ms = append(ms, member{name: name, value: v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	return ms, true
}

// uniqueNames refuses an object that names an attribute twice, since SCIM
// names are case-insensitive and either value could be meant. in names the
// object for the detail, "" for the body itself.
func uniqueNames(ms []member, in string) *Error {
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		key := strings.ToLower(m.name)
		if seen[key] {
			if in == "" {
				return syntaxError("%q appears twice.", m.name)
			}
			return syntaxError("%q appears twice in %q.", m.name, in)
		}
		seen[key] = true
	}
	return nil
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// optString reads a string of at most max bytes, or null as "". name is the
// attribute as the request named it, for the detail.
func optString(raw json.RawMessage, name string, max int) (string, *Error) {
	s, err := text(raw, name)
	if err == nil && len(s) > max {
		return "", valueError("%q is longer than %d bytes.", name, max)
	}
	return s, err
}

// trimmedString reads a string, or null as "", without the white space
// around it, of at most max bytes.
func trimmedString(raw json.RawMessage, name string, max int) (string, *Error) {
	s, err := text(raw, name)
	if s = strings.TrimSpace(s); err == nil && len(s) > max {
		return "", valueError("%q is longer than %d bytes.", name, max)
	}
	return s, err
}

// text reads a string of any length, or null as "".
func text(raw json.RawMessage, name string) (string, *Error) {
	if isNull(raw) {
		return "", nil
	}
	if raw[0] != '"' {
		return "", valueError("%q must be a string.", name)
	}
	// Decoding would replace invalid UTF-8 silently; refuse it instead.
	if !utf8.Valid(raw) {
		return "", valueError("%q is not valid UTF-8.", name)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", valueError("%q must be a string.", name)
	}
	return s, nil
}

// boolValue reads true or false, or the strings "true" and "false" in any
// case, which Entra sends ("False").
func boolValue(raw json.RawMessage, name string) (bool, *Error) {
	switch s := strings.ToLower(string(raw)); s {
	case "true", `"true"`:
		return true, nil
	case "false", `"false"`:
		return false, nil
	}
	return false, valueError("%q must be true or false.", name)
}

func syntaxError(format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, InvalidSyntax, format, args...)
}

func valueError(format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, InvalidValue, format, args...)
}
