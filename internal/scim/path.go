package scim

import (
	"net/http"
	"strings"
)

// Path is a PATCH path of RFC 7644 §3.5.2: attr[.sub] or attr[valueFilter][.sub],
// optionally prefixed by a schema URN.
type Path struct {
	// Schema is "" for the core User schema, else the lower-cased URN of an
	// extension, e.g. EnterpriseSchema lower-cased.
	Schema string
	// Attr is the lower-cased attribute name: "username", "name", "emails", "active".
	Attr string
	// Filter is the value filter in brackets, nil when absent. Its Attrs are
	// sub-attributes: "type", "value", "primary".
	Filter Filter
	// Sub is the lower-cased sub-attribute ("givenname", "value"), "" when absent.
	Sub string
}

// ParsePath parses a PATCH path such as `active`, `name.givenName`,
// `emails[type eq "work"].value` or
// `urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department`.
// Bad syntax is an *Error 400 InvalidPath.
func ParsePath(s string) (Path, error) {
	p, err := parsePath(s)
	if err != nil {
		return Path{}, err
	}
	return p, nil
}

// parsePath is ParsePath with its error as an *Error.
func parsePath(s string) (Path, *Error) {
	if s == "" {
		return Path{}, pathError("The path is empty.")
	}
	if len(s) > maxFilterLen {
		return Path{}, pathError("The path is %d bytes long; Perch takes at most %d.", len(s), maxFilterLen)
	}
	var p Path
	rest := s
	if hasPrefixFold(s, "urn:") {
		head := s
		if i := strings.IndexByte(s, '['); i >= 0 {
			head = s[:i]
		}
		i := strings.LastIndexByte(head, ':')
		if !validURN(s[:i]) {
			return Path{}, pathError("%q does not start with a valid schema URN.", s)
		}
		if !strings.EqualFold(s[:i], UserSchema) {
			p.Schema = strings.ToLower(s[:i])
		}
		rest = s[i+1:]
	}

	n := attrNameLen(rest)
	if n == 0 {
		return Path{}, pathError("%q does not start with an attribute name.", s)
	}
	p.Attr, rest = strings.ToLower(rest[:n]), rest[n:]

	if strings.HasPrefix(rest, "[") {
		end := closingBracket(rest)
		if end < 0 {
			return Path{}, pathError("The value filter of %q has no closing bracket.", s)
		}
		f, err := parseFilter(rest[1:end])
		if err != nil {
			return Path{}, pathError("The value filter of %q: %s", s, err.Detail)
		}
		for _, c := range f {
			if attrNameLen(c.Attr) != len(c.Attr) {
				return Path{}, pathError("The value filter of %q compares %q; it may compare only sub-attributes such as \"type\" or \"value\".", s, c.Attr)
			}
		}
		p.Filter, rest = f, rest[end+1:]
	}

	if strings.HasPrefix(rest, ".") {
		n := attrNameLen(rest[1:])
		if n == 0 {
			return Path{}, pathError("%q has no sub-attribute name after a dot.", s)
		}
		p.Sub, rest = strings.ToLower(rest[1:1+n]), rest[1+n:]
	}
	if rest != "" {
		return Path{}, pathError("%q is not a valid path: unexpected %q.", s, rest)
	}
	return p, nil
}

// String renders p in canonical form; ParsePath(p.String()) equals p.
func (p Path) String() string {
	var b strings.Builder
	if p.Schema != "" {
		b.WriteString(p.Schema)
		b.WriteByte(':')
	}
	b.WriteString(p.Attr)
	if p.Filter != nil {
		b.WriteByte('[')
		b.WriteString(p.Filter.String())
		b.WriteByte(']')
	}
	if p.Sub != "" {
		b.WriteByte('.')
		b.WriteString(p.Sub)
	}
	return b.String()
}

func pathError(format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, InvalidPath, format, args...)
}

// closingBracket returns the index in s, which starts with '[', of the ']'
// that closes it outside any quoted string, or -1.
func closingBracket(s string) int {
	quoted := false
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == ']':
			return i
		}
	}
	return -1
}

// parseAttrPath reads a filter's attrPath, [URN ":"] ATTRNAME ["." ATTRNAME],
// and returns it lower-cased without the core User URN.
func parseAttrPath(w string) (string, bool) {
	prefix, name := "", w
	if hasPrefixFold(w, "urn:") {
		i := strings.LastIndexByte(w, ':')
		if !validURN(w[:i]) {
			return "", false
		}
		if !strings.EqualFold(w[:i], UserSchema) {
			prefix = strings.ToLower(w[:i]) + ":"
		}
		name = w[i+1:]
	}
	n := attrNameLen(name)
	if n == 0 {
		return "", false
	}
	if sub := name[n:]; sub != "" {
		if sub[0] != '.' || attrNameLen(sub[1:]) == 0 || attrNameLen(sub[1:]) != len(sub)-1 {
			return "", false
		}
	}
	return prefix + strings.ToLower(name), true
}

// attrNameLen returns the length of the ATTRNAME that s starts with
// (ALPHA *("-" / "_" / DIGIT / ALPHA), RFC 7643 §2.1), 0 when none.
func attrNameLen(s string) int {
	if s == "" || !isAlpha(s[0]) {
		return 0
	}
	i := 1
	for i < len(s) && (isAlpha(s[i]) || isDigit(s[i]) || s[i] == '-' || s[i] == '_') {
		i++
	}
	return i
}

// validURN reports whether s looks like a schema URN: "urn:" and at least
// two non-empty segments of letters, digits, '.', '-' and '_'.
func validURN(s string) bool {
	segments := strings.Split(s, ":")
	if len(segments) < 3 || !strings.EqualFold(segments[0], "urn") {
		return false
	}
	for _, seg := range segments[1:] {
		if seg == "" {
			return false
		}
		for i := 0; i < len(seg); i++ {
			if c := seg[i]; !isAlpha(c) && !isDigit(c) && c != '.' && c != '-' && c != '_' {
				return false
			}
		}
	}
	return true
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
