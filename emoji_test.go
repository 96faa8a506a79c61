package perch

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTagEmoji(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tag, want string
		ok        bool
	}{
		{"warning", "\u26a0\ufe0f", true},
		{"rotating_light", "🚨", true},
		{"white_check_mark", "✅", true},
		{"heavy_check_mark", "\u2714\ufe0f", true},
		{"x", "❌", true},
		{"fire", "🔥", true},
		{"tada", "🎉", true},
		{"skull", "💀", true},
		{"no_entry", "⛔", true},
		{"loudspeaker", "📢", true},
		{"+1", "👍", true},
		{"-1", "👎", true},
		{"partying_face", "🥳", true},
		{"computer", "💻", true},
		{"rocket", "🚀", true},
		{"bug", "🐛", true},
		{"lock", "🔒", true},
		{"key", "🔑", true},
		{"bell", "🔔", true},
		{"money_with_wings", "💸", true},
		{"moneybag", "💰", true},
		{" Warning ", "\u26a0\ufe0f", true}, // case and spaces forgiven
		{":tada:", "🎉", true},               // the colons of a shortcode
		{"production", "", false},
		{"", "", false},
		{"::", "", false},
		{":", "", false},
	}
	for _, tt := range tests {
		got, ok := TagEmoji(tt.tag)
		if got != tt.want || ok != tt.ok {
			t.Errorf("TagEmoji(%q) = %q, %v; want %q, %v", tt.tag, got, ok, tt.want, tt.ok)
		}
	}
}

// Every entry is a shortcode a tag can be (it passes TagProblem) and one
// emoji: a few code points, never text.
func TestTagEmojiTable(t *testing.T) {
	t.Parallel()
	if len(tagEmoji) < 100 {
		t.Errorf("%d shortcodes; the common ones are about 100 at least", len(tagEmoji))
	}
	for alias, e := range tagEmoji {
		if alias != strings.ToLower(alias) || TagProblem(alias) != "" {
			t.Errorf("%q is not a tag as it would arrive", alias)
		}
		if n := utf8.RuneCountInString(e); n == 0 || n > 3 {
			t.Errorf("%q is %q: %d code points", alias, e, n)
		}
		for _, r := range e {
			if r < 0x2000 {
				t.Errorf("%q is %q, which holds %U, no emoji", alias, e, r)
			}
		}
	}
}
