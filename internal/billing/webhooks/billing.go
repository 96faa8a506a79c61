package webhooks

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/perch-dev/perch"
)

// What the payment providers' parsers (stripe.go, paddle.go) share: the
// limits on the ids they take and the times they read (docs/DESIGN.md, Billing).

// maxBillingID is the longest id, in bytes, Perch keeps from a payment
// provider. Real ids are a few dozen bytes; anything longer is not one.
const maxBillingID = 255

// maxUnix is the last second of the year 9999: a later time cannot be
// written in RFC 3339, stored or shown.
const maxUnix = 253402300799

// billingIDs checks ids taken from a payment provider's event, given as
// pairs of the member's path and its value: each at most maxBillingID bytes
// of printable text, since they become keys in the database and lines in
// the audit log. An empty value is allowed; whether it is required is the
// caller's business.
func billingIDs(pathsAndValues ...string) error {
	for i := 0; i+1 < len(pathsAndValues); i += 2 {
		path, v := pathsAndValues[i], pathsAndValues[i+1]
		if len(v) > maxBillingID {
			return badRequest("%s is %d bytes long; an id is at most %d.", path, len(v), maxBillingID)
		}
		if strings.ContainsFunc(v, unicode.IsControl) {
			return badRequest("%s holds a control character; an id is printable text.", path)
		}
	}
	return nil
}

// unixTime reads a Unix time in seconds, as Stripe sends them; nil or zero
// means the event gives no such time.
func unixTime(path string, v *int64) (*time.Time, error) {
	if v == nil || *v == 0 {
		return nil, nil
	}
	if *v < 0 || *v > maxUnix {
		return nil, badRequest("%s must be a Unix time between 1970 and 9999, not %d.", path, *v)
	}
	t := time.Unix(*v, 0).UTC()
	return &t, nil
}

// maxSeats bounds a subscription quantity Perch takes as its seats: above
// any plan's seat cap by far, and far from overflowing a database integer.
const maxSeats = 1_000_000

// seats reads a subscription's quantity as the seats it bills: nil when
// the event gives none; a quantity below 0 or above maxSeats is refused.
func seats(path string, q *int) (*int, error) {
	if q == nil {
		return nil, nil
	}
	if *q < 0 || *q > maxSeats {
		return nil, badRequest("%s must be a quantity from 0 to %d, not %d.", path, maxSeats, *q)
	}
	n := *q
	return &n, nil
}

// rfc3339Time reads an RFC 3339 time, as Paddle sends them (with or without
// fractional seconds, in any offset), from 1970 on; "" means the event gives
// no such time.
func rfc3339Time(path, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return nil, badRequest("%s must be an RFC 3339 time such as 2024-04-12T10:18:47.635628Z, not %q.", path, perch.Clip(perch.OneLine(s), 40))
	}
	if t.Unix() < 0 {
		// The zero time would read as "no event applied yet" downstream.
		return nil, badRequest("%s must be a time from 1970 on, not %s.", path, t.Format(time.RFC3339))
	}
	t = t.UTC()
	return &t, nil
}

// jsonObject reports whether raw, a member kept undecoded, holds a JSON
// object (and not null, a string or an array).
func jsonObject(raw json.RawMessage) bool {
	b := strings.TrimSpace(string(raw))
	return b != "" && b[0] == '{'
}

// jsonKindOf names the kind of the JSON value raw starts with, in the words
// encoding/json uses in an UnmarshalTypeError, for shapeError.
func jsonKindOf(raw []byte) string {
	b := strings.TrimSpace(string(raw))
	if b == "" {
		return ""
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// decodeMember decodes raw, the member at path of a provider's event, into
// v, explaining a failure by the member's full path.
func decodeMember(raw json.RawMessage, path string, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return perch.ShapeError(err, path)
	}
	return nil
}

// located reports whether an event names something the server can find the
// organisation by: the organisation itself, the provider's customer or the
// subscription. One that names none of them cannot be applied, so it is
// ignored rather than refused, which would only make the provider retry.
func located(ev perch.BillingEvent) bool {
	return ev.OrgID != "" || ev.CustomerID != "" || ev.SubscriptionID != ""
}

// stringType is the Go type a JSON string decodes into, for type errors
// reported by hand.
var stringType = reflect.TypeFor[string]()
