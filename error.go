package perch

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Error codes. They are the wire values of the error shape and survive the HTTP
// round trip: the server maps each to a status, and the client maps the status
// body back to the same code.
const (
	EBADREQUEST   = "bad_request"        // 400: the request cannot be read
	EUNAUTHORIZED = "unauthorized"       // 401: no valid credential
	EFORBIDDEN    = "forbidden"          // 403: a credential without the right
	ENOTFOUND     = "not_found"          // 404
	ECONFLICT     = "conflict"           // 409: clashes with existing state
	ETOOLARGE     = "payload_too_large"  // 413
	EVALIDATION   = "validation_failed"  // 422: readable but invalid; see Fields
	ERATELIMITED  = "rate_limited"       // 429
	EINTERNAL     = "internal"           // 500: details are logged, never sent
	EUNAVAILABLE  = "unavailable"        // 503: a dependency is down
	EMETHOD       = "method_not_allowed" // 405
	EUPGRADE      = "upgrade_required"   // 426: the WebSocket endpoint asked without a WebSocket handshake
	EBADGATEWAY   = "bad_gateway"        // 502: a system Perch called for the caller did not answer

	// EFEATUREDISABLED answers a route whose feature flag is off for the
	// caller (workflows, marketplace): 403, with a message naming the flag.
	EFEATUREDISABLED = "feature_disabled"

	// Billing's own codes (docs/DESIGN.md, Billing).
	EALREADYSUBSCRIBED  = "already_subscribed"  // 400: a checkout beside the organisation's live subscription
	EBILLINGUNAVAILABLE = "billing_unavailable" // 503: billing is off, or the payment provider did not answer
	EPAYMENTPASTDUE     = "payment_past_due"    // 409: checkout while a payment is owed; the portal settles it
)

// statuses are the HTTP statuses that answer each code.
var statuses = map[string]int{
	EBADREQUEST:   400,
	EUNAUTHORIZED: 401,
	EFORBIDDEN:    403,
	ENOTFOUND:     404,
	EMETHOD:       405,
	ECONFLICT:     409,
	ETOOLARGE:     413,
	EUPGRADE:      426,
	EVALIDATION:   422,
	ERATELIMITED:  429,
	EINTERNAL:     500,
	EUNAVAILABLE:  503,
	EBADGATEWAY:   502,

	EFEATUREDISABLED: 403,

	EALREADYSUBSCRIBED:  400,
	EBILLINGUNAVAILABLE: 503,
	EPAYMENTPASTDUE:     409,
}

// HTTPStatus is the HTTP status that answers an error of code, for the API
// and the dashboard's pages alike; 500 for a code it does not know.
func HTTPStatus(code string) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return 500
}

// Error is an application error: a code from the list above, a message meant
// for the person reading it, and, for validation failures, one problem per
// field.
type Error struct {
	Code    string
	Message string
	Fields  map[string]string
}

func (e *Error) Error() string {
	if len(e.Fields) == 0 {
		return fmt.Sprintf("perch: %s: %s", e.Code, e.Message)
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(e.Fields)) {
		fmt.Fprintf(&b, "; %s: %s", k, e.Fields[k])
	}
	return fmt.Sprintf("perch: %s: %s%s", e.Code, e.Message, b.String())
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for
// any other error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the message of the first *Error in err's chain, or a
// generic message that leaks nothing for any other error.
func ErrorMessage(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Message
	}
	return "Internal error."
}

// Problems collects validation problems, one per field, so that a caller hears
// about all of them at once.
type Problems map[string]string

// Add records a problem for field unless one is recorded already.
func (p Problems) Add(field, problem string) {
	if _, ok := p[field]; !ok {
		p[field] = problem
	}
}

// Err returns nil when nothing was recorded, or an EVALIDATION error that
// carries every problem.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	return &Error{Code: EVALIDATION, Message: "Some fields are not valid.", Fields: p}
}

// JSONKind names the JSON type that a value of Go type t is decoded from,
// for error messages: "a string", "true or false", "an object".
func JSONKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map, reflect.Pointer:
		return "an object"
	}
	return "another type"
}
