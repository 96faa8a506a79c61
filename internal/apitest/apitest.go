// Package apitest is what the API's tests (internal/server) and the
// dashboard's tests (internal/web) share: a request body from a Go value, an
// answer with its JSON decoded, and the check that an error is in the one
// error shape with the code its status goes with. Only tests import it.
package apitest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/perch-dev/perch"
)

// Body is what a test sends: nil for none, a string as it is, any other
// value as JSON.
func Body(tb testing.TB, body any) io.Reader {
	tb.Helper()
	switch b := body.(type) {
	case nil:
		return nil
	case string:
		return strings.NewReader(b)
	}
	j, err := json.Marshal(body)
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.NewReader(j)
}

// Response is an answer, with its body decoded when it is JSON.
type Response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

// NewResponse decodes an answer to the request named by what; a body that
// says it is JSON and is not fails the test.
func NewResponse(tb testing.TB, what string, status int, header http.Header, raw []byte) *Response {
	tb.Helper()
	r := &Response{Status: status, Header: header, Raw: string(raw)}
	if len(raw) > 0 && strings.HasPrefix(header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.Body); err != nil {
			tb.Fatalf("%s: body is not JSON: %v\n%s", what, err, raw)
		}
	}
	return r
}

// Data returns the "data" member as an object.
func (r *Response) Data() map[string]any {
	d, _ := r.Body["data"].(map[string]any)
	return d
}

// List returns the "data" member as a list of objects.
func (r *Response) List() []map[string]any {
	items, _ := r.Body["data"].([]any)
	out := make([]map[string]any, len(items))
	for i, it := range items {
		out[i], _ = it.(map[string]any)
	}
	return out
}

func (r *Response) errorMember(name string) any {
	e, _ := r.Body["error"].(map[string]any)
	return e[name]
}

// ErrorCode returns error.code, or "" for a success.
func (r *Response) ErrorCode() string { c, _ := r.errorMember("code").(string); return c }

// ErrorMessage returns error.message, or "" for a success.
func (r *Response) ErrorMessage() string { m, _ := r.errorMember("message").(string); return m }

// Fields returns error.fields.
func (r *Response) Fields() map[string]any {
	f, _ := r.errorMember("fields").(map[string]any)
	return f
}

// Expect fails the test unless res has the given status and, for an error,
// the error shape with the code that goes with that status.
func Expect(tb testing.TB, res *Response, status int) *Response {
	tb.Helper()
	if res.Status != status {
		tb.Fatalf("status = %d, want %d; body: %s", res.Status, status, res.Raw)
	}
	if status >= 400 {
		if res.ErrorCode() == "" || res.ErrorMessage() == "" {
			tb.Fatalf("error body not in the error shape: %s", res.Raw)
		}
		if perch.HTTPStatus(res.ErrorCode()) != status {
			tb.Fatalf("error code = %q, which is not answered with %d (%q is)", res.ErrorCode(), status, CodeFor(status))
		}
	}
	return res
}

// codes are the error codes, each answered with its own status.
var codes = []string{perch.EBADREQUEST, perch.EUNAUTHORIZED, perch.EFORBIDDEN, perch.ENOTFOUND, perch.EMETHOD,
	perch.ECONFLICT, perch.ETOOLARGE, perch.EUPGRADE, perch.EVALIDATION, perch.ERATELIMITED, perch.EINTERNAL, perch.EUNAVAILABLE}

// CodeFor is the error code answered with status, "" for none.
func CodeFor(status int) string {
	for _, c := range codes {
		if perch.HTTPStatus(c) == status {
			return c
		}
	}
	return ""
}

// EmailFor is the address a harness registers a person named name with.
func EmailFor(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, " ", ".")) + "@example.com"
}

// Log is a server's log that background goroutines (mail, fan-out) write
// while a test reads it. The zero value is ready.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
