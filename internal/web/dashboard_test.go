package web_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/web"
)

// browser is a cookie-keeping HTTP client of the dashboard that does not
// follow redirects, so tests see them. It sends no Origin or Sec-Fetch-Site
// unless told to, as non-browser clients do.
type browser struct {
	t    *testing.T
	ts   *httptest.Server
	http *http.Client
}

func newBrowser(t *testing.T, ts *httptest.Server) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, ts: ts, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	Status   int
	Location string
	Body     string
	Cookies  []*http.Cookie
}

func (b *browser) do(method, path string, form url.Values, headers ...string) *page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.ts.URL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := b.http.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return &page{Status: res.StatusCode, Location: res.Header.Get("Location"), Body: string(raw), Cookies: res.Cookies()}
}

func (b *browser) get(path string) *page { return b.do("GET", path, nil) }
func (b *browser) post(path string, form url.Values, headers ...string) *page {
	return b.do("POST", path, form, headers...)
}

func (p *page) expect(t *testing.T, status int, location string) *page {
	t.Helper()
	if p.Status != status || (location != "" && p.Location != location) {
		t.Fatalf("status %d, location %q; want %d %q; body: %.400s", p.Status, p.Location, status, location, p.Body)
	}
	return p
}

func (p *page) contains(t *testing.T, texts ...string) *page {
	t.Helper()
	for _, s := range texts {
		if !strings.Contains(p.Body, s) {
			t.Fatalf("the page lacks %q: %.2000s", s, p.Body)
		}
	}
	return p
}

func signUpInBrowser(t *testing.T, b *browser, name string) {
	t.Helper()
	b.post("/signup", url.Values{"name": {name}, "email": {emailFor(name)}, "password": {goodPassword}}).expect(t, 303, "/notifications")
}

func TestDashboardSendsVisitorsToSignInAndBack(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	b.get("/").expect(t, 303, "/signin")
	b.get("/org?tab=teams").expect(t, 303, "/signin?next=%2Forg%3Ftab%3Dteams")
	a.register("Ada")
	b.post("/signin", url.Values{"email": {emailFor("Ada")}, "password": {goodPassword}, "next": {"/org?tab=teams"}}).expect(t, 303, "/org?tab=teams")
	b.get("/org").expect(t, 200, "").contains(t, "<h1>Ada", "Members")

	// Only paths of this site are followed after sign-in.
	for _, next := range []string{"//evil.example/x", "https://evil.example/", `/\evil.example`} {
		b.post("/signin", url.Values{"email": {emailFor("Ada")}, "password": {goodPassword}, "next": {next}}).expect(t, 303, "/notifications")
	}
}

func TestDashboardFormErrorsKeepWhatWasTypedButNotPasswords(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	p := b.post("/signup", url.Values{"name": {"Ada"}, "email": {"not-an-address"}, "password": {"short"}})
	p.expect(t, 422, "").contains(t, `value="Ada"`, `value="not-an-address"`, `class="problem"`)
	if strings.Contains(p.Body, `value="short"`) {
		t.Fatal("the password was put back into the form")
	}
	b.post("/signin", url.Values{"email": {"nobody@example.com"}, "password": {"wrong password"}}).expect(t, 401, "").
		contains(t, "The e-mail address or password is incorrect.")
}

func TestDashboardSessionCookies(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite), func(o *server.Options) { o.BaseURL = "https://perch.test" })
	b := newBrowser(t, a.ts)
	p := b.post("/signup", url.Values{"name": {"Ada"}, "email": {emailFor("Ada")}, "password": {goodPassword}})
	p.expect(t, 303, "/notifications")
	got := map[string]*http.Cookie{} // by name and path
	for _, c := range p.Cookies {
		if c.Name == web.SessionCookie || c.Name == web.RefreshCookie {
			got[c.Name+";"+c.Path] = c
		}
	}
	// The access token goes everywhere; the refresh token only to
	// /session/refresh and /session/signout; the refresh cookie of "/" that
	// older versions set is removed.
	for key, path := range map[string]string{web.SessionCookie + ";/": "/", web.RefreshCookie + ";/session": "/session"} {
		c := got[key]
		if c == nil || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode || c.Path != path || c.Value == "" || c.MaxAge <= 0 {
			t.Fatalf("cookie %s = %+v; want HttpOnly, Secure, SameSite=Lax, Path=%s", key, c, path)
		}
	}
	if c := got[web.RefreshCookie+";/"]; c == nil || c.MaxAge >= 0 || c.Value != "" {
		t.Fatalf("the refresh cookie of Path=/ is not removed: %+v", c)
	}
	if len(got) != 3 {
		t.Fatalf("session cookies set: %v", p.Cookies)
	}
	if !strings.HasPrefix(got[web.SessionCookie+";/"].Value, perch.AccessTokenPrefix) {
		t.Fatalf("the session cookie holds %q", got[web.SessionCookie+";/"].Value)
	}
}

// sentCookie is the value of the cookie named name that the browser sends
// with a request to path, or "".
func (b *browser) sentCookie(path, name string) string {
	u, _ := url.Parse(b.ts.URL + path)
	for _, c := range b.http.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func TestDashboardRenewsAnExpiredSession(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	signUpInBrowser(t, b, "Ada")
	for _, path := range []string{"/", "/profile", "/api/v1/notifications", "/ws", "/sessions", "/signout"} {
		if b.sentCookie(path, web.RefreshCookie) != "" {
			t.Errorf("the refresh token is sent to %s", path)
		}
	}
	for _, path := range []string{"/session/refresh", "/session/signout"} {
		if b.sentCookie(path, web.RefreshCookie) == "" {
			t.Errorf("the refresh token is not sent to %s", path)
		}
	}
	renewed := func(p *page) {
		t.Helper()
		names := map[string]bool{}
		for _, c := range p.Cookies {
			if c.Value != "" {
				names[c.Name+";"+c.Path] = true
			}
		}
		if !names[web.SessionCookie+";/"] || !names[web.RefreshCookie+";/session"] {
			t.Fatalf("the session was not renewed: %v", p.Cookies)
		}
	}
	for _, c := range b.get("/profile").expect(t, 200, "").Cookies {
		if c.Name == web.SessionCookie || c.Name == web.RefreshCookie {
			t.Fatalf("session cookies set while the session was fresh: %v", c)
		}
	}

	// A page renews through /session/refresh, with a form its script posts
	// at once, and goes on.
	a.clock.Advance(perch.AccessTokenTTL + time.Minute)
	b.get("/profile").expect(t, 200, "").contains(t, `<form class="panel" method="post" action="/session/refresh?next=%2fprofile" data-submit-at-once>`)
	p := b.post("/session/refresh?next=%2Fprofile", nil).expect(t, 303, "/profile")
	renewed(p)
	b.get("/profile").expect(t, 200, "").contains(t, emailFor("Ada"))

	// A form post goes there and back with 307: the browser posts it again.
	a.clock.Advance(perch.AccessTokenTTL + time.Minute)
	team := url.Values{"name": {"On call"}}
	p = b.post("/org/teams", team).expect(t, 307, "/session/refresh?repeat=%2Forg%2Fteams")
	renewed(b.post(p.Location, team).expect(t, 307, "/org/teams"))
	b.post("/org/teams", team).expect(t, 303, "/org")
	b.get("/org").expect(t, 200, "").contains(t, "On call")

	// The sign-in page, visited with an expired session, renews it too.
	a.clock.Advance(perch.AccessTokenTTL + time.Minute)
	b.get("/signin?next=%2Forg").expect(t, 200, "").contains(t, `action="/session/refresh?next=%2forg"`)
	b.post("/session/refresh?next=%2Forg", nil).expect(t, 303, "/org")

	// The page's script renews the same way.
	a.clock.Advance(perch.AccessTokenTTL + time.Minute)
	renewed(b.post("/session/refresh", nil).expect(t, 204, ""))
	b.do("GET", "/api/v1/notifications", nil).expect(t, 200, "")

	// Signing out ends the session on the server too.
	b.post("/session/signout", nil).expect(t, 303, "/signin")
	b.get("/profile").expect(t, 303, "/signin?next=%2Fprofile")
	b.post("/session/refresh", nil).expect(t, 401, "")
}

func TestDashboardSessionThatEndedElsewhere(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	signUpInBrowser(t, b, "Ada")
	refresh := b.sentCookie("/session/refresh", web.RefreshCookie)
	expect(t, a.call("POST", "/api/v1/auth/logout", "", map[string]string{"refresh_token": refresh}), 204)
	a.clock.Advance(perch.AccessTokenTTL + time.Minute)
	// The renewal fails: to sign in, and back to the page after.
	b.get("/profile").expect(t, 200, "").contains(t, "data-submit-at-once")
	b.post("/session/refresh?next=%2Fprofile", nil).expect(t, 303, "/signin?next=%2Fprofile")
	if b.sentCookie("/profile", web.SessionCookie) != "" || b.sentCookie("/session/refresh", web.RefreshCookie) != "" {
		t.Fatal("the cookies of the ended session were kept")
	}
	b.get("/profile").expect(t, 303, "/signin?next=%2Fprofile")
	// A form post whose renewal fails goes to sign in.
	signUpInBrowser(t, b, "Bob")
	refresh = b.sentCookie("/session/refresh", web.RefreshCookie)
	expect(t, a.call("POST", "/api/v1/auth/logout", "", map[string]string{"refresh_token": refresh}), 204)
	a.clock.Advance(perch.AccessTokenTTL + time.Minute)
	p := b.post("/org/teams", url.Values{"name": {"On call"}}).expect(t, 307, "/session/refresh?repeat=%2Forg%2Fteams")
	b.post(p.Location, url.Values{"name": {"On call"}}).expect(t, 303, "/signin")
}

// TestDashboardMovesAnOldRefreshCookie: a browser signed in before the
// refresh cookie moved under /session has it on "/"; its first renewal
// puts it under /session and removes the old one.
func TestDashboardMovesAnOldRefreshCookie(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	ada := a.register("Ada")
	u, _ := url.Parse(b.ts.URL + "/")
	b.http.Jar.SetCookies(u, []*http.Cookie{
		{Name: web.SessionCookie, Value: ada.Access, Path: "/", HttpOnly: true},
		{Name: web.RefreshCookie, Value: ada.Refresh, Path: "/", HttpOnly: true},
	})
	b.get("/profile").expect(t, 200, "").contains(t, emailFor("Ada"))
	a.clock.Advance(perch.AccessTokenTTL + time.Minute)
	b.get("/profile").expect(t, 200, "").contains(t, "data-submit-at-once")
	b.post("/session/refresh?next=%2Fprofile", nil).expect(t, 303, "/profile")
	if got := b.sentCookie("/profile", web.RefreshCookie); got != "" {
		t.Fatalf("the old refresh cookie is still sent everywhere: %q", got)
	}
	if got := b.sentCookie("/session/refresh", web.RefreshCookie); got == "" || got == ada.Refresh {
		t.Fatalf("the refresh cookie under /session is %q", got)
	}
	b.get("/profile").expect(t, 200, "").contains(t, emailFor("Ada"))
	// A page served before the move posts sign-out to /signout, which sends
	// it on to where the refresh cookie goes.
	b.post("/signout", nil).expect(t, 307, "/session/signout")
	b.post("/session/signout", nil).expect(t, 303, "/signin")
	b.post("/session/refresh", nil).expect(t, 401, "")
}

func TestDashboardRefusesCrossOriginPosts(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	signUpInBrowser(t, b, "Ada")
	cross := []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}
	b.post("/api-tokens", url.Values{"label": {"stolen"}}, cross...).expect(t, 403, "")
	b.post("/session/signout", nil, cross...).expect(t, 403, "")
	b.post("/session/refresh", nil, cross...).expect(t, 403, "")
	// The API, signed in by the cookie, too; reading stays allowed.
	b.do("POST", "/api/v1/notifications/read", nil, cross...).expect(t, 403, "")
	b.do("GET", "/api/v1/notifications", nil, cross...).expect(t, 200, "")
	// The same from the dashboard itself works.
	same := []string{"Origin", b.ts.URL, "Sec-Fetch-Site", "same-origin"}
	b.post("/api-tokens", url.Values{"label": {"mine"}}, same...).expect(t, 200, "").contains(t, `id="raw-api-token"`)
}

func TestDashboardShowsASecretOnlyOnce(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	signUpInBrowser(t, b, "Ada")
	p := b.post("/webhook-tokens", url.Values{"label": {"Prod"}, "sender": {"monitoring"}, "scope": {"user"}}).expect(t, 200, "")
	p.contains(t, `id="receiver-url"`, "http://perch.test/webhooks/datadog?token=whk_", "-X POST &#39;http://perch.test/webhooks/datadog?token=whk_")
	start := strings.Index(p.Body, "whk_")
	raw := p.Body[start : start+strings.IndexAny(p.Body[start:], `"<&'`)]
	list := b.get("/webhook-tokens").expect(t, 200, "").contains(t, "Prod", `<td data-label="Sender">Datadog</td>`)
	if strings.Contains(list.Body, raw) {
		t.Fatal("the raw webhook token is shown again")
	}
	// It is a working token of that sender.
	res := a.call("POST", "/webhooks/monitoring?token="+raw, "", map[string]any{"title": "Disk full", "alert_type": "error"})
	expect(t, res, 200)

	// Each sender by the name people know it by, never the contract's
	// stand-in: GitHub, not code-host.
	b.post("/webhook-tokens", url.Values{"label": {"Repos"}, "sender": {"code-host"}, "scope": {"user"}}).expect(t, 200, "").
		contains(t, "http://perch.test/webhooks/github?token=whk_")
	b.get("/webhook-tokens").expect(t, 200, "").contains(t, `<td data-label="Sender">GitHub</td>`).lacks(t, ">code-host<", "/webhooks/code-host")

	b.post("/webhook-tokens", url.Values{"label": {""}, "sender": {"inbound"}}).expect(t, 400, "").contains(t, `class="problem"`)
}

// TestDashboardScheduledNotifications: what a webhook token scheduled is
// listed beside the tokens, soonest first, and Cancel takes it back: it
// leaves the list and the API's (that a cancelled one is never delivered is
// internal/server's TestScheduledNotificationCancelledByItsTokensOwnerOnly).
func TestDashboardScheduledNotifications(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	ada := a.register("Ada")
	b := newBrowser(t, a.ts)
	b.post("/signin", url.Values{"email": {ada.Email}, "password": {goodPassword}}).expect(t, 303, "/notifications")
	b.get("/webhook-tokens").expect(t, 200, "").lacks(t, "Scheduled notifications")
	p := b.post("/webhook-tokens", url.Values{"label": {"Reminders"}, "sender": {"inbound"}, "scope": {"user"}}).expect(t, 200, "")
	start := strings.Index(p.Body, "whk_")
	raw := p.Body[start : start+strings.IndexAny(p.Body[start:], `"<&'`)]
	for _, e := range []map[string]any{{"title": "Standup later", "delay": "2h"}, {"title": "Standup soon", "delay": "1h", "tab": "Team"}} {
		expect(t, a.call("POST", "/webhooks/inbound?token="+raw, "", e), 200)
	}
	list := b.get("/webhook-tokens").expect(t, 200, "").contains(t, "Scheduled notifications", "<strong>Standup soon</strong>", `<td data-label="Tab">Team</td>`, `<td class="muted" data-label="Token">Reminders</td>`)
	if strings.Index(list.Body, "Standup soon") > strings.Index(list.Body, "Standup later") {
		t.Error("the scheduled notifications are not soonest first")
	}
	pending := expect(t, a.call("GET", "/api/v1/notifications/scheduled", ada.Access, nil), 200).List()
	if len(pending) != 2 || pending[0]["title"] != "Standup soon" {
		t.Fatalf("scheduled: %+v", pending)
	}
	soon := pending[0]["id"].(string)
	list.contains(t, `action="/webhook-tokens/scheduled/`+soon+`/cancel"`)

	b.post("/webhook-tokens/scheduled/"+soon+"/cancel", nil).expect(t, 303, "/webhook-tokens")
	b.get("/webhook-tokens").expect(t, 200, "").contains(t, "will not be delivered", "Standup later").lacks(t, "<strong>Standup soon</strong>")
	pending = expect(t, a.call("GET", "/api/v1/notifications/scheduled", ada.Access, nil), 200).List()
	if len(pending) != 1 || pending[0]["title"] != "Standup later" {
		t.Errorf("after the cancel: %+v", pending)
	}
	// Once gone, or never the user's, there is nothing to cancel.
	b.post("/webhook-tokens/scheduled/"+soon+"/cancel", nil).expect(t, 404, "")
}

func TestDashboardOrganisationForms(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	signUpInBrowser(t, b, "Ada")
	b.post("/org/teams", url.Values{"name": {"On call"}}).expect(t, 303, "/org")
	p := b.post("/org/invitations", url.Values{"email": {"grace@example.com"}, "role": {"member"}}).expect(t, 200, "")
	p.contains(t, "We sent an invitation to grace@example.com.", `id="invite-link"`, "/invitations/accept?token=inv_")
	b.get("/org").expect(t, 200, "").contains(t, "On call", "grace@example.com", "pending")
	b.post("/org/invitations", url.Values{"email": {"nope"}}).expect(t, 400, "").contains(t, `class="alert"`)
	a.mail.WaitFor(t, "grace@example.com")
}

// TestAPIPathsBesideThePages: with the dashboard beside the API (as perch
// serve composes them), every path the API serves reaches it, SCIM's
// included, and answers in its own shape rather than as a page.
func TestAPIPathsBesideThePages(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	for path, want := range map[string]string{
		"/scim/v2/ServiceProviderConfig": "application/scim+json",
		"/scim/v2/Groups":                "application/scim+json",
		"/api/v1/users/me":               "application/json; charset=utf-8",
	} {
		res := a.call("GET", path, "", nil)
		if ct := res.Header.Get("Content-Type"); res.Status != 401 && res.Status != 404 || ct != want {
			t.Errorf("GET %s: %d %q, want the API's answer (%s): %.200s", path, res.Status, ct, want, res.Raw)
		}
	}
}
