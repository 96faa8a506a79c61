package perch

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TextForm says what a field of text may hold besides printable characters.
type TextForm int

const (
	// SingleLine is a name, an e-mail address, a label or a title: no
	// control character at all, and no bidirectional embedding, override or
	// isolate character (U+202A–U+202E, U+2066–U+2069), which would reorder
	// the text shown after it in a list of names or a menu.
	SingleLine TextForm = iota
	// MultiLine is a description, an announcement's body or a message: line
	// breaks (\n, or \r\n) and tabs are allowed, and so are bidirectional
	// characters, which right-to-left prose may need and which end with the
	// paragraph.
	MultiLine
)

// Problems with text, as field messages.
const (
	problemUTF8     = "must be valid UTF-8"
	problemControl  = "must not contain control characters"
	problemControlL = "must not contain control characters other than line breaks and tabs"
	problemBidi     = "must not contain bidirectional override or isolate characters"
)

// TextProblem returns what is wrong with s as text a person entered, or ""
// when nothing is. Text must be valid UTF-8 and hold no control character
// (Unicode category Cc: NUL and the other C0 controls, DEL, and the C1
// controls U+0080–U+009F) beyond what its form allows: PostgreSQL cannot
// store a NUL, and the others cannot be typed, only smuggled in to break or
// disguise what other people are shown.
func TextProblem(s string, form TextForm) string {
	if printableASCII(s) {
		return ""
	}
	if !utf8.ValidString(s) {
		return problemUTF8
	}
	for i, r := range s {
		switch {
		case form == MultiLine && (r == '\n' || r == '\t' || r == '\r' && strings.HasPrefix(s[i+1:], "\n")):
		case unicode.IsControl(r):
			if form == MultiLine {
				return problemControlL
			}
			return problemControl
		case form == SingleLine && isBidiControl(r):
			return problemBidi
		}
	}
	return ""
}

// CheckText records under field what TextProblem finds wrong with s.
func CheckText(p Problems, field, s string, form TextForm) {
	if problem := TextProblem(s, form); problem != "" {
		p.Add(field, problem)
	}
}

// CleanText returns s with what TextProblem would refuse taken out, for text
// that no person can be asked to fix, such as a third party's webhook:
// invalid UTF-8 becomes U+FFFD; in SingleLine text every control character
// becomes a space and bidirectional controls are dropped; in MultiLine text
// \r\n becomes \n and control characters other than \n and \t are dropped.
// Text with nothing to change comes back as it is, without allocating.
func CleanText(s string, form TextForm) string {
	if TextProblem(s, form) == "" && (form == SingleLine || !strings.Contains(s, "\r")) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if form == MultiLine {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	return strings.Map(func(r rune) rune {
		switch {
		case form == MultiLine && (r == '\n' || r == '\t'):
			return r
		case unicode.IsControl(r) && form == SingleLine:
			return ' '
		case unicode.IsControl(r), form == SingleLine && isBidiControl(r):
			return -1
		}
		return r
	}, s)
}

// isBidiControl reports whether r is a bidirectional embedding, override or
// isolate character: the ones "Trojan Source" attacks use. The marks U+200E,
// U+200F and U+061C reorder nothing beyond themselves and are allowed.
func isBidiControl(r rune) bool {
	return r >= '\u202A' && r <= '\u202E' || r >= '\u2066' && r <= '\u2069'
}

// printableASCII reports whether s is nothing but printable ASCII, the
// usual case, which needs no closer look.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// validateText records a problem with a required free-text field: blank,
// longer than max characters once trimmed, or holding what form refuses.
func validateText(p Problems, field, s string, max int, form TextForm) {
	s = strings.TrimSpace(s)
	switch n := utf8.RuneCountInString(s); {
	case n == 0:
		p.Add(field, "is required")
	case n > max:
		p.Add(field, fmt.Sprintf("must be at most %d characters", max))
	default:
		CheckText(p, field, s, form)
	}
}
