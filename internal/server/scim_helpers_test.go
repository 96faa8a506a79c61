package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/scim"
	"github.com/perch-dev/perch/internal/testenv"
)

// scimIdP speaks SCIM to Perch as an identity provider does: with the
// organisation's SCIM token, in application/scim+json, under its own
// User-Agent.
type scimIdP struct {
	t     testing.TB
	a     *api
	token string
	agent string
}

// scimToken has the owner make the organisation's SCIM token.
func (a *api) scimToken(owner *account) string {
	a.t.Helper()
	return expect(a.t, a.call("POST", "/api/v1/org/saml/scim-token", owner.Access, nil), 201).Data()["token"].(string)
}

// scimClient is an identity provider holding owner's organisation's token;
// the organisation verifies domains first, the addresses its provider may
// make accounts for.
func (a *api) scimClient(owner *account, agent string, domains ...string) *scimIdP {
	a.t.Helper()
	if len(domains) > 0 {
		a.verifyDomains(owner, domains...)
	}
	return &scimIdP{t: a.t, a: a, token: a.scimToken(owner), agent: agent}
}

// verifyDomains makes domains the verified domains of owner's
// organisation, as a platform admin's word does (the DNS check has tests
// of its own); an organisation without SAML settings first gets some,
// switched off.
func (a *api) verifyDomains(owner *account, domains ...string) {
	a.t.Helper()
	if _, err := a.store.SAMLConfig(a.t.Context(), owner.OrgID); perch.ErrorCode(err) == perch.ENOTFOUND {
		expect(a.t, a.call("PUT", "/api/v1/org/saml", owner.Access, map[string]any{"idp_metadata_xml": testIDPMetadata(), "enabled": false}), 200)
	}
	if err := a.store.SetSAMLDomains(a.t.Context(), owner.OrgID, domains, true); err != nil {
		a.t.Fatal(err)
	}
}

// scimAnswer is an answer to a SCIM request, its body decoded.
type scimAnswer struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

// do sends a request; body may be nil, bytes or a string (sent as they
// are) or a value (sent as JSON). Extra headers come in pairs.
func (c *scimIdP) do(method, path string, body any, headers ...string) *scimAnswer {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/scim+json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("User-Agent", c.agent)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	c.a.srv.ServeHTTP(rec, req)
	ans := &scimAnswer{Status: rec.Code, Header: rec.Header(), Raw: rec.Body.String()}
	if rec.Body.Len() > 0 {
		if ct := rec.Header().Get("Content-Type"); ct != "application/scim+json" {
			c.t.Errorf("%s %s: Content-Type %q, want application/scim+json", method, path, ct)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &ans.Body); err != nil {
			c.t.Fatalf("%s %s: the body is not a JSON object: %v\n%s", method, path, err, rec.Body)
		}
	}
	return ans
}

// want fails unless the answer has status and, for an error, is in the
// SCIM error schema with scimType (none when "").
func (ans *scimAnswer) want(tb testing.TB, status int, scimType ...string) *scimAnswer {
	tb.Helper()
	if ans.Status != status {
		tb.Fatalf("status %d, want %d: %s", ans.Status, status, ans.Raw)
	}
	if status < 400 {
		return ans
	}
	b := ans.Body
	if schemas, _ := b["schemas"].([]any); len(schemas) != 1 || schemas[0] != scim.ErrorSchema {
		tb.Errorf("error schemas %v", b["schemas"])
	}
	if b["status"] != strconv.Itoa(status) {
		tb.Errorf("error status %#v, want the string %q", b["status"], strconv.Itoa(status))
	}
	if d, _ := b["detail"].(string); d == "" {
		tb.Error("an error without detail")
	}
	want := ""
	if len(scimType) > 0 {
		want = scimType[0]
	}
	if got, _ := b["scimType"].(string); got != want {
		tb.Errorf("scimType %q, want %q: %s", got, want, ans.Raw)
	}
	return ans
}

// str reads a string at a dotted path of the body ("meta.version",
// "name.givenName", "emails.0.value").
func (ans *scimAnswer) str(path string) string {
	s, _ := lookup(ans.Body, path).(string)
	return s
}

func lookup(v any, path string) any {
	for _, key := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[key]
		case []any:
			i := 0
			if err := json.Unmarshal([]byte(key), &i); err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// scimFixture reads a file of the shared SCIM fixtures.
func scimFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.FixturesDir(tb), "scim", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// scimFixtureJSON reads a fixture as a JSON object.
func scimFixtureJSON(tb testing.TB, name string) map[string]any {
	tb.Helper()
	var v map[string]any
	if err := json.Unmarshal(scimFixture(tb, name), &v); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return v
}

// sameShape fails unless got has every member want has, with the same JSON
// type, at every depth (arrays: their first items), skipping members whose
// value in want is empty ("" or []) and the names in skip: what an identity
// provider reads back must be where it looks for it.
func sameShape(tb testing.TB, where string, got, want any, skip ...string) {
	tb.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			tb.Errorf("%s: %T, want an object", where, got)
			return
		}
		for k, wv := range w {
			if wv == "" || isEmptyList(wv) || slices.Contains(skip, k) {
				continue
			}
			gv, ok := g[k]
			if !ok {
				tb.Errorf("%s.%s is missing", where, k)
				continue
			}
			sameShape(tb, where+"."+k, gv, wv, skip...)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			tb.Errorf("%s: %T, want an array", where, got)
			return
		}
		if len(w) > 0 && len(g) > 0 {
			sameShape(tb, where+".0", g[0], w[0], skip...)
		}
	default:
		if (want == nil) != (got == nil) || want != nil && jsonKind(want) != jsonKind(got) {
			tb.Errorf("%s: %T, want %T", where, got, want)
		}
	}
}

func isEmptyList(v any) bool {
	l, ok := v.([]any)
	return ok && len(l) == 0
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return "null"
}
