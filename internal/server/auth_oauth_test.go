package server

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/apitest"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// A first sign-in with GitHub makes an account and organisation, as
// registration does, with the address GitHub verified and no password, and
// lands on the page asked for, signed in; the start sent the browser to
// GitHub with a state bound to a cookie and a PKCE S256 challenge, which
// the fake's token endpoint checked against the verifier. A later sign-in
// with the same GitHub account comes back to the same Perch account.
func TestOAuthGitHubMakesAnAccount(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		root := a.platformAdmin("Root")
		p.github.SignInAs(githubUser(4242, "octocat", "octo.cat@example.com", true))
		b := a.browser()

		to := b.start("/api/v1/auth/oauth-a?redirect=" + url.QueryEscape("/org?tab=teams"))
		q := to.Query()
		if to.Path != "/login/oauth/authorize" || q.Get("client_id") != p.github.ClientID || q.Get("state") == "" ||
			q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 ||
			q.Get("redirect_uri") != "http://perch.test/api/v1/auth/oauth-a/callback" || !strings.Contains(q.Get("scope"), "user:email") {
			t.Fatalf("sent to %s", to)
		}
		if got := b.cookie(perch.OAuthCookie, "/api/v1/auth/oauth-a/callback"); got != q.Get("state") {
			t.Fatalf("the flow cookie holds %q, want the state %q", got, q.Get("state"))
		}
		back := b.atProvider(to)
		access := b.landed(b.get(back), "/org?tab=teams")
		if p.github.TokenCalls() != 1 || !strings.HasPrefix(access, perch.AccessTokenPrefix) {
			t.Fatalf("token calls %d, session %q", p.github.TokenCalls(), access)
		}
		if b.cookie(perch.OAuthCookie, "/api/v1/auth/oauth-a/callback") != "" || b.cookie(perch.RefreshCookie, perch.RefreshPath) == "" ||
			b.cookie(perch.RefreshCookie, "/") != "" {
			t.Fatalf("cookies after the sign-in: %v", b.jar.Cookies(perchURL("/session/x")))
		}
		// GitHub verified the address, but only Perch's own link proves the
		// mailbox: it is mailed, as at a sign-up with a password.
		me := b.me(access)
		if me["email"] != "octo.cat@example.com" || me["name"] != "Octocat" || me["email_verified"] != false || me["org_role"] != "owner" {
			t.Fatalf("me = %v", me)
		}
		verify := a.mailedToken("octo.cat@example.com", "/verify-email")
		if got := expect(t, a.call("POST", "/api/v1/auth/verify-email", "", map[string]string{"token": verify}), 200).Data(); got["email_verified"] != true {
			t.Fatalf("verified = %v", got)
		}
		ids := expect(t, a.call("GET", "/api/v1/users/me/identities", access, nil), 200).List()
		if len(ids) != 1 || ids[0]["provider"] != "github" || ids[0]["email"] != "octo.cat@example.com" || len(ids[0]) != 3 {
			t.Fatalf("identities = %v", ids)
		}
		// No password works for the account: none was set.
		expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": "octo.cat@example.com", "password": "x"}), 401)
		entries := a.auditEntries(root)
		if e := findAudit(t, entries, perch.AuditRegistered, me["id"].(string)); e["changes"].(map[string]any)["method"] != "github" {
			t.Errorf("registered entry = %v", e)
		}
		if e := findAudit(t, entries, perch.AuditSignedIn, me["id"].(string)); e["changes"].(map[string]any)["method"] != "github" {
			t.Errorf("signed-in entry = %v", e)
		}

		// Again, now with another primary address at GitHub: the link, not
		// the address, finds the account.
		p.github.SignInAs(githubUser(4242, "octocat", "new.address@example.com", true))
		b2 := a.browser()
		res, _ := b2.signIn("/api/v1/auth/github")
		if again := b2.me(b2.landed(res, "/notifications")); again["id"] != me["id"] {
			t.Fatalf("signed in as %v, want %v", again["id"], me["id"])
		}
	})
}

// Google is a real OpenID provider in-process, found by discovery: the
// ID token's signature, audience and nonce are checked, and email_verified
// decides whether the address may be used.
func TestOAuthGoogleMakesAnAccount(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		p.google.SignInAs("108-google-sub", "grace@example.com", true)
		b := a.browser()
		to := b.start("/api/v1/auth/oauth-b?redirect=/plans")
		if q := to.Query(); q.Get("nonce") == "" || q.Get("code_challenge_method") != "S256" || q.Get("state") == "" ||
			q.Get("redirect_uri") != "http://perch.test/api/v1/auth/oauth-b/callback" || !strings.Contains(q.Get("scope"), "openid") {
			t.Fatalf("sent to %s", to)
		}
		access := b.landed(b.get(b.atProvider(to)), "/plans")
		me := b.me(access)
		if me["email"] != "grace@example.com" || me["email_verified"] != false || me["name"] != "grace" {
			t.Fatalf("me = %v", me)
		}
		ids := expect(t, a.call("GET", "/api/v1/users/me/identities", access, nil), 200).List()
		if len(ids) != 1 || ids[0]["provider"] != "google" {
			t.Fatalf("identities = %v", ids)
		}

		// The alias signs in to the same account.
		p.google.SignInAs("108-google-sub", "grace@example.com", true)
		b2 := a.browser()
		res, _ := b2.signIn("/api/v1/auth/google")
		if b2.me(b2.landed(res, "/notifications"))["id"] != me["id"] {
			t.Fatal("the second sign-in made another account")
		}

		// An address Google has not verified makes no account.
		p.google.SignInAs("109-other", "unverified@example.com", false)
		res, _ = a.browser().signIn("/api/v1/auth/google")
		if msg := refused(t, res, "/signin"); !strings.Contains(msg, "Google has not verified your address unverified@example.com") {
			t.Fatalf("message %q", msg)
		}
		if _, _, err := s.UserCredentials(t.Context(), "unverified@example.com"); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Fatalf("an account was made for an unverified address: %v", err)
		}

		// An ID token minted for another nonce (a code from an authorization
		// this sign-in did not start, with no PKCE challenge the provider
		// could hold it to) signs in nobody.
		p.google.SignInAs("110-nonce", "nonce@example.com", true)
		b3 := a.browser()
		to = b3.start("/api/v1/auth/google")
		q := to.Query()
		q.Del("code_challenge")
		q.Del("code_challenge_method")
		q.Set("nonce", "someone-elses")
		to.RawQuery = q.Encode()
		res = b3.get(b3.atProvider(to))
		if msg := refused(t, res, "/signin"); msg != "Perch could not complete the sign-in with Google. Please try again in a minute." {
			t.Fatalf("message %q", msg)
		}
	})
}

// A provider-verified address that matches an account whose address is
// confirmed links to it and signs in; an address the provider has not
// verified never takes over an account (nor makes a second one with the
// same address); and neither does a verified one of an account whose own
// address was never confirmed (whoever registered it may not own it).
func TestOAuthLinksOnlyByVerifiedAddresses(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		root := a.platformAdmin("Root")
		ada := a.register("Ada")
		a.verifyEmail(ada)

		p.github.SignInAs(githubUser(1, "ada-unverified", ada.Email, false))
		res, _ := a.browser().signIn("/api/v1/auth/github")
		if msg := refused(t, res, "/signin"); !strings.Contains(msg, "GitHub has not verified your address "+ada.Email) {
			t.Fatalf("message %q", msg)
		}
		if ids := expect(t, a.call("GET", "/api/v1/users/me/identities", ada.Access, nil), 200).List(); len(ids) != 0 {
			t.Fatalf("an unverified address linked %v to ada", ids)
		}
		// A verified address that is not the primary one counts for nothing.
		u := githubUser(1, "ada-unverified", "other@example.com", false)
		u.Emails = append(u.Emails, apitest.GitHubEmail{Email: ada.Email, Verified: true})
		p.github.SignInAs(u)
		res, _ = a.browser().signIn("/api/v1/auth/github")
		refused(t, res, "/signin")

		p.github.SignInAs(githubUser(2, "ada", strings.ToUpper(ada.Email), true))
		b := a.browser()
		res, _ = b.signIn("/api/v1/auth/github?redirect=/org")
		if me := b.me(b.landed(res, "/org")); me["id"] != ada.ID {
			t.Fatalf("signed in as %v, want ada", me["id"])
		}
		ids := expect(t, a.call("GET", "/api/v1/users/me/identities", ada.Access, nil), 200).List()
		if len(ids) != 1 || ids[0]["provider"] != "github" {
			t.Fatalf("identities = %v", ids)
		}
		if e := findAudit(t, a.auditEntries(root), perch.AuditIdentityLinked, ada.ID); e["changes"].(map[string]any)["provider"] != "github" {
			t.Errorf("linked entry = %v", e)
		}

		// Bob registered but never confirmed his address.
		bob := a.register("Bob")
		p.github.SignInAs(githubUser(3, "bob", bob.Email, true))
		res, _ = a.browser().signIn("/api/v1/auth/github")
		if msg := refused(t, res, "/signin"); !strings.Contains(msg, "not confirmed yet") {
			t.Fatalf("message %q", msg)
		}
		if ids := expect(t, a.call("GET", "/api/v1/users/me/identities", bob.Access, nil), 200).List(); len(ids) != 0 {
			t.Fatalf("identities of bob = %v", ids)
		}
		// A GitHub account with no primary address signs in nowhere.
		p.github.SignInAs(apitest.GitHubUser{ID: 4, Login: "nomail"})
		res, _ = a.browser().signIn("/api/v1/auth/github")
		if msg := refused(t, res, "/signin"); !strings.Contains(msg, "no primary e-mail address") {
			t.Fatalf("message %q", msg)
		}
	})
}

// The state: a callback without the flow cookie, with another state, with
// a state already used, with one expired, or with another provider's, is
// sent back to sign in, and nothing is asked of the provider. Each check
// is what refuses its case: the replay's code is still good at the fake
// for a second exchange only if the state check lets it through, and the
// message says which check refused.
func TestOAuthRefusesBadStates(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		p.github.SignInAs(githubUser(7, "lin", "lin@example.com", true))
		wantBadState := func(res *response) {
			t.Helper()
			if msg := refused(t, res, "/signin"); msg != msgBadState {
				t.Fatalf("message %q, want the bad-state one", msg)
			}
		}

		// No cookie: a callback URL opened in another browser.
		b := a.browser()
		back := b.atProvider(b.start("/api/v1/auth/github"))
		wantBadState(a.browser().get(back))
		// No state at all, though a cookie is there.
		b.start("/api/v1/auth/github")
		wantBadState(b.get("/api/v1/auth/github/callback?code=x"))
		// The cookie of another sign-in in this browser.
		b.start("/api/v1/auth/github")
		wantBadState(b.get(back))
		if n := p.github.TokenCalls(); n != 0 {
			t.Fatalf("%d token calls for refused callbacks", n)
		}

		// Used once, then replayed with the same cookie.
		b = a.browser()
		to := b.start("/api/v1/auth/github")
		state := to.Query().Get("state")
		back = b.atProvider(to)
		b.landed(b.get(back), "/notifications")
		replay := a.browser()
		replay.jar.SetCookies(perchURL("/api/v1/auth/"), []*http.Cookie{{Name: perch.OAuthCookie, Value: state, Path: "/api/v1/auth/"}})
		wantBadState(replay.get(back))
		if n := p.github.TokenCalls(); n != 1 {
			t.Fatalf("%d token calls, want the first only", n)
		}

		// Expired: ten minutes is all a sign-in may take.
		b = a.browser()
		back = b.atProvider(b.start("/api/v1/auth/github"))
		a.clock.Advance(perch.OAuthFlowTTL)
		wantBadState(b.get(back))

		// A GitHub state at Google's callback.
		b = a.browser()
		back = b.atProvider(b.start("/api/v1/auth/github"))
		wantBadState(b.get(strings.Replace(back, "/api/v1/auth/oauth-a/", "/api/v1/auth/oauth-b/", 1)))
		if n := p.github.TokenCalls(); n != 1 {
			t.Fatalf("%d token calls", n)
		}
	})
}

// Where the browser goes afterwards: a path of this site as asked, anything
// else (another host however disguised) the feed.
func TestOAuthRedirectsOnlyToLocalPaths(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		p.github.SignInAs(githubUser(8, "max", "max@example.com", true))
		for _, target := range []string{"//evil.test/x", `/\evil.test`, "https://evil.test/", "/\t/evil.test", "/x\r\nSet-Cookie: a=b", "javascript:alert(1)", "evil.test"} {
			b := a.browser()
			res, _ := b.signIn("/api/v1/auth/github?redirect=" + url.QueryEscape(target))
			b.landed(res, "/notifications")
		}
		b := a.browser()
		res, _ := b.signIn("/api/v1/auth/github?redirect=" + url.QueryEscape("/webhook-tokens?sender=inbound#new"))
		b.landed(res, "/webhook-tokens?sender=inbound#new")
	})
}

// A person who refuses consent at the provider, or a provider that fails,
// is sent back to sign in with a message that says so, and is not signed
// in.
func TestOAuthDeniedConsentAndProviderErrors(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		p.github.Deny()
		b := a.browser()
		res, _ := b.signIn("/api/v1/auth/github?redirect=/org")
		if msg := refused(t, res, "/signin"); !strings.Contains(msg, "You did not allow Perch to use your GitHub account") {
			t.Fatalf("message %q", msg)
		}
		if to, _ := url.Parse(res.Header.Get("Location")); to.Query().Get("next") != "/org" {
			t.Fatalf("the page asked for is lost: %s", to)
		}
		if b.session() != "" || p.github.TokenCalls() != 0 {
			t.Fatal("signed in after a refusal")
		}

		// Another error of the provider's, and a code the provider does not
		// take (the fake refuses one used already).
		p.github.SignInAs(githubUser(9, "kim", "kim@example.com", true))
		b = a.browser()
		to := b.start("/api/v1/auth/github")
		res = b.get("/api/v1/auth/github/callback?error=temporarily_unavailable&state=" + url.QueryEscape(to.Query().Get("state")))
		if msg := refused(t, res, "/signin"); !strings.Contains(msg, "GitHub could not sign you in (temporarily_unavailable)") {
			t.Fatalf("message %q", msg)
		}
		b = a.browser()
		to = b.start("/api/v1/auth/github")
		res = b.get("/api/v1/auth/github/callback?code=not-issued&state=" + url.QueryEscape(to.Query().Get("state")))
		if msg := refused(t, res, "/signin"); msg != "Perch could not complete the sign-in with GitHub. Please try again in a minute." {
			t.Fatalf("message %q", msg)
		}
	})
}

// A disabled account cannot sign in with a provider either.
func TestOAuthRefusesDisabledAccounts(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		root := a.platformAdmin("Root")
		p.github.SignInAs(githubUser(10, "zed", "zed@example.com", true))
		b := a.browser()
		res, _ := b.signIn("/api/v1/auth/github")
		id := b.me(b.landed(res, "/notifications"))["id"].(string)
		expect(t, a.call("PATCH", "/api/v1/admin/users/"+id, root.Access, map[string]bool{"disabled": true}), 200)

		b = a.browser()
		res, _ = b.signIn("/api/v1/auth/github")
		if msg := refused(t, res, "/signin"); !strings.Contains(msg, "disabled") {
			t.Fatalf("message %q", msg)
		}
		if b.session() != "" {
			t.Fatal("a disabled account got a session")
		}
		if e := findAudit(t, a.auditEntries(root), perch.AuditSignInFailed, id); e["changes"].(map[string]any)["method"] != "github" {
			t.Errorf("entry = %v", e)
		}
	})
}

// A member of an organisation that signs in with SAML alone cannot sign in
// with a provider either; its owners can (break-glass).
func TestOAuthRefusesWhereSingleSignOnIsEnforced(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		owner := a.register("Olive Owner")
		bob := a.invite(owner, "Bob Member", "member")
		a.verifyEmail(owner)
		expect(t, a.call("PUT", "/api/v1/org/saml", owner.Access, map[string]any{"idp_metadata_xml": testIDPMetadata(), "enabled": true, "enforce": true}), 200)

		p.github.SignInAs(githubUser(21, "bob", bob.Email, true))
		b := a.browser()
		res, _ := b.signIn("/api/v1/auth/github")
		if msg := refused(t, res, "/signin"); !strings.Contains(msg, "single sign-on") {
			t.Fatalf("message %q", msg)
		}
		if b.session() != "" {
			t.Fatal("a member of an organisation that enforces single sign-on got a session")
		}

		p.github.SignInAs(githubUser(22, "olive", owner.Email, true))
		b = a.browser()
		res, _ = b.signIn("/api/v1/auth/github")
		if b.me(b.landed(res, "/notifications"))["id"] != owner.ID {
			t.Fatal("the owner did not sign in")
		}
	})
}

// A desktop sign-in continues through a provider: the browser lands on the
// approval page of that sign-in, signed in, and the app ends up with its
// own session once the page approves it.
func TestOAuthContinuesADesktopSignIn(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		p.google.SignInAs("desk-1", "desk@example.com", true)
		app := a.startDevice(53123)
		b := a.browser()
		res, _ := b.signIn("/api/v1/auth/google?redirect=/org&device_session=" + app.Session)
		access := b.landed(res, "/device?session_id="+app.Session)
		me := b.me(access)
		code := app.Approve(t, a.call, access, app.UserCode)
		apitest.WantSignedIn(t, a.call, expect(t, a.exchange(app, code, app.Verifier), 200).Data(), me["id"].(string))

		// A sign-in that is no longer pending, or none at all, is said at
		// once, and the provider is not visited.
		for _, id := range []string{app.Session, "dev_aaaaaaaaaaaaaaaaaaaa"} {
			res := a.browser().get("/api/v1/auth/github?device_session=" + id)
			if msg := refused(t, res, "/signin"); !strings.Contains(msg, "desktop sign-in request cannot be answered") {
				t.Fatalf("message %q", msg)
			}
		}
	})
}

// An unconfigured provider: 404 naming the settings, on every route.
func TestOAuthUnconfiguredProvider(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		for _, path := range []string{"/api/v1/auth/oauth-a", "/api/v1/auth/github", "/api/v1/auth/oauth-a/callback", "/api/v1/auth/github/callback",
			"/api/v1/auth/oauth-b", "/api/v1/auth/google", "/api/v1/auth/oauth-b/callback", "/api/v1/auth/google/callback"} {
			res := expect(t, a.call("GET", path, "", nil), 404)
			want := "PERCH_GITHUB_CLIENT_ID and PERCH_GITHUB_CLIENT_SECRET"
			if strings.Contains(path, "oauth-b") || strings.Contains(path, "google") {
				want = "PERCH_GOOGLE_CLIENT_ID and PERCH_GOOGLE_CLIENT_SECRET"
			}
			if !strings.Contains(res.ErrorMessage(), want) {
				t.Errorf("%s: %q", path, res.ErrorMessage())
			}
		}
		if got := a.srv.SignInProviders(); len(got) != 0 {
			t.Fatalf("providers = %v", got)
		}
	})
}

// Google's discovery runs on first use, not when the server starts: a
// server whose issuer cannot be reached starts, answers the start 503 with
// a message naming the setting, and works once the issuer answers.
func TestOAuthGoogleDiscoveryIsLazy(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there for now
		a := newAPI(t, s, func(o *Options) {
			o.SSO.Google = GoogleApp{ClientID: "lazy-client", ClientSecret: "lazy-secret", Issuer: "http://" + addr + "/oidc"}
		})
		res := expect(t, a.call("GET", "/api/v1/auth/google", "", nil), 503)
		if !strings.Contains(res.ErrorMessage(), "PERCH_GOOGLE_ISSUER") {
			t.Fatalf("message %q", res.ErrorMessage())
		}
		// The failure is not kept: once the issuer answers, sign-in works.
		if ln, err = net.Listen("tcp", addr); err != nil {
			t.Fatalf("the issuer's address was taken meanwhile: %v", err)
		}
		google := apitest.StartGoogleOn(t, ln, a.clock.Now, "lazy-client", "lazy-secret")
		google.SignInAs("lazy-1", "lazy@example.com", true)
		b := a.browser()
		res, _ = b.signIn("/api/v1/auth/google")
		b.landed(res, "/notifications")
	})
}

// The flows left unfinished are pruned with the sessions.
func TestOAuthUnfinishedFlowsArePruned(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		p.github.SignInAs(githubUser(11, "pru", "pru@example.com", true))
		b := a.browser()
		to := b.start("/api/v1/auth/github")
		a.clock.Advance(perch.OAuthFlowTTL + time.Second)
		if _, err := s.PruneSessions(t.Context()); err != nil {
			t.Fatal(err)
		}
		a.clock.Advance(-perch.OAuthFlowTTL) // back within its life: the flow is gone all the same
		if _, err := s.TakeOAuthFlow(t.Context(), auth.HashToken(to.Query().Get("state"))); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Fatalf("TakeOAuthFlow after pruning: %v", err)
		}
	})
}

// Over https the flow and session cookies are Secure; all are HttpOnly
// and SameSite=Lax, the flow cookie only under the callbacks' paths and
// for as long as a flow lives.
func TestOAuthCookiesOverHTTPS(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		p := &fakeProviders{}
		a := newAPI(t, s, func(o *Options) { o.BaseURL = "https://perch.test" }, withProviders(t, p))
		p.github.SignInAs(githubUser(12, "sec", "sec@example.com", true))
		start := expect(t, a.call("GET", "/api/v1/auth/github", "", nil), 302)
		cookies := (&http.Response{Header: start.Header}).Cookies()
		if len(cookies) != 1 || cookies[0].Name != perch.OAuthCookie || !cookies[0].Secure || !cookies[0].HttpOnly ||
			cookies[0].SameSite != http.SameSiteLaxMode || cookies[0].Path != "/api/v1/auth/" || cookies[0].MaxAge != int(perch.OAuthFlowTTL.Seconds()) {
			t.Fatalf("flow cookie: %+v", cookies)
		}
		to, _ := url.Parse(start.Header.Get("Location"))
		if to.Query().Get("redirect_uri") != "https://perch.test/api/v1/auth/oauth-a/callback" {
			t.Fatalf("redirect_uri %q", to.Query().Get("redirect_uri"))
		}
		back := a.browser().atProvider(to)
		res := expect(t, a.call("GET", back, "", nil, "Cookie", perch.OAuthCookie+"="+cookies[0].Value), 302)
		set := map[string]*http.Cookie{}
		for _, c := range (&http.Response{Header: res.Header}).Cookies() {
			set[c.Name+" "+c.Path] = c
			if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
				t.Errorf("cookie %+v", c)
			}
		}
		if c := set[perch.SessionCookie+" /"]; c == nil || c.MaxAge != int(perch.RefreshTokenTTL.Seconds()) {
			t.Errorf("session cookie %+v", c)
		}
		if c := set[perch.RefreshCookie+" "+perch.RefreshPath]; c == nil || !strings.HasPrefix(c.Value, perch.RefreshTokenPrefix) {
			t.Errorf("refresh cookie %+v", c)
		}
		if c := set[perch.OAuthCookie+" /api/v1/auth/"]; c == nil || c.MaxAge >= 0 {
			t.Errorf("the flow cookie is not removed: %+v", c)
		}
	})
}

// The sign-ins with providers are limited per client address, in a bucket
// of their own: a person who used up their password attempts can still
// sign in with GitHub.
func TestOAuthRateLimit(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		p := &fakeProviders{}
		a := newAPI(t, s, withProviders(t, p), func(o *Options) {
			o.Limits.Auth = perch.Limit{Count: 2, Period: time.Minute}
			o.Limits.User = perch.Limit{Count: 3, Period: time.Minute}
		})
		for range 2 {
			expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": "x@example.com", "password": "wrong password"}), 401)
		}
		expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": "x@example.com", "password": "wrong password"}), 429)
		for range 3 {
			expect(t, a.call("GET", "/api/v1/auth/google", "", nil), 302)
		}
		res := expect(t, a.call("GET", "/api/v1/auth/oauth-a/callback", "", nil), 429)
		if res.Header.Get("Retry-After") == "" {
			t.Fatal("no Retry-After")
		}
	})
}
