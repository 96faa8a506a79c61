package scim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on a filter, so that a query stays cheap to parse and to run.
const (
	maxFilterLen   = 1024 // bytes
	maxComparisons = 10
)

// unsupported is the detail for every operator and construct beyond `eq` and `and`.
const unsupported = `Perch supports only "eq" comparisons joined by "and"`

// Comparison is `attrPath eq value`.
type Comparison struct {
	// Attr is the attribute path, lower-cased, the core User schema URN
	// prefix removed: "username", "externalid", "emails.value", "active",
	// "type", "primary" ... Other schema URNs are kept, lower-cased.
	Attr string
	// Value is a string, a bool, a float64 or nil (JSON null).
	Value any
}

// Filter is comparisons joined by `and`.
type Filter []Comparison

// ParseFilter parses s, a filter of RFC 7644 §3.4.2.2 in the subset Perch
// serves: `attrPath eq compValue` joined by `and`, operators and `and` in any
// case, tokens separated by any amount of white space. compValue is a JSON
// string, true, false, null or a JSON number. attrPath is ATTRNAME
// ("." subAttr)?, optionally prefixed by a schema URN: the core User URN is
// removed, others are kept lower-cased in Attr.
//
// Anything else is an *Error 400 InvalidFilter whose detail says what was
// wrong and where: other operators, `or`, `not`, parentheses, brackets, an
// empty filter, trailing text, unterminated strings, a filter longer than
// 1024 bytes or of more than 10 comparisons.
func ParseFilter(s string) (Filter, error) {
	f, err := parseFilter(s)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// parseFilter is ParseFilter with its error as an *Error.
func parseFilter(s string) (Filter, *Error) {
	if len(s) > maxFilterLen {
		return nil, filterError("The filter is %d bytes long; Perch takes at most %d.", len(s), maxFilterLen)
	}
	if !utf8.ValidString(s) {
		return nil, filterError("The filter is not valid UTF-8.")
	}
	p := filterParser{s: s}
	return p.filter()
}

// String renders f in canonical form, e.g. `username eq "a@b.c" and active eq
// true`; ParseFilter(f.String()) equals f.
func (f Filter) String() string {
	var b strings.Builder
	for i, c := range f {
		if i > 0 {
			b.WriteString(" and ")
		}
		b.WriteString(c.Attr)
		b.WriteString(" eq ")
		b.WriteString(formatValue(c.Value))
	}
	return b.String()
}

// formatValue renders a comparison value as the JSON literal it was parsed from.
func formatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return quote(v)
	default:
		return quote(fmt.Sprint(v))
	}
}

// quote is s as a JSON string, without the HTML escapes of json.Marshal.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

func filterError(format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, InvalidFilter, format, args...)
}

// filterParser reads a filter left to right; pos is a byte offset into s.
type filterParser struct {
	s   string
	pos int
}

// at names a byte offset for people: the 1-based character position.
func (p *filterParser) at(pos int) string {
	return fmt.Sprintf("at character %d", utf8.RuneCountInString(p.s[:pos])+1)
}

func (p *filterParser) eof() bool { return p.pos >= len(p.s) }

// skipSpace skips white space and reports whether there was any.
func (p *filterParser) skipSpace() bool {
	start := p.pos
	for p.pos < len(p.s) && isSpace(p.s[p.pos]) {
		p.pos++
	}
	return p.pos > start
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isDelim reports the bytes that end a word besides white space.
func isDelim(c byte) bool { return strings.IndexByte(`()[]"`, c) >= 0 }

// word reads the longest run of bytes that are neither white space nor delimiters.
func (p *filterParser) word() string {
	start := p.pos
	for p.pos < len(p.s) && !isSpace(p.s[p.pos]) && !isDelim(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// gap skips the white space that must separate the token just read, named
// by after, from the next one, which must be what next says.
func (p *filterParser) gap(after, next string) *Error {
	spaced := p.skipSpace()
	switch {
	case p.eof():
		return filterError("The filter ends after %s; %s must follow it.", after, next)
	case !spaced:
		return p.unexpected("after " + after)
	}
	return nil
}

func (p *filterParser) filter() (Filter, *Error) {
	p.skipSpace()
	if p.eof() {
		return nil, filterError("The filter is empty.")
	}
	var f Filter
	for {
		c, err := p.comparison()
		if err != nil {
			return nil, err
		}
		f = append(f, c)
		spaced := p.skipSpace()
		if p.eof() {
			return f, nil
		}
		if !spaced {
			return nil, p.unexpected("after the value")
		}
		start := p.pos
		w := p.word()
		switch strings.ToLower(w) {
		case "and":
		case "or":
			return nil, filterError(`%s; found %q %s.`, unsupported, w, p.at(start))
		case "":
			return nil, p.unexpected(`where "and" was expected`)
		default:
			return nil, filterError(`Expected "and" %s, found %q.`, p.at(start), w)
		}
		if len(f) == maxComparisons {
			return nil, filterError("The filter has more than %d comparisons.", maxComparisons)
		}
		if err := p.gap(`"and"`, "a comparison"); err != nil {
			return nil, err
		}
	}
}

// comparison reads `attrPath eq compValue`.
func (p *filterParser) comparison() (Comparison, *Error) {
	start := p.pos
	w := p.word()
	if w == "" {
		return Comparison{}, p.unexpected("where an attribute name was expected")
	}
	if strings.EqualFold(w, "not") {
		return Comparison{}, filterError(`%s; found "not" %s.`, unsupported, p.at(start))
	}
	attr, ok := parseAttrPath(w)
	if !ok {
		return Comparison{}, filterError(`%q %s is not an attribute name.`, w, p.at(start))
	}
	if err := p.gap(quote(w), `"eq" and a value`); err != nil {
		return Comparison{}, err
	}
	opAt := p.pos
	op := p.word()
	switch strings.ToLower(op) {
	case "eq":
	case "ne", "co", "sw", "ew", "pr", "gt", "ge", "lt", "le":
		return Comparison{}, filterError(`%s; found %q %s.`, unsupported, op, p.at(opAt))
	case "":
		return Comparison{}, p.unexpected(`where "eq" was expected`)
	default:
		return Comparison{}, filterError(`Expected "eq" %s, found %q.`, p.at(opAt), op)
	}
	if err := p.gap(`"eq"`, "a value"); err != nil {
		return Comparison{}, err
	}
	v, err := p.value()
	if err != nil {
		return Comparison{}, err
	}
	return Comparison{Attr: attr, Value: v}, nil
}

// value reads a JSON string, true, false, null or a JSON number.
func (p *filterParser) value() (any, *Error) {
	start := p.pos
	if p.s[p.pos] == '"' {
		s, err := p.str()
		return s, err
	}
	w := p.word()
	switch strings.ToLower(w) {
	case "":
		return nil, p.unexpected("where a value was expected")
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	if !isNumber(w) {
		return nil, filterError(`%q %s is not a value: use a string in double quotes, true, false, null or a number.`, w, p.at(start))
	}
	n, err := strconv.ParseFloat(w, 64)
	if err != nil {
		return nil, filterError(`The number %q %s is out of range.`, w, p.at(start))
	}
	return n, nil
}

// str reads a JSON string starting at the opening quote.
func (p *filterParser) str() (string, *Error) {
	start := p.pos
	i := start + 1
	for ; i < len(p.s) && p.s[i] != '"'; i++ {
		if p.s[i] == '\\' {
			i++
		}
	}
	if i >= len(p.s) {
		return "", filterError("The string that starts %s is not terminated.", p.at(start))
	}
	p.pos = i + 1
	var s string
	if err := json.Unmarshal([]byte(p.s[start:p.pos]), &s); err != nil {
		return "", filterError("The string %s has a bad escape or a control character.", p.at(start))
	}
	return s, nil
}

// unexpected describes the byte at p.pos, or the end of the filter.
func (p *filterParser) unexpected(where string) *Error {
	if p.eof() {
		return filterError("The filter ends %s.", where)
	}
	c := p.s[p.pos]
	switch c {
	case '(', ')':
		return filterError("%s; found a parenthesis %s.", unsupported, p.at(p.pos))
	case '[', ']':
		return filterError("%s; found a bracket %s.", unsupported, p.at(p.pos))
	}
	r, _ := utf8.DecodeRuneInString(p.s[p.pos:])
	return filterError("Unexpected %q %s %s.", r, p.at(p.pos), where)
}

// isNumber reports whether w is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isNumber(w string) bool {
	i := 0
	digits := func() int {
		start := i
		for i < len(w) && w[i] >= '0' && w[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(w) && w[i] == '-' {
		i++
	}
	if i < len(w) && w[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(w) && w[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(w) && (w[i] == 'e' || w[i] == 'E') {
		i++
		if i < len(w) && (w[i] == '+' || w[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(w)
}
