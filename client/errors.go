package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/perch-dev/perch"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// errorBody is the one error shape: {"error": {code, message, fields}}.
type errorBody struct {
	Error *struct {
		Code    string            `json:"code"`
		Message string            `json:"message"`
		Fields  map[string]string `json:"fields"`
	} `json:"error"`
}

// responseError turns a non-2xx answer into the *perch.Error the server
// meant, code, message and fields included. An answer not in the error shape
// (a proxy's page, say) is EINTERNAL naming the HTTP status. A 429 keeps its
// Retry-After in the message.
func responseError(res *http.Response) *perch.Error {
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	var body errorBody
	var e *perch.Error
	if json.Unmarshal(b, &body) == nil && body.Error != nil && body.Error.Code != "" {
		e = &perch.Error{Code: body.Error.Code, Message: body.Error.Message, Fields: body.Error.Fields}
	} else {
		e = perch.Errorf(perch.EINTERNAL, "The server answered %s%s.", res.Status, to(res.Request))
	}
	if ra := res.Header.Get("Retry-After"); ra != "" && res.StatusCode == http.StatusTooManyRequests {
		e.Message += fmt.Sprintf(" (Retry-After: %s)", ra)
	}
	return e
}

func to(r *http.Request) string {
	if r == nil || r.URL == nil {
		return ""
	}
	return fmt.Sprintf(" to %s %s", r.Method, r.URL.Path)
}
