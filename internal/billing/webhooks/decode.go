// Package webhooks reads the payment providers' webhooks: the Stripe and
// Paddle events Perch applies to an organisation's subscription
// (StripeEvent, PaddleEvent, both into a perch.BillingEvent) and their
// signatures (VerifyStripeSignature, VerifyPaddleSignature).
//
// Everything here is a pure function of the header and body: no I/O and no
// clock of its own. Bad input is a *perch.Error of code perch.EBADREQUEST
// whose message can be shown to the provider as it is. Talking to the
// providers (checkout, the customer portal) is the parent package's job.
package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/perch-dev/perch"
)

// The decoding and text helpers below are the ones internal/senders uses for
// the notification senders' bodies, kept here too so that the payment
// parsers depend on nothing but the domain package.

// badRequest is a perch.EBADREQUEST error whose message the provider is shown.
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

// foldLine is oneLine's general case.
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

// firstNonEmpty returns the first of values that is not blank, trimmed.
func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
