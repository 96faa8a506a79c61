package server

import (
	"net/url"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestDashboardRedirectsOnlyWithinTheSite offers the sign-in's next the
// known ways out of the site: each is answered with the feed, and what is
// followed stays on the site however a browser reads the Location.
func TestDashboardRedirectsOnlyWithinTheSite(t *testing.T) {
	a := newAPI(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.live())
	signUpInBrowser(t, b, "Ada")
	out := newBrowser(t, a.live()) // signed out
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
