package web

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/perch-dev/perch"
)

// passwordRule is how long a new password must be (perch.ValidatePassword).
type passwordRule struct{ Min, Max int }

// Hint says the rule to a person.
func (p passwordRule) Hint() string {
	return "At least " + strconv.Itoa(p.Min) + " characters (at most " + strconv.Itoa(p.Max) + ")."
}

// funcs are the helpers templates may call.
var funcs = template.FuncMap{
	// passwordRule is the domain's password rule, for the forms' minlength,
	// maxlength and hint: the one place the pages learn it from.
	"passwordRule": func() passwordRule { return passwordRule{Min: perch.MinPasswordLen, Max: perch.MaxPasswordLen} },
	// providerTitle names a sign-in provider: GitHub, Google.
	"providerTitle": perch.ProviderTitle,
	// sourceName names a notification's source or a token's sender as
	// people know it: GitHub, not the contract's "code-host".
	"sourceName": perch.SourceTitle,
	// initial is the avatar letter of a name.
	"initial": func(name string) string {
		r, _ := utf8.DecodeRuneInString(strings.TrimSpace(name))
		if r == utf8.RuneError {
			return "?"
		}
		return string(unicode.ToUpper(r))
	},
	// date shows a time as a <time> element: the browser (app.js) shows it
	// in the reader's time zone with the relative time on hover; without
	// the script it reads in UTC. nil is "never".
	"date": func(t any) template.HTML {
		var v time.Time
		switch t := t.(type) {
		case time.Time:
			v = t
		case *time.Time:
			if t == nil {
				return "never"
			}
			v = *t
		default:
			return ""
		}
		v = v.UTC()
		// Both layouts yield only digits, letters, spaces, ':', ',', '-'
		// and '+': nothing to escape.
		return template.HTML(`<time datetime="` + v.Format(time.RFC3339) + `">` + v.Format("2 Jan 2006, 15:04 UTC") + `</time>`)
	},
	// rfc3339 is a time for machines (a <time datetime> attribute).
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	// value is what was typed into a form field, to show it again.
	"value": func(v view, name string) string { return v.Form.Get(name) },
	// problem is what is wrong with a field, if anything.
	"problem": func(v view, name string) string { return v.Fields[name] },
	// plural counts a thing in words: "1 seat", "3 seats".
	"plural": plural,
	"add":    func(a, b int) int { return a + b },
	// stateText is a delivery's or step's state in words: "given up",
	// not the API's "given_up".
	"stateText": func(s string) string { return strings.ReplaceAll(s, "_", " ") },
	// thousands writes a count with commas: 12,345.
	"thousands": func(v any) string {
		switch v := v.(type) {
		case int:
			return thousands(int64(v))
		case int64:
			return thousands(v)
		}
		return fmt.Sprint(v)
	},
	// money writes an amount of US dollars: $1,234.50.
	"money": func(v float64) string {
		cents := int64(math.Round(v * 100))
		s := "$" + thousands(cents/100)
		if c := cents % 100; c != 0 {
			s += fmt.Sprintf(".%02d", c)
		}
		return s
	},
	// breakdown is a map of counts as rows, by name.
	"breakdown": breakdown,
	// dotted lets a dotted name (an audit action) break after its dots,
	// and nowhere else.
	"dotted": func(s string) template.HTML {
		parts := strings.Split(s, ".")
		for i, p := range parts {
			parts[i] = template.HTMLEscapeString(p)
		}
		return template.HTML(strings.Join(parts, ".<wbr>"))
	},
	// changes are an audit entry's changes, one line each.
	"changes": auditChanges,
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	// snoozeState is what the snooze control (layout.html) shows: the
	// snooze while it lasts (nil: none), and the page to come back to.
	"snoozeState": func(until *time.Time, next string) snoozeControl { return snoozeControl{Until: until, Next: next} },
	// tagEmoji is perch.TagEmoji's table, for the feed's script.
	"tagEmoji": perch.TagEmojis,
	"price": func(p float64) string {
		if p == 0 {
			return "Free"
		}
		return "$" + strings.TrimSuffix(strconv.FormatFloat(p, 'f', 2, 64), ".00")
	},
}

// snoozeControl is the snooze control's data.
type snoozeControl struct {
	Until *time.Time
	Next  string
}
