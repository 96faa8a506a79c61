// Package senders turns webhook deliveries from the senders Perch understands
// (PagerDuty, GitHub, Datadog and any JSON sender) into perch.Events.
//
// Everything here is a pure function of the request headers and body: no I/O,
// no clock, no HTTP server. Bad input is answered with a *perch.Error of code
// perch.EBADREQUEST whose message can be shown to the sender as it is.
package senders

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/perch-dev/perch"
)

// Result is what a parser makes of one delivery.
type Result struct {
	// Events holds one event per notification to create; a PagerDuty V2
	// delivery may carry several messages and so several events.
	Events []perch.Event
	// Ignored, when not empty, says why a delivery that was understood is
	// deliberately dropped, e.g. `github event "star" is not subscribed`. The
	// receiver still answers 200 so that the sender does not retry.
	Ignored string
	// Payload is the JSON document the events came from, when it is not
	// the body itself (GitHub's form-encoded deliveries carry it in a
	// field): workflows read it as `payload`.
	Payload []byte
}

// Limits on text taken from senders. Inbound rejects longer values; the other
// senders are clipped instead, since their payloads are not ours to fix.
const (
	maxTitle   = 200
	maxMessage = 4000
	maxTab     = 50
)

func ignored(format string, args ...any) Result {
	return Result{Ignored: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return perch.Errorf(perch.EBADREQUEST, format, args...)
}

// decodeObject unmarshals a JSON object into v and turns every failure into a
// bad request that tells the sender what is wrong with the body.
func decodeObject(body []byte, v any) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 {
		return badRequest("The body is empty; a JSON object is required.")
	}
	if b[0] != '{' {
		if !json.Valid(b) {
			return notJSON()
		}
		return badRequest("The body must be a JSON object.")
	}
	// Unmarshal checks that the whole body is valid JSON before it decodes
	// any of it: a scan of our own would only repeat that.
	if err := json.Unmarshal(b, v); err != nil {
		if _, ok := errors.AsType[*json.SyntaxError](err); ok {
			return notJSON()
		}
		return shapeError(err, "")
	}
	return nil
}

func notJSON() error { return badRequest("The body is not valid JSON.") }

// shapeError explains a failure to decode valid JSON into the member at path
// ("" for the body): a member of the wrong type, named by its full path.
func shapeError(err error, path string) error {
	te, ok := errors.AsType[*json.UnmarshalTypeError](err)
	if !ok {
		return badRequest("The body does not have the expected shape.")
	}
	field := strings.Trim(path+"."+te.Field, ".")
	if field == "" {
		field = "The body"
	}
	return badRequest("%s must be %s, not %s.", field, perch.JSONKind(te.Type), article(te.Value))
}

// article turns the JSON value kinds reported by encoding/json ("string",
// "number 1.5", "object", ...) into words for a sentence.
func article(value string) string {
	kind, literal, _ := strings.Cut(value, " ")
	if kind == "number" && literal != "" {
		return clip(literal, 30) // "not 1.5" says more than "not a number"
	}
	switch kind {
	case "object", "array":
		return "an " + kind
	case "bool":
		return "true or false"
	case "":
		return "this value"
	}
	return "a " + kind
}

// oneLine folds s onto a single line: titles are shown in a menu, where a
// newline or a control character from a sender would break the layout, and
// a bidirectional override would disguise it (perch.CleanText).
func oneLine(s string) string {
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

func foldLine(s string) string {
	return strings.Join(strings.Fields(perch.CleanText(s, perch.SingleLine)), " ")
}

// clip shortens s to at most n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return strings.TrimSpace(truncate(s, n-1)) + "…"
}

// truncate returns the first n runes of s.
func truncate(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// title prepares sender text for use as a notification title.
func title(s string) string { return clip(oneLine(s), maxTitle) }

// message joins the non-empty lines of a notification message.
func message(lines ...string) string {
	return clip(multiLine(strings.Join(nonEmpty(lines...), "\n")), maxMessage)
}

// multiLine keeps line breaks and tabs in s but drops every other control
// character (perch.CleanText): a NUL, for one, cannot be stored in
// PostgreSQL text.
func multiLine(s string) string { return perch.CleanText(s, perch.MultiLine) }

// deliveryID cleans a sender's delivery id for use as a de-duplication key;
// headers may carry any bytes.
func deliveryID(s string) string {
	return truncate(oneLine(strings.ToValidUTF8(s, "")), 200)
}

// webURL returns s, trimmed, when perch.ValidURL takes it, and ""
// otherwise: the senders' links are not ours to fix, so one that is not an
// absolute http or https URL of at most perch.MaxURL bytes is dropped (a
// longer one is not cut), never refused with the delivery.
func webURL(s string) string {
	if s = strings.TrimSpace(s); perch.ValidURL(s) {
		return s
	}
	return ""
}

// firstNonEmpty returns the first of values that is not blank.
func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// capitalize upper-cases the first letter of s.
func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// nonEmpty returns the values that are not blank.
func nonEmpty(values ...string) []string {
	var kept []string
	for _, v := range values {
		if v = strings.TrimSpace(v); v != "" {
			kept = append(kept, v)
		}
	}
	return kept
}
