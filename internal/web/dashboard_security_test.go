package web_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestDashboardRedirectsOnlyWithinTheSite offers the sign-in's next the
// known ways out of the site: each is answered with the feed, and what is
// followed stays on the site however a browser reads the Location.
func TestDashboardRedirectsOnlyWithinTheSite(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	signUpInBrowser(t, b, "Ada")
	out := newBrowser(t, a.ts) // signed out
	site, _ := url.Parse(b.ts.URL + "/signin")
	staysOnSite := func(what, loc string) {
		t.Helper()
		// Browsers drop tabs and newlines and read "\" as "/" before
		// resolving; so does this check.
		cleaned := strings.NewReplacer("\t", "", "\r", "", "\n", "", `\`, "/").Replace(strings.TrimLeftFunc(loc, func(r rune) bool { return r <= ' ' }))
		ref, err := url.Parse(cleaned)
		if err != nil || site.ResolveReference(ref).Host != site.Host || ref.Scheme != "" {
			t.Errorf("%s: Location %q leaves the site", what, loc)
		}
	}
	bad := []string{"//evil.test", `/\evil.test`, "/\t/evil.test", "/\r\n/evil.test", `\\evil.test`, "https://evil.test",
		"http:/evil.test", " /x", "/x\x00", "javascript:alert(1)", "///evil.test", "/\x0b/evil.test"}
	for _, next := range bad {
		p := b.get("/signin?next="+url.QueryEscape(next)).expect(t, 303, "/notifications")
		staysOnSite("GET /signin?next="+next, p.Location)
		p = b.post("/signin", url.Values{"email": {emailFor("Ada")}, "password": {goodPassword}, "next": {next}}).expect(t, 303, "/notifications")
		staysOnSite("POST /signin next="+next, p.Location)
		// Signed out, the form carries the safe value on.
		out.get("/signin?next="+url.QueryEscape(next)).expect(t, 200, "").contains(t, `name="next" value="/notifications"`)
		out.get("/signup?next="+url.QueryEscape(next)).expect(t, 200, "").contains(t, `name="next" value="/notifications"`)
	}
	// The raw query, as a link would carry it: %09 decodes to a tab.
	b.get("/signin?next=/%09/evil.test").expect(t, 303, "/notifications")
	b.get("/signin?next=/%0d%0a/evil.test").expect(t, 303, "/notifications")

	good := map[string]string{
		"/notifications":   "/notifications",
		"/org?tab=teams#x": "/org?tab=teams#x",
		"/%2F%2Fevil.test": "/%2F%2Fevil.test", // a path of this site
		"/.//evil.test":    "/evil.test",
	}
	for next, want := range good {
		p := b.get("/signin?next="+url.QueryEscape(next)).expect(t, 303, want)
		staysOnSite("GET /signin?next="+next, p.Location)
		p = b.post("/signin", url.Values{"email": {emailFor("Ada")}, "password": {goodPassword}, "next": {next}}).expect(t, 303, want)
		staysOnSite("POST /signin next="+next, p.Location)
	}
	// Signing up carries next the same way.
	out.post("/signup", url.Values{"name": {"Bob"}, "email": {emailFor("Bob")}, "password": {goodPassword}, "next": {"/\t/evil.test"}}).
		expect(t, 303, "/notifications")
}

// TestEveryResponseSaysNoSniff: whatever page or asset answers, and
// however, the browser is told not to guess the content type (the outer
// middleware of the composed handler says it; the API's answers are
// checked in internal/server).
func TestEveryResponseSaysNoSniff(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	for _, c := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"GET", "/", nil, 303},
		{"GET", "/signin", nil, 200},
		{"GET", "/notifications", nil, 303},
		{"POST", "/signin", "", 422},
		{"GET", "/assets/style.css", nil, 200},
		{"GET", "/assets/app.js", nil, 200},
		{"GET", "/assets/nope.css", nil, 404},
		{"GET", "/no-such-page", nil, 404},
	} {
		res := a.call(c.method, c.path, "", c.body)
		if res.Status != c.status {
			t.Errorf("%s %s: status %d, want %d: %.200s", c.method, c.path, res.Status, c.status, res.Raw)
		}
		if got := res.Header.Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
			t.Errorf("%s %s: X-Content-Type-Options %q, want nosniff", c.method, c.path, got)
		}
	}
}

// TestAssetsListNoDirectory: the assets are served one file at a time; a
// directory, or a file that is not there, is the dashboard's 404 page,
// which lists nothing and is not cached like an asset.
func TestAssetsListNoDirectory(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	for _, path := range []string{"/assets/", "/assets/nope/", "/assets/nope.css", "/assets/style.css/", "/assets/%2e%2e/"} {
		res := a.call("GET", path, "", nil)
		if res.Status != 404 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(res.Raw, "There is nothing at ") {
			t.Errorf("GET %s: %d %q, want the 404 page: %.300s", path, res.Status, res.Header.Get("Content-Type"), res.Raw)
		}
		// A directory index (http.FileServer's) is a <pre> of relative links
		// to the files; the page's own links are absolute.
		listed := strings.Contains(res.Raw, "<pre>")
		for _, name := range []string{"style.css", "app.js", "perch.svg"} {
			listed = listed || strings.Contains(res.Raw, `href="`+name+`"`)
		}
		if listed || res.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: %v %s", path, res.Header, res.Raw)
		}
	}
	res := expect(t, a.call("GET", "/assets/style.css", "", nil), 200)
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/css") || !strings.Contains(res.Raw, "{") {
		t.Fatalf("style.css: %q %.100s", ct, res.Raw)
	}
	if res.Header.Get("Cache-Control") != "public, max-age=3600" {
		t.Fatalf("style.css: Cache-Control %q", res.Header.Get("Cache-Control"))
	}
	if ct := a.call("GET", "/assets/app.js", "", nil).Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Fatalf("app.js: Content-Type %q", ct)
	}
}

// TestDashboardConnectsOnlyToItsOwnOrigin: the pages' connect-src is this
// server, over HTTP and over the WebSocket, and no other host.
func TestDashboardConnectsOnlyToItsOwnOrigin(t *testing.T) {
	t.Parallel()
	for base, want := range map[string]string{
		"http://perch.test":          "connect-src 'self' ws://perch.test;",
		"https://perch.example.com":  "connect-src 'self' wss://perch.example.com;",
		"http://127.0.0.1:8080":      "connect-src 'self' ws://127.0.0.1:8080;",
		"https://perch.example.com/": "connect-src 'self' wss://perch.example.com;",
	} {
		a := newSite(t, storetest.New(t, store.SQLite), func(o *server.Options) { o.BaseURL = base })
		csp := a.call("GET", "/signin", "", nil).Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, want) || strings.Contains(csp, " ws: ") || strings.Contains(csp, "wss:;") {
			t.Errorf("base %s: CSP %q, want %q", base, csp, want)
		}
	}
}
