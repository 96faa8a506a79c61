package perch

import (
	"errors"
	"strings"
	"testing"
)

func TestTextProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		s             string
		single, multi string // the problem in each form, "" for none
	}{
		{"empty", "", "", ""},
		{"printable ASCII", "Ops team (EU) #1 ~ ok", "", ""},
		{"letters beyond ASCII", "Zoë Ångström 日本 🚀", "", ""},
		{"right-to-left script", "שלום עולם", "", ""},
		{"left-to-right and right-to-left marks", "abc\u200e\u200f\u061c", "", ""},
		{"no-break and zero-width space", "a\u00a0b\u200bc", "", ""},
		{"NUL", "a\x00b", problemControl, problemControlL},
		{"BEL", "a\ab", problemControl, problemControlL},
		{"escape", "a\x1b[31mb", problemControl, problemControlL},
		{"DEL", "a\x7fb", problemControl, problemControlL},
		{"C1: next line", "a\u0085b", problemControl, problemControlL},
		{"C1: first", "a\u0080b", problemControl, problemControlL},
		{"C1: last", "a\u009fb", problemControl, problemControlL},
		{"newline", "a\nb", problemControl, ""},
		{"tab", "a\tb", problemControl, ""},
		{"CR LF", "a\r\nb", problemControl, ""},
		{"lone CR", "a\rb", problemControl, problemControlL},
		{"CR at the end", "a\r", problemControl, problemControlL},
		{"vertical tab", "a\vb", problemControl, problemControlL},
		{"form feed", "a\fb", problemControl, problemControlL},
		{"right-to-left override", "admin\u202egnp.exe", problemBidi, ""},
		{"left-to-right embedding", "\u202aabc", problemBidi, ""},
		{"pop directional formatting", "abc\u202c", problemBidi, ""},
		{"first strong isolate", "a\u2068b", problemBidi, ""},
		{"pop directional isolate", "a\u2069b", problemBidi, ""},
		{"invalid UTF-8", "a\xffb", problemUTF8, problemUTF8},
		{"truncated UTF-8", "a\xc3", problemUTF8, problemUTF8},
		{"encoded surrogate", "a\xed\xa0\x80b", problemUTF8, problemUTF8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TextProblem(tt.s, SingleLine); got != tt.single {
				t.Errorf("single line: %q", got)
			}
			if got := TextProblem(tt.s, MultiLine); got != tt.multi {
				t.Errorf("multi-line: %q", got)
			}
			// What CleanText returns is always acceptable, and text that is
			// acceptable comes back unchanged.
			for _, form := range []TextForm{SingleLine, MultiLine} {
				clean := CleanText(tt.s, form)
				if p := TextProblem(clean, form); p != "" {
					t.Errorf("form %d: CleanText(%q) = %q, which %s", form, tt.s, clean, p)
				}
				if TextProblem(tt.s, form) == "" && clean != tt.s && (form == SingleLine || clean != strings.ReplaceAll(tt.s, "\r\n", "\n")) {
					t.Errorf("form %d: CleanText changed acceptable %q to %q", form, tt.s, clean)
				}
			}
		})
	}
}

func TestCleanText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s, single, multi string
	}{
		{"a\x00b", "a b", "ab"},
		{"line 1\r\nline 2\x07", "line 1  line 2 ", "line 1\nline 2"},
		{"\u202eevil\u202c name\tx", "evil name x", "\u202eevil\u202c name\tx"},
		{"bad \xff byte\u0085", "bad \ufffd byte ", "bad \ufffd byte"},
		{"windows\r\nlines\r\n", "windows  lines  ", "windows\nlines\n"},
	}
	for _, tt := range tests {
		if got := CleanText(tt.s, SingleLine); got != tt.single {
			t.Errorf("CleanText(%q, SingleLine) = %q, want %q", tt.s, got, tt.single)
		}
		if got := CleanText(tt.s, MultiLine); got != tt.multi {
			t.Errorf("CleanText(%q, MultiLine) = %q, want %q", tt.s, got, tt.multi)
		}
	}
}

// TestFieldsRefuseControlCharacters checks that every validation of text a
// person enters applies the rule, naming the field.
func TestFieldsRefuseControlCharacters(t *testing.T) {
	t.Parallel()
	const good = "correct horse battery"
	for _, c := range []string{"\x00", "\a", "\x7f", "\u0085", "\xff"} {
		bad := "ab" + c + "cd"
		tests := []struct {
			name, field string
			err         error
		}{
			{"registration: name", "name", (&NewUser{Name: bad, Email: "ann@example.com", Password: good}).Validate()},
			{"registration: email", "email", (&NewUser{Name: "Ann", Email: "ann" + c + "@example.com", Password: good}).Validate()},
			{"registration: password", "password", (&NewUser{Name: "Ann", Email: "ann@example.com", Password: good + c}).Validate()},
			{"team name", "name", problemsOf(func(p Problems) { ValidateTeam(p, bad, "") })},
			{"team description", "description", problemsOf(func(p Problems) { ValidateTeam(p, "Ops", "line\n"+bad) })},
			{"organisation name", "name", problemsOf(func(p Problems) { ValidateOrgName(p, bad) })},
			{"announcement title", "title", (&Announcement{Title: bad, Body: "b"}).Validate()},
			{"announcement body", "body", (&Announcement{Title: "t", Body: "line\n" + bad}).Validate()},
		}
		for _, tt := range tests {
			e, ok := errors.AsType[*Error](tt.err)
			if !ok || e.Code != EVALIDATION || e.Fields[tt.field] == "" || len(e.Fields) != 1 {
				t.Errorf("%q in %s: got %v, want validation_failed naming only %s", c, tt.name, tt.err, tt.field)
			}
		}
		_, err := ValidateTokenLabel(bad)
		if e, ok := errors.AsType[*Error](err); !ok || e.Code != EBADREQUEST || e.Fields["label"] == "" {
			t.Errorf("%q in a token label: got %v, want bad_request naming label", c, err)
		}
	}
	// Every problem at once, as always.
	err := (&NewUser{Name: "a\x00", Email: "b\x00@example.com", Password: good + "\x00"}).Validate()
	if e, ok := errors.AsType[*Error](err); !ok || len(e.Fields) != 3 {
		t.Errorf("three bad fields: got %v", err)
	}
}

func problemsOf(fn func(Problems)) error {
	p := Problems{}
	fn(p)
	return p.Err()
}
