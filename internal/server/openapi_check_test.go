package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/perch-dev/perch/internal/apitest"
)

// Every response a test receives from a path the API description covers is
// checked against openapi.json: the operation must be described, and so must
// the status, the headers described for it, the content type and the body.
// A route without a description therefore fails its own tests, and TestMain
// fails a whole-package run in which a described operation was never
// answered.

// checkedPrefixes are the paths whose answers are checked: the JSON API,
// the receivers, the WebSocket handshake and the health checks. The
// dashboard's pages and /docs/api are not described; /metrics is described
// but not checked (Prometheus text, which may be served apart).
var checkedPrefixes = []string{"/api/v1/", "/webhooks/", "/ws", "/healthz", "/readyz", "/scim/v2/"}

func checked(path string) bool {
	for _, p := range checkedPrefixes {
		if path == strings.TrimSuffix(p, "/") || strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// described reports whether openapi.json must describe path's routes.
func described(path string) bool { return checked(path) || path == "/metrics" }

// apiSpec is the loaded description, and which of its operations have had a
// checked response.
type apiSpec struct {
	doc    *openapi3.T
	router routers.Router
	errSch *openapi3.Schema // the error shape, for answers no route took
	bodies *bodySchemas     // the response schemas, each compiled once

	mu      sync.Mutex
	checked map[string]bool // "GET /api/v1/tokens"
}

// spec loads openapi.json once for the package's tests.
var spec = sync.OnceValues(func() (*apiSpec, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openAPIDocument)
	if err != nil {
		return nil, fmt.Errorf("openapi.json does not load: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi.json is not a valid OpenAPI %s document: %w", doc.OpenAPI, err)
	}
	// Redirects answer GET with Go's small HTML page; read it as text.
	openapi3filter.RegisterBodyDecoder("text/html", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(body)
		return string(b), err
	})
	// SAML metadata is read as text, once it reads as XML.
	openapi3filter.RegisterBodyDecoder("application/samlmetadata+xml", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		for dec := xml.NewDecoder(bytes.NewReader(b)); ; {
			if _, err := dec.Token(); err == io.EOF {
				return string(b), nil
			} else if err != nil {
				return nil, err
			}
		}
	})
	// SCIM answers JSON under a media type of its own.
	openapi3filter.RegisterBodyDecoder("application/scim+json", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		var v any
		err := json.NewDecoder(body).Decode(&v)
		return v, err
	})
	// An NDJSON export is read as the list of its lines, each checked
	// against the schema's items.
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		items := []any{}
		dec := json.NewDecoder(body)
		for dec.More() {
			var v any
			if err := dec.Decode(&v); err != nil {
				return nil, err
			}
			items = append(items, v)
		}
		return items, nil
	})
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	errRef := doc.Components.Schemas["Error"]
	if errRef == nil {
		return nil, errors.New("openapi.json has no Error schema")
	}
	bodies, err := newBodySchemas(openAPIDocument)
	if err != nil {
		return nil, err
	}
	return &apiSpec{doc: doc, router: router, errSch: errRef.Value, bodies: bodies, checked: map[string]bool{}}, nil
})

// operations lists every described operation as "METHOD /path".
func (sp *apiSpec) operations() []string {
	return sp.operationsWhere(func(string) bool { return true })
}

// operationsWhere lists the described operations of the paths keep keeps.
func (sp *apiSpec) operationsWhere(keep func(path string) bool) []string {
	var ops []string
	for path, item := range sp.doc.Paths.Map() {
		if !keep(path) {
			continue
		}
		for method := range item.Operations() {
			ops = append(ops, method+" "+path)
		}
	}
	slices.Sort(ops)
	return ops
}

// checkResponses wraps the server's handler so that every response to a
// described path is checked; a mismatch fails tb (with Errorf: the server
// may answer on a goroutine of its own).
func checkResponses(tb testing.TB, s *Server, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !checked(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		_, pattern := s.mux.Handler(r) // before serving: the handler may change r
		method, path := r.Method, r.URL.Path
		tee := &teeWriter{ResponseWriter: w}
		next.ServeHTTP(tee, r)
		sp, err := spec()
		if err == nil {
			err = sp.check(r, pattern, tee.answer())
		}
		if err != nil {
			tb.Errorf("openapi: %s %s answered %d, which openapi.json does not allow: %v\nbody: %s",
				method, path, tee.answer().status, err, truncate(tee.body.String(), 2000))
		}
	})
}

// answer is a response as the client received it.
type answer struct {
	status   int
	header   http.Header
	body     []byte
	hijacked bool
}

// check validates one answer to r, whose route pattern in the server's mux
// was pattern ("/" when no route of the API took it).
func (sp *apiSpec) check(r *http.Request, pattern string, a answer) error {
	route, params, findErr := sp.router.FindRoute(r)
	if pattern == "/" || pattern == "" {
		if findErr == nil {
			return fmt.Errorf("openapi.json describes %s %s, but the server has no such route", r.Method, route.Path)
		}
		return sp.checkUnmatched(r.URL.Path, a)
	}
	if findErr != nil {
		return fmt.Errorf("the route %q has no operation in openapi.json (%v)", pattern, findErr)
	}
	if a.hijacked {
		// The WebSocket library writes its 101 on the connection itself,
		// out of this writer's sight; the test's WebSocket client checks
		// that answer's headers (Upgrade, Connection, Sec-WebSocket-Accept)
		// as it connects. What is left to check here is that 101 is
		// described.
		if a.status != http.StatusSwitchingProtocols || route.Operation.Responses.Status(a.status) == nil {
			return fmt.Errorf("status %d with the connection hijacked", a.status)
		}
		sp.mu.Lock()
		sp.checked[r.Method+" "+route.Path] = true
		sp.mu.Unlock()
		return nil
	}
	// kin-openapi checks the status and the headers; the body is checked
	// against the schema compiled once (checkBody).
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route},
		Status:                 a.status,
		Header:                 a.header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return err
	}
	if err := sp.checkBody(r.Method, route.Path, route.Operation, a); err != nil {
		return err
	}
	// A response described without content has no body (204, a redirect
	// after a form post, the WebSocket upgrade).
	if res := route.Operation.Responses.Status(a.status); res != nil && len(res.Value.Content) == 0 && len(a.body) > 0 {
		return fmt.Errorf("status %d is described without a body, but the answer has one", a.status)
	}
	if a.hijacked != (a.status == http.StatusSwitchingProtocols) {
		return fmt.Errorf("status %d with the connection hijacked: %v", a.status, a.hijacked)
	}
	sp.mu.Lock()
	sp.checked[r.Method+" "+route.Path] = true
	sp.mu.Unlock()
	return nil
}

// checkUnmatched checks an answer that no route took: 404, or 405 with
// Allow, in the error shape (under /scim/v2, SCIM's).
func (sp *apiSpec) checkUnmatched(path string, a answer) error {
	if a.status != http.StatusNotFound && a.status != http.StatusMethodNotAllowed {
		return fmt.Errorf("no route took the request, yet the status is %d", a.status)
	}
	if a.status == http.StatusMethodNotAllowed && a.header.Get("Allow") == "" {
		return errors.New("405 without Allow")
	}
	var body any
	if err := json.Unmarshal(a.body, &body); err != nil {
		return fmt.Errorf("the body is not JSON: %w", err)
	}
	if strings.HasPrefix(path, "/scim/v2/") {
		if err := sp.doc.Components.Schemas["SCIMError"].Value.VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil {
			return fmt.Errorf("the body is not in the SCIM error schema: %w", err)
		}
		if got := body.(map[string]any)["status"]; got != fmt.Sprint(a.status) {
			return fmt.Errorf("the SCIM error's status is %v, not %q", got, fmt.Sprint(a.status))
		}
		return nil
	}
	if err := sp.errSch.VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("the body is not in the error shape: %w", err)
	}
	if want := apitest.CodeFor(a.status); body.(map[string]any)["error"].(map[string]any)["code"] != want {
		return fmt.Errorf("the error code is not %q", want)
	}
	return nil
}

// teeWriter passes a response on and keeps a copy: the status and headers
// as they were sent, and the body.
type teeWriter struct {
	http.ResponseWriter
	status   int
	header   http.Header
	body     bytes.Buffer
	hijacked bool
}

func (t *teeWriter) WriteHeader(code int) {
	if t.status == 0 {
		t.status, t.header = code, t.ResponseWriter.Header().Clone()
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *teeWriter) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.WriteHeader(http.StatusOK)
	}
	t.body.Write(b)
	return t.ResponseWriter.Write(b)
}

func (t *teeWriter) Flush() { http.NewResponseController(t.ResponseWriter).Flush() }

func (t *teeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	t.hijacked = true
	return http.NewResponseController(t.ResponseWriter).Hijack()
}

func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

func (t *teeWriter) answer() answer {
	a := answer{status: t.status, header: t.header, body: t.body.Bytes(), hijacked: t.hijacked}
	switch {
	case a.status == 0 && t.hijacked: // the WebSocket library answers 101 on the connection itself
		a.status = http.StatusSwitchingProtocols
	case a.status == 0: // nothing written: net/http answers 200
		a.status, a.header = http.StatusOK, t.ResponseWriter.Header().Clone()
	}
	return a
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// reportCoverage prints how many checked operations had a checked
// response, and reports false, naming them, when some had none. It says
// nothing about runs of part of the package (-run, -skip, -short), which
// leave operations out on purpose.
func reportCoverage() bool {
	for _, name := range []string{"test.run", "test.skip", "test.list"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return true
		}
	}
	if testing.Short() {
		return true
	}
	sp, err := spec()
	if err != nil {
		fmt.Println("openapi:", err)
		return false
	}
	ops := sp.operationsWhere(checked)
	var missing []string
	sp.mu.Lock()
	for _, op := range ops {
		if !sp.checked[op] {
			missing = append(missing, op)
		}
	}
	sp.mu.Unlock()
	var report strings.Builder
	fmt.Fprintf(&report, "openapi: %d of %d operations have a checked response\n", len(ops)-len(missing), len(ops))
	for _, op := range missing {
		fmt.Fprintf(&report, "openapi: no test received a response of %s\n", op)
	}
	fmt.Print(report.String())
	// go test keeps a passing package's output to itself; CI reads it here.
	if path := os.Getenv("PERCH_OPENAPI_REPORT"); path != "" {
		os.WriteFile(path, []byte(report.String()), 0o644)
	}
	return len(missing) == 0
}
