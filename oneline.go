package perch

import (
	"strings"
	"unicode/utf8"
)

// One-line text for what a sender sends: the notification senders and the
// payment webhooks share these.

// OneLine folds s onto a single line: titles are shown in a menu, where a
// newline or a control character from a sender would break the layout, and
// a bidirectional override would disguise it (CleanText).
func OneLine(s string) string {
	if tidyLine(s) {
		return s // the usual case, with nothing to fold or allocate
	}
	return foldLine(s)
}

// tidyLine reports whether s is printable ASCII with single spaces between
// words and none at the ends, which foldLine would return unchanged.
func tidyLine(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == ' ' && (i == 0 || i == len(s)-1 || s[i-1] == ' ') {
			return false
		}
	}
	return true
}

// foldLine is oneLine's general case.
func foldLine(s string) string {
	return strings.Join(strings.Fields(CleanText(s, SingleLine)), " ")
}

// Clip shortens s to at most n runes, marking the cut with an ellipsis.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return strings.TrimSpace(Truncate(s, n-1)) + "…"
}

// Truncate returns the first n runes of s.
func Truncate(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// FirstNonEmpty returns the first of values that is not blank, trimmed.
func FirstNonEmpty(values ...string) string {
	for _, v := range values {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
