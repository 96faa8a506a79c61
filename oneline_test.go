package perch

import "testing"

func TestClip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"one two three", 8, "one two…"},
		{"ééééé", 3, "éé…"},
		{"日本語のテキスト", 4, "日本語…"},
	}
	for _, tt := range tests {
		if got := Clip(tt.in, tt.n); got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"  plain  ":               "plain",
		"two\nlines":              "two lines",
		"tabs\tand\r\nreturns":    "tabs and returns",
		"nul\x00byte":             "nul byte",
		"many     spaces\u00a0nb": "many spaces nb",
	}
	for in, want := range tests {
		if got := OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzOneLine checks that OneLine's shortcut for tidy text agrees with the
// general folding.
func FuzzOneLine(f *testing.F) {
	for _, s := range []string{"", " ", "a", "a b", "a  b", " a", "a ", "a\tb", "a\nb", "é", "a\u00a0b", "a\x7fb", "Deploy finished"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := OneLine(s), foldLine(s); got != want {
			t.Fatalf("OneLine(%q) = %q, want %q", s, got, want)
		}
	})
}
