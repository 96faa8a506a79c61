package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/apitest"
	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// oauthSite serves a site (SQLite) whose public address is its listener's,
// with sign-in with GitHub (a fake) and Google (an OpenID provider
// in-process) configured.
func oauthSite(t *testing.T) (*site, *apitest.GitHub, *apitest.Google) {
	t.Helper()
	ln := listen(t)
	base := "http://" + ln.Addr().String()
	var gh *apitest.GitHub
	var google *apitest.Google
	a := newSiteOn(t, ln, storetest.New(t, store.SQLite), func(o *server.Options) {
		o.BaseURL = base
		gh = apitest.StartGitHub(t, base)
		google = apitest.StartGoogle(t, o.Now)
		o.SSO.GitHub = server.GitHubApp{ClientID: gh.ClientID, ClientSecret: gh.ClientSecret, URL: gh.URL, APIURL: gh.URL}
		cfg := google.Config()
		o.SSO.Google = server.GoogleApp{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Issuer: cfg.Issuer}
	})
	return a, gh, google
}

// viaProvider follows a sign-in from the start link path through the
// provider's page (which answers at once) to the callback, and returns the
// callback's answer.
func (b *browser) viaProvider(path string) *page {
	b.t.Helper()
	to := b.get(path).expect(b.t, http.StatusFound, "").Location
	res, err := b.http.Get(to)
	if err != nil {
		b.t.Fatal(err)
	}
	res.Body.Close()
	back := res.Header.Get("Location")
	if res.StatusCode != http.StatusFound || !strings.HasPrefix(back, b.ts.URL+"/api/v1/auth/") {
		b.t.Fatalf("the provider answered %d, to %q", res.StatusCode, back)
	}
	return b.get(strings.TrimPrefix(back, b.ts.URL))
}

// The sign-in and sign-up pages offer the configured providers, with the
// page asked for; a server without them offers none.
func TestDashboardOffersSignInProviders(t *testing.T) {
	t.Parallel()
	a, _, _ := oauthSite(t)
	b := newBrowser(t, a.ts)
	b.get("/signin?next="+url.QueryEscape("/org?tab=teams")).expect(t, 200, "").
		contains(t, `href="/api/v1/auth/github?redirect=%2forg%3ftab%3dteams"`, "Continue with GitHub", "Continue with Google")
	b.get("/signup").expect(t, 200, "").contains(t, `href="/api/v1/auth/google?redirect=%2fnotifications"`, "Continue with Google")
	// An invitation joins the inviter's organisation: only a password
	// sign-up does that.
	olive := a.register("Olive")
	inv := expect(t, a.call("POST", "/api/v1/org/invitations", olive.Access, map[string]string{"email": "grace@example.com"}), 201).Data()
	link, err := url.Parse(inv["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if p := b.get("/signup?invitation_token=" + url.QueryEscape(link.Query().Get("token"))); strings.Contains(p.Body, "Continue with") {
		t.Fatal("the invitation's sign-up offers providers")
	}
	// A dead link is no invitation: the page says so, and offers every way
	// to an account of one's own.
	b.get("/signup?invitation_token=pin_x").expect(t, 200, "").contains(t, "This invitation link is invalid", "Continue with Google")

	plain := newBrowser(t, newSite(t, storetest.New(t, store.SQLite)).ts)
	for _, path := range []string{"/signin", "/signup"} {
		if p := plain.get(path).expect(t, 200, ""); strings.Contains(p.Body, "Continue with") || strings.Contains(p.Body, "/api/v1/auth/github") {
			t.Fatalf("%s offers a provider that is not configured", path)
		}
	}
}

// A sign-in with GitHub lands on the page asked for, signed in; one that
// did not succeed lands on the sign-in page, which shows why (escaped).
func TestDashboardSignInWithGitHub(t *testing.T) {
	t.Parallel()
	a, gh, _ := oauthSite(t)
	gh.SignInAs(apitest.GitHubUser{ID: 31, Login: "hopper", Name: "Grace Hopper", Emails: []apitest.GitHubEmail{
		{Email: "grace.hopper@example.com", Primary: true, Verified: true}}})
	b := newBrowser(t, a.ts)
	b.viaProvider("/api/v1/auth/github?redirect="+url.QueryEscape("/org")).expect(t, 302, "/org")
	b.get("/org").expect(t, 200, "").contains(t, "Grace Hopper")

	gh.Deny()
	other := newBrowser(t, a.ts)
	to := other.viaProvider("/api/v1/auth/github").expect(t, 302, "").Location
	if !strings.HasPrefix(to, "/signin?error=") {
		t.Fatalf("sent to %q", to)
	}
	other.get(to).expect(t, 200, "").contains(t, `role="alert">You did not allow Perch to use your GitHub account`)
	other.get("/signin?error="+url.QueryEscape("<script>alert(1)</script>")).expect(t, 200, "").
		contains(t, "&lt;script&gt;alert(1)&lt;/script&gt;")
}

// The profile lists the linked providers with a button that removes one
// (refused for the last way to sign in, with the API's message), and links
// the others.
func TestDashboardProfileSignInMethods(t *testing.T) {
	t.Parallel()
	a, gh, google := oauthSite(t)
	gh.SignInAs(apitest.GitHubUser{ID: 32, Login: "lovelace", Emails: []apitest.GitHubEmail{{Email: "ada.l@example.com", Primary: true, Verified: true}}})
	b := newBrowser(t, a.ts)
	b.viaProvider("/api/v1/auth/github").expect(t, 302, "/notifications")
	b.get("/profile").expect(t, 200, "").contains(t, "Sign-in methods", "<strong>GitHub</strong>", "ada.l@example.com",
		`action="/profile/identities/github/remove"`, `href="/api/v1/auth/google?redirect=/profile"`, "Link Google")

	b.post("/profile/identities/github/remove", url.Values{}).expect(t, 409, "").contains(t, "GitHub is the only way you sign in")

	google.SignInAs("g-ada", "ada.l@example.com", true)
	b.viaProvider("/api/v1/auth/google?redirect=/profile").expect(t, 302, "/profile")
	p := b.get("/profile").expect(t, 200, "").contains(t, "<strong>Google</strong>", `action="/profile/identities/google/remove"`)
	if strings.Contains(p.Body, "Link Google") || strings.Contains(p.Body, "Link GitHub") {
		t.Fatal("the profile offers to link what is linked")
	}
	b.post("/profile/identities/github/remove", url.Values{}).expect(t, 303, "/profile")
	b.get("/profile").expect(t, 200, "").contains(t, "GitHub is no longer linked to your account.", "Link GitHub")

	// A refusal of a link comes back to the profile with its message.
	b.get("/profile?error="+url.QueryEscape("This GitHub account is already linked to another Perch account.")).expect(t, 200, "").
		contains(t, `role="alert">This GitHub account is already linked to another Perch account.`)
}

// In Chromium: "Continue with GitHub" on the sign-in page goes to GitHub
// (the fake, which approves at once) and comes back signed in, on the
// live feed; the profile then lists GitHub.
func TestSignInWithGitHubInTheBrowser(t *testing.T) {
	t.Parallel()
	a, gh, _ := oauthSite(t)
	gh.SignInAs(apitest.GitHubUser{ID: 33, Login: "kathy", Name: "Katherine Johnson", Emails: []apitest.GitHubEmail{
		{Email: "katherine@example.com", Primary: true, Verified: true}}})
	b := newChrome(t, a.ts.URL)
	b.open("/signin", `a[href^="/api/v1/auth/github"]`)
	b.checkPage("sign-in with providers")
	b.screenshot("signin-providers")
	b.click(`a[href^="/api/v1/auth/github"]`)
	b.waitLive()
	if got, want := b.location(), a.ts.URL+"/notifications"; got != want {
		t.Fatalf("after the sign-in the browser is on %s, want %s", got, want)
	}
	if name := b.text(".me"); !strings.Contains(name, "Katherine Johnson") {
		t.Fatalf("signed in as %q", name)
	}
	b.open("/profile", "#signin-title")
	if got := b.text(".identities"); !strings.Contains(got, "GitHub") || !strings.Contains(got, "katherine@example.com") {
		t.Fatalf("the profile lists %q", got)
	}
	b.checkPage("profile with providers")
	b.screenshot("profile-providers")
	if problems := b.consoleProblems(); len(problems) > 0 {
		t.Fatalf("the pages reported %v", problems)
	}
}
