package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestOpenAPIDocumentIsValid: openapi.json loads and validates as OpenAPI
// 3.1 (kin-openapi validates a 3.1 document by the 3.1 rules and its schemas
// by JSON Schema 2020-12).
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	sp, err := spec()
	if err != nil {
		t.Fatal(err)
	}
	if sp.doc.OpenAPI != "3.1.0" || !sp.doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi = %q, want 3.1.0", sp.doc.OpenAPI)
	}
	seen := map[string]string{}
	for _, op := range sp.operations() {
		method, path, _ := strings.Cut(op, " ")
		o := sp.doc.Paths.Value(path).GetOperation(method)
		if o.OperationID == "" || o.Summary == "" || len(o.Tags) == 0 {
			t.Errorf("%s lacks an operationId, a summary or a tag", op)
		}
		if other, dup := seen[o.OperationID]; dup {
			t.Errorf("%s and %s share the operationId %q", op, other, o.OperationID)
		}
		seen[o.OperationID] = op
	}
}

// TestOpenAPIHasNoRepeatedKeys: a member named twice in one object of
// openapi.json is legal JSON that every reader takes differently (most keep
// the last), so a merge that repeats a schema or parameter must not pass.
func TestOpenAPIHasNoRepeatedKeys(t *testing.T) {
	t.Parallel()
	dec := json.NewDecoder(bytes.NewReader(openAPIDocument))
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				if seen[key] {
					t.Errorf("%s names %q twice", path, key)
				}
				seen[key] = true
				if err := walk(path + "/" + key); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(fmt.Sprintf("%s/%d", path, i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(""); err != nil {
		t.Fatal(err)
	}
}

// TestOpenAPIDescribesEveryRoute: every route routes.go registers under the
// described paths has an operation in openapi.json, and every operation
// there is a route.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	sp, err := spec()
	if err != nil {
		t.Fatal(err)
	}
	routes := registeredRoutes(t)
	var served []string
	for _, r := range routes {
		if _, path, _ := strings.Cut(r, " "); described(path) {
			served = append(served, r)
		}
	}
	if len(served) < 10 {
		t.Fatalf("found only %d routes in routes.go: %v", len(served), served)
	}
	ops := sp.operations()
	for _, r := range served {
		if !slices.Contains(ops, r) {
			t.Errorf("routes.go serves %s, which openapi.json does not describe", r)
		}
	}
	for _, op := range ops {
		if !slices.Contains(served, op) {
			t.Errorf("openapi.json describes %s, which routes.go does not serve", op)
		}
	}
}

// registeredRoutes reads the patterns of routes.go's Handle and HandleFunc
// calls.
func registeredRoutes(tb testing.TB) []string {
	tb.Helper()
	f, err := goparser.ParseFile(token.NewFileSet(), "routes.go", nil, 0)
	if err != nil {
		tb.Fatal(err)
	}
	var patterns []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc" {
			return true
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			tb.Errorf("a route at %v is not registered with a literal pattern", call.Pos())
			return true
		}
		p, err := strconv.Unquote(lit.Value)
		if err != nil {
			tb.Fatal(err)
		}
		patterns = append(patterns, p)
		return true
	})
	return patterns
}

// TestOpenAPIIsServed: the document is served as is.
func TestOpenAPIIsServed(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	res := expect(t, a.call("GET", "/api/v1/openapi.json", "", nil), 200)
	if res.Raw != string(openAPIDocument) || res.Body["openapi"] != "3.1.0" {
		t.Fatalf("served %.200s…", res.Raw)
	}
}

// recordingTB keeps what the response checker reports instead of failing.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := r.errs
	r.errs = nil
	return errs
}

// TestResponseCheckerRefusesWhatIsNotDescribed: the checker every test's
// server goes through fails a test on an undescribed route or status, a
// missing header, a wrong content type, and a body of the wrong shape.
func TestResponseCheckerRefusesWhatIsNotDescribed(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ada := a.register("Ada")
	me := expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200).Raw
	a.srv.mux.Handle("GET /api/v1/test/undescribed", a.srv.handle(func(w http.ResponseWriter, r *http.Request) error {
		return respond(w, 200, "hello")
	}))
	answering := func(status int, contentType, body string, header ...string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i+1 < len(header); i += 2 {
				w.Header().Set(header[i], header[i+1])
			}
			if contentType != "" {
				w.Header().Set("Content-Type", contentType)
			}
			w.WriteHeader(status)
			io.WriteString(w, body)
		})
	}
	const js = "application/json"
	cases := []struct {
		name, method, path, want string
		next                     http.Handler
	}{
		{"a wrongly typed field", "GET", "/api/v1/users/me", "/data/id",
			answering(200, js, strings.Replace(me, `"id":"`+ada.ID+`"`, `"id":42`, 1))},
		{"a missing field", "GET", "/api/v1/users/me", "org_id",
			answering(200, js, strings.Replace(me, `"org_id":"`+ada.OrgID+`",`, "", 1))},
		{"a field too many", "GET", "/api/v1/users/me", "colour",
			answering(200, js, strings.Replace(me, `"id":`, `"colour":"red","id":`, 1))},
		{"a time that is not UTC", "GET", "/api/v1/users/me", "created_at",
			answering(200, js, regexp.MustCompile(`"created_at":"[^"]+"`).ReplaceAllString(me, `"created_at":"2026-01-02T03:04:05+01:00"`))},
		{"no envelope", "GET", "/api/v1/users/me", "data",
			answering(200, js, strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(me), `{"data":`), "}"))},
		{"an undescribed status", "GET", "/api/v1/users/me", "status is not supported",
			answering(418, js, `{"error":{"code":"internal","message":"teapot"}}`)},
		{"an error code that is not the status's", "GET", "/api/v1/users/me", "code",
			answering(401, js, `{"error":{"code":"forbidden","message":"no"}}`, "WWW-Authenticate", `Bearer realm="perch"`)},
		{"an error body out of shape", "GET", "/api/v1/users/me", "doesn't match schema",
			answering(401, js, `{"message":"no"}`, "WWW-Authenticate", `Bearer realm="perch"`)},
		{"a missing header", "GET", "/api/v1/users/me", "WWW-Authenticate",
			answering(401, js, `{"error":{"code":"unauthorized","message":"no"}}`)},
		{"another content type", "GET", "/api/v1/users/me", "text/plain",
			answering(200, "text/plain", "Ada")},
		{"a body where none is described", "DELETE", "/api/v1/tokens/" + strings.Repeat("a", 20), "without a body",
			answering(204, js, `{}`)},
		{"an undescribed route", "GET", "/api/v1/test/undescribed", "no operation", a.srv.mux},
		{"a miss not in the error shape", "GET", "/api/v1/nothing-here", "error shape",
			answering(404, js, `{"message":"no"}`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := &recordingTB{TB: t}
			h := checkResponses(tb, a.srv, c.next)
			req := httptest.NewRequest(c.method, c.path, nil)
			req.Header.Set("Authorization", "Bearer "+ada.Access)
			h.ServeHTTP(httptest.NewRecorder(), req)
			errs := tb.take()
			if len(errs) != 1 || !strings.Contains(errs[0], c.want) || !strings.Contains(errs[0], c.path) {
				t.Fatalf("reported %q; want one report naming %s and %q", errs, c.path, c.want)
			}
		})
	}
	// And what is described passes.
	tb := &recordingTB{TB: t}
	h := checkResponses(tb, a.srv, answering(200, "application/json; charset=utf-8", me))
	req := httptest.NewRequest("GET", "/api/v1/users/me", nil)
	h.ServeHTTP(httptest.NewRecorder(), req)
	if errs := tb.take(); len(errs) != 0 {
		t.Fatalf("a described answer was refused: %v", errs)
	}
}

// TestAPIDocsPage: /docs/api shows every operation of the description, with
// its parameters, body and responses, links only to what is on the page, and
// needs no script.
func TestAPIDocsPage(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	res := a.call("GET", "/docs/api", "", nil)
	if res.Status != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("status %d, type %q", res.Status, res.Header.Get("Content-Type"))
	}
	page := res.Raw
	sp, err := spec()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range sp.operations() {
		method, path, _ := strings.Cut(op, " ")
		o := sp.doc.Paths.Value(path).GetOperation(method)
		anchor := `id="` + o.OperationID + `"`
		i := strings.Index(page, anchor)
		if i < 0 {
			t.Errorf("%s is not on the page", op)
			continue
		}
		article := page[i:]
		article = article[:strings.Index(article, "</article>")]
		for _, want := range []string{method, html.EscapeString(path), html.EscapeString(o.Summary), "<h4>Responses</h4>"} {
			if !strings.Contains(article, want) {
				t.Errorf("%s: the page lacks %q", op, want)
			}
		}
		for status := range o.Responses.Map() {
			if !strings.Contains(article, "<dt><strong>"+status+"</strong>") {
				t.Errorf("%s: the page lacks the response %s", op, status)
			}
		}
	}
	for _, want := range []string{
		`<code>code_verifier</code> <span class="badge">required</span>`, // a parameter
		`<code>application/x-www-form-urlencoded</code>`,                 // a request body
		`<code>error</code> <span class="badge">required</span>`,         // an error response, merged
		`always bad_request`,
		`<a href="#schema-Session"><code>Session</code></a>`, // the envelope's data
		`id="schema-Notification"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(page, "<script") {
		t.Error("the page has a script")
	}
	for _, m := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("the link #%s leads nowhere", m[1])
		}
	}
}
