package senders

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/perch-dev/perch"
)

// Inbound parses a delivery to the generic receiver: a JSON object
// {"tab", "title", "message", "severity", "url"} where only title is
// required, and url, when given, is an absolute http or https address (the
// menu bar and the dashboard open it); and the rich members "priority",
// "tags", "icon", "markdown", "actions", "deliver_at" and "delay"
// (inbound_rich.go).
// Severity defaults to info and tab to "Inbound"; other members are ignored so
// that senders may include data of their own.
//
// Line breaks and tabs in title and tab are folded into single spaces, and
// message keeps them (\r\n becomes \n). It returns a perch.EBADREQUEST error
// naming every field in trouble (in its message, and in Fields) when the body
// is not a JSON object, title is missing or blank, a field is not a string,
// severity is not info, warning or error, a field is too long (title 200,
// message 4000, tab 50 characters), or a field holds any other control
// character, or title or tab a bidirectional override (perch.TextProblem):
// the sender is the user's own script, which can be fixed, and a silently
// mangled notification would hide its bug.
func Inbound(body []byte) (Result, error) {
	// One pass over the body. Member names match without regard to case,
	// as in every parser here (encoding/json's rule).
	var in struct {
		Title, Message, Severity, Tab, URL any
		rich
	}
	if err := perch.DecodeObject(body, &in); err != nil {
		return Result{}, err
	}

	// Collect every problem before answering, so that a sender fixes its
	// payload in one round trip rather than one field at a time.
	var c complaint
	problem := c.add
	// field reads an optional string member; absent and null read as "".
	// It reports false when the member holds another type, or characters it
	// may not (form decides which).
	field := func(name string, v any, form perch.TextForm) (string, bool) {
		switch v := v.(type) {
		case nil:
			return "", true
		case string:
			if form == perch.SingleLine {
				v = strings.Map(foldSpace, v)
			}
			if what := perch.TextProblem(v, form); what != "" {
				problem(name, what)
				return "", false
			}
			return v, true
		}
		problem(name, "must be a string")
		return "", false
	}
	tooLong := func(name, s string, max int) {
		if utf8.RuneCountInString(s) > max {
			problem(name, fmt.Sprintf("must be at most %d characters", max))
		}
	}

	t, ok := field("title", in.Title, perch.SingleLine)
	t = perch.OneLine(t)
	switch {
	case !ok:
	case t == "":
		problem("title", "is required")
	default:
		tooLong("title", t, maxTitle)
	}

	msg, _ := field("message", in.Message, perch.MultiLine)
	msg = strings.TrimSpace(multiLine(msg))
	tooLong("message", msg, maxMessage)

	// Case and stray spaces are forgiven: "Warning" means what it says.
	sev, _ := field("severity", in.Severity, perch.SingleLine)
	sev = strings.ToLower(strings.TrimSpace(sev))
	switch {
	case sev == "":
		sev = perch.SeverityInfo
	case !perch.ValidSeverity(sev):
		problem("severity", "must be info, warning or error")
	}

	tab, _ := field("tab", in.Tab, perch.SingleLine)
	tab = perch.OneLine(tab)
	tooLong("tab", tab, maxTab)
	if tab == "" {
		tab = perch.TabInbound
	}

	link, _ := field("url", in.URL, perch.SingleLine)
	switch link = strings.TrimSpace(link); {
	case link == "":
	case len(link) > perch.MaxURL:
		problem("url", fmt.Sprintf("must be at most %d bytes", perch.MaxURL))
	case !perch.ValidURL(link):
		// Any other scheme (javascript:, file:, data:) is refused: people
		// click the link.
		problem("url", "must be an http:// or https:// address")
	}

	e := perch.Event{
		Tab:      tab,
		Title:    t,
		Message:  msg,
		Severity: sev,
		Source:   perch.SourceInbound,
		URL:      link,
	}
	in.rich.parse(&e, &c)
	if len(c.sentences) > 0 {
		return Result{}, &perch.Error{Code: perch.EBADREQUEST, Message: strings.Join(c.sentences, " "), Fields: c.fields}
	}
	return Result{Events: []perch.Event{e}}, nil
}

// foldSpace turns the whitespace controls a title may carry from a script's
// output (tabs and line breaks) into spaces, which oneLine then folds.
func foldSpace(r rune) rune {
	if r == '\t' || r == '\n' || r == '\r' {
		return ' '
	}
	return r
}
