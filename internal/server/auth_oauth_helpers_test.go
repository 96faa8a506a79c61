package server

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/apitest"
	"github.com/perch-dev/perch/internal/store"
)

// fakeProviders are a fake GitHub and a real OpenID provider in-process,
// which withProviders starts and configures a server for.
type fakeProviders struct {
	github *apitest.GitHub
	google *apitest.Google
}

// withProviders starts the providers, on the clock of the server whose
// options it adjusts, and configures the server for them.
func withProviders(t testing.TB, p *fakeProviders) func(*Options) {
	return func(o *Options) {
		p.github = apitest.StartGitHub(t, o.BaseURL)
		p.google = apitest.StartGoogle(t, o.Now)
		o.SSO.GitHub = GitHubApp{ClientID: p.github.ClientID, ClientSecret: p.github.ClientSecret, URL: p.github.URL, APIURL: p.github.URL}
		cfg := p.google.Config()
		o.SSO.Google = GoogleApp{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Issuer: cfg.Issuer}
	}
}

// newOAuthAPI is newAPI with both providers configured.
func newOAuthAPI(t testing.TB, s *store.Store) (*api, *fakeProviders) {
	p := &fakeProviders{}
	return newAPI(t, s, withProviders(t, p)), p
}

// browser is a person's browser on the API: it keeps cookies (by the
// public address, http://perch.test) and follows the provider's pages.
type browser struct {
	a   *api
	jar *cookiejar.Jar
	// site is what Sec-Fetch-Site says of the requests that start a
	// sign-in: "" (none sent), "same-origin" or "cross-site".
	site string
}

func (a *api) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{a: a, jar: jar}
}

func perchURL(path string) *url.URL {
	u, _ := url.Parse("http://perch.test" + path)
	return u
}

// get sends a GET with the browser's cookies for path and keeps the ones
// the answer sets.
func (b *browser) get(path string, headers ...string) *response {
	b.a.t.Helper()
	var pairs []string
	for _, c := range b.jar.Cookies(perchURL(path)) {
		pairs = append(pairs, c.Name+"="+c.Value)
	}
	if len(pairs) > 0 {
		headers = append(headers, "Cookie", strings.Join(pairs, "; "))
	}
	res := b.a.call("GET", path, "", nil, headers...)
	b.jar.SetCookies(perchURL(path), (&http.Response{Header: res.Header}).Cookies())
	return res
}

// cookie is the value of the browser's cookie name for path, or "".
func (b *browser) cookie(name, path string) string {
	for _, c := range b.jar.Cookies(perchURL(path)) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// session is the dashboard's access cookie, or "".
func (b *browser) session() string { return b.cookie(perch.SessionCookie, "/") }

// setSession signs the browser in as the dashboard does.
func (b *browser) setSession(access string) {
	b.jar.SetCookies(perchURL("/"), []*http.Cookie{{Name: perch.SessionCookie, Value: access, Path: "/"}})
}

// start opens a start route and returns where it sends the browser.
func (b *browser) start(path string) *url.URL {
	b.a.t.Helper()
	var headers []string
	if b.site != "" {
		headers = []string{"Sec-Fetch-Site", b.site}
	}
	res := expect(b.a.t, b.get(path, headers...), http.StatusFound)
	to, err := url.Parse(res.Header.Get("Location"))
	if err != nil || to.Scheme != "http" || !strings.HasPrefix(to.Host, "127.0.0.1:") {
		b.a.t.Fatalf("%s sent the browser to %q, not to the provider", path, res.Header.Get("Location"))
	}
	return to
}

// atProvider visits the provider's page to, which approves (or refuses)
// at once, and returns the path on Perch it sends the browser back to.
func (b *browser) atProvider(to *url.URL) string {
	b.a.t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(to.String())
	if err != nil {
		b.a.t.Fatal(err)
	}
	res.Body.Close()
	back, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || err != nil || back.Host != "perch.test" {
		b.a.t.Fatalf("the provider answered %d to %s", res.StatusCode, res.Header.Get("Location"))
	}
	return back.RequestURI()
}

// signIn goes through a whole sign-in from the start route path and
// returns the callback's answer and path.
func (b *browser) signIn(path string) (*response, string) {
	b.a.t.Helper()
	back := b.atProvider(b.start(path))
	return b.get(back), back
}

// landed checks that res sends the browser to want and returns the
// session cookie it has then.
func (b *browser) landed(res *response, want string) string {
	b.a.t.Helper()
	expect(b.a.t, res, http.StatusFound)
	if got := res.Header.Get("Location"); got != want {
		b.a.t.Fatalf("sent to %q, want %q", got, want)
	}
	return b.session()
}

// refused checks that res sends the browser to page ("/signin" or
// "/profile") with a message, and returns it.
func refused(tb testing.TB, res *response, page string) string {
	tb.Helper()
	expect(tb, res, http.StatusFound)
	to, err := url.Parse(res.Header.Get("Location"))
	if err != nil || to.Path != page || to.Host != "" || to.Query().Get("error") == "" {
		tb.Fatalf("sent to %q, want %s?error=…", res.Header.Get("Location"), page)
	}
	return to.Query().Get("error")
}

// me is the signed-in user of a session cookie.
func (b *browser) me(access string) map[string]any {
	b.a.t.Helper()
	return expect(b.a.t, b.a.call("GET", "/api/v1/users/me", "", nil, "Cookie", perch.SessionCookie+"="+access), http.StatusOK).Data()
}

// githubUser is a GitHub account whose primary address is email,
// verified or not.
func githubUser(id int64, login, email string, verified bool) apitest.GitHubUser {
	return apitest.GitHubUser{ID: id, Login: login, Name: strings.ToUpper(login[:1]) + login[1:], Emails: []apitest.GitHubEmail{
		{Email: login + "@users.noreply.github.com", Verified: true},
		{Email: email, Primary: true, Verified: verified},
	}}
}
