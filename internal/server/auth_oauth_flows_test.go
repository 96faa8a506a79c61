package server

import (
	"database/sql"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// flowAtRest fails the test if the one flow the database holds keeps, in
// any column, the PKCE verifier of challenge, the nonce, or the state:
// what whoever reads the database would need to finish the sign-in with a
// code of the provider's.
func flowAtRest(t *testing.T, db *sql.DB, state, challenge, nonce string) {
	t.Helper()
	rows := storetest.Table(t, db, "oauth_flows")
	if strings.Count(rows, "\n") != 1 {
		t.Fatalf("want one flow in the database, got:\n%s", rows)
	}
	for field := range strings.SplitSeq(strings.TrimSpace(rows), "\t") {
		col, value, _ := strings.Cut(field, "=")
		if value != "" && perch.S256Challenge(value) == challenge {
			t.Errorf("column %s holds the PKCE verifier in the clear", col)
		}
		if nonce != "" && strings.Contains(value, nonce) {
			t.Errorf("column %s holds the OpenID nonce in the clear", col)
		}
		if strings.Contains(value, state) {
			t.Errorf("column %s holds the state in the clear", col)
		}
	}
}

// A flow under way keeps neither its PKCE verifier nor its OpenID nonce in
// the clear: read straight from the database between the start and the
// callback, no column is the verifier of the challenge the provider got,
// nor holds the nonce or the state. The sign-ins then finish as before,
// the providers checking the verifier and the nonce.
func TestOAuthFlowsKeepNoVerifierInTheClear(t *testing.T) {
	t.Parallel()
	storetest.RunWithSQL(t, func(t *testing.T, s *store.Store, db *sql.DB) {
		a, p := newOAuthAPI(t, s)

		p.google.SignInAs("108-google-sub", "grace@example.com", true)
		b := a.browser()
		to := b.start("/api/v1/auth/google?redirect=/plans")
		q := to.Query()
		if q.Get("nonce") == "" || q.Get("code_challenge") == "" {
			t.Fatalf("sent to %s", to)
		}
		flowAtRest(t, db, q.Get("state"), q.Get("code_challenge"), q.Get("nonce"))
		if me := b.me(b.landed(b.get(b.atProvider(to)), "/plans")); me["email"] != "grace@example.com" {
			t.Fatalf("me = %v", me)
		}

		p.github.SignInAs(githubUser(4242, "octocat", "octo.cat@example.com", true))
		b = a.browser()
		to = b.start("/api/v1/auth/github")
		q = to.Query()
		flowAtRest(t, db, q.Get("state"), q.Get("code_challenge"), "")
		if me := b.me(b.landed(b.get(b.atProvider(to)), "/notifications")); me["email"] != "octo.cat@example.com" {
			t.Fatalf("me = %v", me)
		}
		if p.github.TokenCalls() != 1 {
			t.Fatalf("token calls = %d", p.github.TokenCalls())
		}
	})
}

// A flow an older Perch kept in the clear (under way while it was
// upgraded) is not used: the browser is sent back to start again, and the
// provider is never asked to redeem the code with it.
func TestOAuthFlowKeptInTheClearStartsAgain(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		state := "state-of-a-flow-kept-in-the-clear"
		err := s.CreateOAuthFlow(t.Context(), auth.HashToken(state), perch.OAuthFlow{Provider: perch.ProviderGitHub,
			Verifier: "a-verifier-kept-in-the-clear-by-an-older-perch-0123", Redirect: "/plans", ExpiresAt: a.clock.Now().Add(perch.OAuthFlowTTL)})
		if err != nil {
			t.Fatal(err)
		}
		b := a.browser()
		b.jar.SetCookies(perchURL(perch.OAuthPath), []*http.Cookie{{Name: perch.OAuthCookie, Value: state, Path: perch.OAuthPath}})
		res := b.get("/api/v1/auth/github/callback?" + url.Values{"state": {state}, "code": {"a-code"}}.Encode())
		if msg := refused(t, res, "/signin"); msg != msgBadState {
			t.Fatalf("message %q", msg)
		}
		if p.github.TokenCalls() != 0 {
			t.Fatalf("the provider was asked to redeem a code %d times", p.github.TokenCalls())
		}
	})
}
