package apitest

import (
	"crypto/rand"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/perch-dev/perch"
)

// GitHub is an in-process fake of what sign-in with GitHub uses: the OAuth
// app's pages (/login/oauth/authorize, which approves at once as the user
// set with SignInAs, or refuses as a person who denies consent does;
// /login/oauth/access_token, which checks the client secret, the code and
// the PKCE verifier against the challenge it was given) and the REST API's
// GET /user and /user/emails, shaped as GitHub's API reference shows them.
// It serves both at URL: it is PERCH_GITHUB_URL and PERCH_GITHUB_API_URL.
type GitHub struct {
	URL          string
	ClientID     string
	ClientSecret string
	// Callback is the redirect URI registered for the app; the authorize
	// page refuses another, as GitHub does.
	Callback string

	tb     testing.TB
	mu     sync.Mutex
	user   GitHubUser
	deny   bool
	codes  map[string]githubGrant
	tokens map[string]GitHubUser
	tried  int // calls to the token endpoint
}

// GitHubUser is the account that signs in at the fake.
type GitHubUser struct {
	ID     int64
	Login  string
	Name   string
	Emails []GitHubEmail
}

// GitHubEmail is one address of GET /user/emails.
type GitHubEmail struct {
	Email      string  `json:"email"`
	Primary    bool    `json:"primary"`
	Verified   bool    `json:"verified"`
	Visibility *string `json:"visibility"`
}

type githubGrant struct {
	user        GitHubUser
	challenge   string
	redirectURI string
}

// StartGitHub serves a fake GitHub on a loopback port until the test ends,
// for a Perch whose base URL is base.
func StartGitHub(tb testing.TB, base string) *GitHub {
	tb.Helper()
	g := &GitHub{ClientID: "Iv1.perchtest", ClientSecret: "github-test-secret-" + rand.Text(), Callback: base + "/api/v1/auth/oauth-a/callback",
		tb: tb, codes: map[string]githubGrant{}, tokens: map[string]GitHubUser{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/oauth/authorize", g.authorize)
	mux.HandleFunc("POST /login/oauth/access_token", g.accessToken)
	mux.HandleFunc("GET /user", g.api(func(u GitHubUser) any {
		return map[string]any{"login": u.Login, "id": u.ID, "node_id": "U_" + u.Login, "type": "User", "name": u.Name, "email": nil,
			"html_url": "https://github.com/" + u.Login, "site_admin": false}
	}))
	mux.HandleFunc("GET /user/emails", g.api(func(u GitHubUser) any { return u.Emails }))
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// SignInAs sets who approves at the authorize page from now on.
func (g *GitHub) SignInAs(u GitHubUser) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.user, g.deny = u, false
}

// Deny has the next visits to the authorize page refuse consent.
func (g *GitHub) Deny() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deny = true
}

// TokenCalls is how many times the token endpoint was called.
func (g *GitHub) TokenCalls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tried
}

func (g *GitHub) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != g.ClientID || q.Get("redirect_uri") != g.Callback || q.Get("state") == "" {
		http.Error(w, "The redirect_uri MUST match the registered callback URL for this application.", http.StatusBadRequest)
		return
	}
	if q.Get("code_challenge_method") != perch.MethodS256 || len(q.Get("code_challenge")) != 43 {
		http.Error(w, "PKCE S256 is expected", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(g.Callback)
	out := url.Values{"state": {q.Get("state")}}
	g.mu.Lock()
	if g.deny {
		out.Set("error", "access_denied")
		out.Set("error_description", "The user has denied your application access.")
		out.Set("error_uri", "https://docs.github.com/apps/troubleshooting-authorization-requests")
	} else {
		code := strings.ToLower(rand.Text())[:20]
		g.codes[code] = githubGrant{user: g.user, challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri")}
		out.Set("code", code)
	}
	g.mu.Unlock()
	back.RawQuery = out.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// accessToken answers as GitHub does: 200 with the token, or 200 with an
// error member for a bad code or verifier; JSON when asked for, else a
// form.
func (g *GitHub) accessToken(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	f := r.PostForm
	g.mu.Lock()
	g.tried++
	grant, ok := g.codes[f.Get("code")]
	delete(g.codes, f.Get("code")) // a code is good once
	g.mu.Unlock()
	answer := url.Values{}
	switch {
	case f.Get("client_id") != g.ClientID || f.Get("client_secret") != g.ClientSecret:
		answer.Set("error", "incorrect_client_credentials")
	case !ok || f.Get("redirect_uri") != grant.redirectURI:
		answer.Set("error", "bad_verification_code")
	case f.Get("code_verifier") == "" || perch.S256Challenge(f.Get("code_verifier")) != grant.challenge:
		answer.Set("error", "bad_verification_code")
		answer.Set("error_description", "The code_verifier does not match the code_challenge.")
	default:
		token := "gho_" + rand.Text()
		g.mu.Lock()
		g.tokens[token] = grant.user
		g.mu.Unlock()
		answer = url.Values{"access_token": {token}, "token_type": {"bearer"}, "scope": {"read:user,user:email"}}
	}
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		w.Header().Set("Content-Type", "application/json")
		flat := map[string]string{}
		for k := range answer {
			flat[k] = answer.Get(k)
		}
		json.NewEncoder(w).Encode(flat)
		return
	}
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	w.Write([]byte(answer.Encode()))
}

// api serves a REST call of the user the bearer token was issued to.
func (g *GitHub) api(body func(GitHubUser) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		g.mu.Lock()
		u, ok := g.tokens[token]
		g.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if !ok || (!strings.EqualFold(scheme, "bearer") && !strings.EqualFold(scheme, "token")) {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`))
			return
		}
		json.NewEncoder(w).Encode(body(u))
	}
}

// Google is an OpenID Connect provider in-process (mockoidc): discovery,
// the authorize page (approving at once as the next queued user), the token
// endpoint (checking the client secret and the PKCE verifier) and the
// signing keys. Its clock follows now, the clock of the Perch under test,
// so that the ID tokens it signs are fresh by that clock.
type Google struct {
	*mockoidc.MockOIDC
}

// StartGoogle serves a Google until the test ends.
func StartGoogle(tb testing.TB, now func() time.Time) *Google {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return StartGoogleOn(tb, ln, now, "", "")
}

// StartGoogleOn serves a Google on ln until the test ends, for the client
// with the given id and secret (random when empty).
func StartGoogleOn(tb testing.TB, ln net.Listener, now func() time.Time, clientID, clientSecret string) *Google {
	tb.Helper()
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		tb.Fatal(err)
	}
	m.CodeChallengeMethodsSupported = []string{perch.MethodS256}
	m.FastForward(now().Sub(time.Now()))
	if clientID != "" {
		m.ClientID, m.ClientSecret = clientID, clientSecret
	}
	if err := m.Start(ln, nil); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Shutdown() })
	return &Google{m}
}

// SignInAs queues who approves at the next visit to the authorize page.
func (g *Google) SignInAs(subject, email string, verified bool) {
	g.QueueUser(&mockoidc.MockUser{Subject: subject, Email: email, EmailVerified: verified, PreferredUsername: strings.Split(email, "@")[0]})
}
