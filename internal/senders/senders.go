// Package senders turns webhook deliveries from the senders Perch understands
// (PagerDuty, GitHub, Datadog and any JSON sender) into perch.Events.
//
// Everything here is a pure function of the request headers and body: no I/O,
// no clock, no HTTP server. Bad input is answered with a *perch.Error of code
// perch.EBADREQUEST whose message can be shown to the sender as it is.
package senders

import (
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

// title prepares sender text for use as a notification title.
func title(s string) string { return perch.Clip(perch.OneLine(s), maxTitle) }

// message joins the non-empty lines of a notification message.
func message(lines ...string) string {
	return perch.Clip(multiLine(strings.Join(nonEmpty(lines...), "\n")), maxMessage)
}

// multiLine keeps line breaks and tabs in s but drops every other control
// character (perch.CleanText): a NUL, for one, cannot be stored in
// PostgreSQL text.
func multiLine(s string) string { return perch.CleanText(s, perch.MultiLine) }

// deliveryID cleans a sender's delivery id for use as a de-duplication key;
// headers may carry any bytes.
func deliveryID(s string) string {
	return perch.Truncate(perch.OneLine(strings.ToValidUTF8(s, "")), 200)
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
