package tray

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/perch-dev/perch"
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

// Text is the title on one line, after the emoji of its tags, cut to fit
// a menu.
func (it ItemView) Text() string {
	title := strings.Join(strings.Fields(it.Title), " ")
	if title == "" {
		title = "(untitled)"
	}
	return clip(EmojiPrefix(it.Tags) + title)
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

// EmojiPrefix is the emoji of the tags that are shortcodes
// (perch.TagEmoji), to put before a title: "🚨⚠️ ", or "" for none.
func EmojiPrefix(tags []string) string {
	var b strings.Builder
	for _, t := range tags {
		if e, ok := perch.TagEmoji(t); ok {
			b.WriteString(e)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return b.String() + " "
}

// TextTags are the tags that are not emoji shortcodes, shown as words.
func TextTags(tags []string) []string {
	var words []string
	for _, t := range tags {
		if _, ok := perch.TagEmoji(t); !ok && strings.TrimSpace(t) != "" {
			words = append(words, strings.TrimSpace(t))
		}
	}
	return words
}

// Label is an action's line in the menu, under its notification: what it
// does and, for an http action run from here, what came of it.
func (a ActionView) Label() string {
	label := strings.Join(strings.Fields(a.Action.Label), " ")
	if label == "" {
		label = a.ID
	}
	const indent = "      "
	o := a.Outcome
	switch {
	case a.Type == perch.ActionView:
		return clip(indent + "↗ " + label)
	case o.Running:
		return clip(indent + "… " + label)
	case o.Err != "":
		return clip(indent + "✗ " + label + ": " + o.Err)
	case o.Status != 0 && o.OK:
		return clip(fmt.Sprintf("%s✓ %s: done (%d)", indent, label, o.Status))
	case o.Status != 0:
		return clip(fmt.Sprintf("%s✗ %s: failed (%d)", indent, label, o.Status))
	}
	return clip(indent + "▶ " + label)
}
