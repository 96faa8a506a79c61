package senders

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/perch-dev/perch"
)

// Inbound parses a delivery to the generic receiver: a JSON object
// {"tab", "title", "message", "severity"} where only title is required.
// Severity defaults to info and tab to "Inbound"; other members are ignored so
// that senders may include data of their own.
//
// It returns a perch.EBADREQUEST error naming every field in trouble when the
// body is not a JSON object, title is missing or blank, a field is not a
// string, severity is not info, warning or error, or a field is too long
// (title 200, message 4000, tab 50 characters).
func Inbound(body []byte) (Result, error) {
	// One pass over the body. Member names match without regard to case,
	// as in every parser here (encoding/json's rule).
	var in struct {
		Title, Message, Severity, Tab any
	}
	if err := decodeObject(body, &in); err != nil {
		return Result{}, err
	}

	// Collect every problem before answering, so that a sender fixes its
	// payload in one round trip rather than one field at a time.
	var problems []string
	// field reads an optional string member; absent and null read as "".
	// It reports false when the member holds another type.
	field := func(name string, v any) (string, bool) {
		switch v := v.(type) {
		case nil:
			return "", true
		case string:
			return v, true
		}
		problems = append(problems, fmt.Sprintf("%s must be a string.", name))
		return "", false
	}
	tooLong := func(name, s string, max int) {
		if utf8.RuneCountInString(s) > max {
			problems = append(problems, fmt.Sprintf("%s must be at most %d characters.", name, max))
		}
	}

	t, ok := field("title", in.Title)
	t = oneLine(t)
	switch {
	case !ok:
	case t == "":
		problems = append(problems, "title is required.")
	default:
		tooLong("title", t, maxTitle)
	}

	msg, _ := field("message", in.Message)
	msg = strings.TrimSpace(multiLine(msg))
	tooLong("message", msg, maxMessage)

	// Case and stray spaces are forgiven: "Warning" means what it says.
	sev, _ := field("severity", in.Severity)
	sev = strings.ToLower(strings.TrimSpace(sev))
	switch {
	case sev == "":
		sev = perch.SeverityInfo
	case !perch.ValidSeverity(sev):
		problems = append(problems, "severity must be info, warning or error.")
	}

	tab, _ := field("tab", in.Tab)
	tab = oneLine(tab)
	tooLong("tab", tab, maxTab)
	if tab == "" {
		tab = perch.TabInbound
	}

	if len(problems) > 0 {
		return Result{}, badRequest("%s", strings.Join(problems, " "))
	}
	return Result{Events: []perch.Event{{
		Tab:      tab,
		Title:    t,
		Message:  msg,
		Severity: sev,
		Source:   perch.SourceInbound,
	}}}, nil
}
