package perch

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// validateText records a problem with a required free-text field.
func validateText(p Problems, field, s string, max int) {
	switch n := utf8.RuneCountInString(strings.TrimSpace(s)); {
	case n == 0:
		p.Add(field, "is required")
	case n > max:
		p.Add(field, fmt.Sprintf("must be at most %d characters", max))
	}
}
