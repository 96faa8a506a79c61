package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/perch-dev/perch"
)

// handlerFunc is an HTTP handler that returns its failure instead of writing
// it; handle writes it in the one error shape.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) handle(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// errorBody is the one error shape: {"error": {code, message, fields}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
}

// writeError answers with err in the error shape (under /scim/v2, in the
// SCIM error schema). Only internal errors are logged, with the request ID;
// their details never reach the client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if isSCIMPath(r.URL.Path) {
		// SCIM clients read SCIM errors only: whatever refused the request
		// (the body limit, a panic, no such path), it answers in their
		// schema.
		s.writeSCIMError(w, r, err)
		return
	}
	code := perch.ErrorCode(err)
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		err = perch.Errorf(perch.ETOOLARGE, "The request body is larger than the limit of %s.", byteSize(mbe.Limit))
		code = perch.ETOOLARGE
	}
	body := errorBody{Error: errorDetail{Code: code, Message: perch.ErrorMessage(err)}}
	if e, ok := errors.AsType[*perch.Error](err); ok {
		body.Error.Fields = e.Fields
	}
	status := perch.HTTPStatus(code)
	switch {
	case code == perch.EINTERNAL:
		s.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "request_id", requestID(r), "err", err)
	case code == perch.EUNAVAILABLE:
		// A dependency is down (the database, say): the operator needs
		// the cause, which the answer does not carry.
		s.log.Warn("unavailable", "method", r.Method, "path", r.URL.Path, "request_id", requestID(r), "err", err)
	case code == perch.EUNAUTHORIZED:
		w.Header().Set("WWW-Authenticate", `Bearer realm="perch"`)
	}
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", retryUnavailable)
	}
	writeJSON(w, status, body)
}

// retryUnavailable is the Retry-After, in seconds, of every 503 that does
// not set its own: long enough that clients retrying at once do not pile
// onto a database that is coming back, short enough for a restart or a
// failover to be over by then.
const retryUnavailable = "5"

// Header values every answer (noSniff: see observe) or every JSON answer
// carries, shared rather than made anew for each: net/http copies a
// handler's header values when it writes them.
var (
	jsonContentType = []string{"application/json; charset=utf-8"}
	noSniff         = []string{"nosniff"}
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header()["Content-Type"] = jsonContentType
	writeJSONBody(w, status, v)
}

// writeJSONBody writes status and v as JSON, under the Content-Type the
// caller set.
func writeJSONBody(w http.ResponseWriter, status int, v any) {
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// respond writes a success under /api/v1: {"data": v}.
func respond(w http.ResponseWriter, status int, v any) error {
	writeJSON(w, status, struct {
		Data any `json:"data"`
	}{v})
	return nil
}

// respondPage writes one page of a list: {"data": items, "next_cursor":
// next}, next being null after the last page.
func respondPage(w http.ResponseWriter, items any, next string) error {
	var cursor *string
	if next != "" {
		cursor = &next
	}
	writeJSON(w, http.StatusOK, struct {
		Data       any     `json:"data"`
		NextCursor *string `json:"next_cursor"`
	}{items, cursor})
	return nil
}

// pageOf reads ?cursor= and ?limit= (default 50, at most 200).
func pageOf(r *http.Request) (perch.Page, error) {
	q := r.URL.Query()
	return perch.ParsePage(q.Get("cursor"), q.Get("limit"))
}

// noContent answers 204 with no body, as every DELETE does.
func noContent(w http.ResponseWriter) error {
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// decode reads a JSON object from the request body into v. Unknown fields are
// ignored; anything unreadable is a bad_request error that says what is
// wrong, and a body over the limit is payload_too_large.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data")
	}
	if err == nil {
		return nil
	}
	if berr := bodyError(err); berr != nil {
		return berr
	}
	switch e := err.(type) {
	case *json.SyntaxError:
		return perch.Errorf(perch.EBADREQUEST, "The body is not valid JSON (at byte %d).", e.Offset)
	case *json.UnmarshalTypeError:
		if e.Field == "" {
			return perch.Errorf(perch.EBADREQUEST, "The body must be a JSON object.")
		}
		kind := perch.JSONKind(e.Type)
		return &perch.Error{Code: perch.EBADREQUEST, Message: fmt.Sprintf("The field %q must be %s.", e.Field, kind),
			Fields: map[string]string{e.Field: "must be " + kind}}
	}
	if errors.Is(err, io.EOF) {
		return perch.Errorf(perch.EBADREQUEST, "The body is empty; a JSON object is expected.")
	}
	return perch.Errorf(perch.EBADREQUEST, "The body is not valid JSON.")
}

// bodyError says what went wrong reading a request body when it was the
// client's doing: a body over the limit (413), cut off before its declared
// length, or not sent within the read timeout (400). It is nil for any
// other error.
func bodyError(err error) error {
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return mbe
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return perch.Errorf(perch.EBADREQUEST, "The request body ended before its declared length.")
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return perch.Errorf(perch.EBADREQUEST, "The request body was not sent in time.")
	}
	return nil
}

func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// unmatched answers requests no route takes: 405 with Allow when the path
// exists for other methods, else 404.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request) error {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allowed = append(allowed, m)
		}
	}
	r.Pattern = "" // metrics and logs group every miss together
	err := perch.Errorf(perch.ENOTFOUND, "There is nothing at %s.", r.URL.Path)
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		err = perch.Errorf(perch.EMETHOD, "%s is not allowed here; use %s.", r.Method, strings.Join(allowed, " or "))
	}
	return err
}
