package tray

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxLabel bounds a menu label, in characters: menus do not wrap.
const maxLabel = 60

// Header is the first, inert line of the menu: the count, or why there is
// none.
func (v View) Header() string {
	switch v.Status {
	case SignedOut:
		if v.Detail != "" {
			return clip("Signed out: " + v.Detail)
		}
		return "Signed out"
	case Connecting:
		return "Connecting…"
	case Offline:
		return clip(v.Detail)
	}
	switch {
	case v.Unread == 0:
		return "All read"
	case v.Unread == 1:
		return "1 unread"
	}
	return fmt.Sprintf("%d unread", v.Unread)
}

// Label is a tab's line in the menu: "Incidents (3)", or "Code" when all
// is read.
func (t TabView) Label() string {
	if t.Unread == 0 {
		return t.Name
	}
	return fmt.Sprintf("%s (%d)", t.Name, t.Unread)
}

// Label is a notification's line in a menu without icons: a filled dot for
// unread, a hollow one for read, and Text.
func (it ItemView) Label() string {
	mark := "● "
	if it.Read {
		mark = "○ "
	}
	return mark + it.Text()
}

// Text is the title on one line, cut to fit a menu.
func (it ItemView) Text() string {
	title := strings.Join(strings.Fields(it.Title), " ")
	if title == "" {
		return "(untitled)"
	}
	return clip(title)
}

// lowerFirst is s with its first letter in lower case, to go on after
// other words: "· can't reach …".
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}

// clip cuts s to maxLabel characters, ending in "…" when it had more.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= maxLabel {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:maxLabel-1])) + "…"
}
