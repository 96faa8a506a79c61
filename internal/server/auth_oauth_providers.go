package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/perch-dev/perch"
)

// GitHubApp is the OAuth app that GitHub sign-in uses (oauth-a). It is
// configured when ClientID and ClientSecret are both set. URL is GitHub's
// address (https://github.com, or a GitHub Enterprise server's), APIURL its
// REST API's (https://api.github.com, or https://HOST/api/v3).
type GitHubApp struct {
	ClientID, ClientSecret string
	URL, APIURL            string
}

// GoogleApp is the OAuth client that Google sign-in uses (oauth-b), an
// OpenID Connect provider found by discovery at Issuer
// (https://accounts.google.com). It is configured when ClientID and
// ClientSecret are both set.
type GoogleApp struct {
	ClientID, ClientSecret string
	Issuer                 string
}

// Where providers send the browser back: the spec's paths, whichever alias
// started the sign-in. These are the redirect URIs to register with the
// providers, under the base URL.
const (
	githubCallbackPath = "/api/v1/auth/oauth-a/callback"
	googleCallbackPath = "/api/v1/auth/oauth-b/callback"
)

// providerTimeout bounds each call to a provider.
const providerTimeout = 10 * time.Second

// maxProviderBody is the most of a provider's answer Perch reads.
const maxProviderBody = 1 << 20

// providerIdentity is what a provider says about the person who signed in.
type providerIdentity struct {
	Subject       string // the provider's stable id of the account
	Email         string // the address the provider vouches for, or ""
	EmailVerified bool   // the provider verified Email
	Name, Login   string
}

// signInProvider is GitHub or Google.
type signInProvider interface {
	// authURL is the provider's page that asks the person to sign in, for
	// the flow f with the given state.
	authURL(ctx context.Context, state string, f *perch.OAuthFlow) (string, error)
	// identify trades the code the provider sent back, with f's verifier,
	// for who signed in.
	identify(ctx context.Context, code string, f *perch.OAuthFlow) (*providerIdentity, error)
}

// providerSettings names what configures a provider, for the 404 of one
// that is not configured.
var providerSettings = map[string]string{
	perch.ProviderGitHub: "PERCH_GITHUB_CLIENT_ID and PERCH_GITHUB_CLIENT_SECRET",
	perch.ProviderGoogle: "PERCH_GOOGLE_CLIENT_ID and PERCH_GOOGLE_CLIENT_SECRET",
}

// newProviders builds the configured providers.
func newProviders(o Options, client *http.Client) map[string]signInProvider {
	out := map[string]signInProvider{}
	base := strings.TrimRight(o.BaseURL, "/")
	if g := o.SSO.GitHub; g.ClientID != "" && g.ClientSecret != "" {
		web := strings.TrimRight(cmpOr(g.URL, "https://github.com"), "/")
		out[perch.ProviderGitHub] = &githubProvider{
			cfg: oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, RedirectURL: base + githubCallbackPath,
				Scopes: []string{"read:user", "user:email"},
				Endpoint: oauth2.Endpoint{AuthURL: web + "/login/oauth/authorize", TokenURL: web + "/login/oauth/access_token",
					AuthStyle: oauth2.AuthStyleInParams}},
			api:    strings.TrimRight(cmpOr(g.APIURL, "https://api.github.com"), "/"),
			client: client,
		}
	}
	if g := o.SSO.Google; g.ClientID != "" && g.ClientSecret != "" {
		out[perch.ProviderGoogle] = &googleProvider{clientID: g.ClientID, secret: g.ClientSecret,
			issuer: strings.TrimRight(cmpOr(g.Issuer, "https://accounts.google.com"), "/"), redirect: base + googleCallbackPath,
			client: client, now: o.Now}
	}
	return out
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// githubProvider signs in with GitHub: OAuth 2.0 with PKCE, then the REST
// API for the account (GET /user) and its addresses (GET /user/emails).
type githubProvider struct {
	cfg    oauth2.Config
	api    string
	client *http.Client
}

func (g *githubProvider) authURL(_ context.Context, state string, f *perch.OAuthFlow) (string, error) {
	return g.cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(f.Verifier)), nil
}

func (g *githubProvider) identify(ctx context.Context, code string, f *perch.OAuthFlow) (*providerIdentity, error) {
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, g.client), 3*providerTimeout)
	defer cancel()
	tok, err := g.cfg.Exchange(ctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return nil, fmt.Errorf("github: token: %w", err)
	}
	hc := g.cfg.Client(ctx, tok)
	var user struct {
		ID    int64  `json:"id"`
		Login string `json:"login"`
		Name  string `json:"name"`
	}
	if err := g.get(ctx, hc, "/user", &user); err != nil {
		return nil, err
	}
	if user.ID <= 0 {
		return nil, fmt.Errorf("github: /user has no id")
	}
	var emails []struct {
		Email    string `json:"email"`
		Primary  bool   `json:"primary"`
		Verified bool   `json:"verified"`
	}
	if err := g.get(ctx, hc, "/user/emails", &emails); err != nil {
		return nil, err
	}
	id := &providerIdentity{Subject: strconv.FormatInt(user.ID, 10), Name: user.Name, Login: user.Login}
	// Only the primary address counts, and only once GitHub has verified it.
	for _, e := range emails {
		if e.Primary {
			id.Email, id.EmailVerified = strings.TrimSpace(e.Email), e.Verified
		}
	}
	return id, nil
}

// get reads one answer of GitHub's REST API into v.
func (g *githubProvider) get(ctx context.Context, hc *http.Client, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.api+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	res, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("github: %s: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("github: %s: %s", path, res.Status)
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, maxProviderBody)).Decode(v); err != nil {
		return fmt.Errorf("github: %s: %w", path, err)
	}
	return nil
}

// googleProvider signs in with Google through OpenID Connect: the issuer's
// endpoints and keys come from discovery, done on first use (never at
// start-up, which must not wait for or fail on the network) and kept once
// it succeeds; the ID token's signature, issuer, audience, expiry and nonce
// are checked by go-oidc.
type googleProvider struct {
	clientID, secret, issuer, redirect string
	client                             *http.Client
	now                                func() time.Time

	mu         sync.Mutex
	discovered *googleDiscovery
}

type googleDiscovery struct {
	cfg      oauth2.Config
	verifier *oidc.IDTokenVerifier
}

// discover finds the issuer's endpoints, once.
func (g *googleProvider) discover(ctx context.Context) (*googleDiscovery, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.discovered != nil {
		return g.discovered, nil
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, g.client), providerTimeout)
	defer cancel()
	p, err := oidc.NewProvider(ctx, g.issuer)
	if err != nil {
		// The person is told the first (its perch error), the log the cause.
		return nil, fmt.Errorf("%w (%w)", perch.Errorf(perch.EUNAVAILABLE,
			"Google sign-in is unavailable right now: Perch could not reach %s (PERCH_GOOGLE_ISSUER). Try again in a minute.", g.issuer), err)
	}
	ep := p.Endpoint()
	ep.AuthStyle = oauth2.AuthStyleInParams
	g.discovered = &googleDiscovery{
		cfg: oauth2.Config{ClientID: g.clientID, ClientSecret: g.secret, RedirectURL: g.redirect, Endpoint: ep,
			Scopes: []string{oidc.ScopeOpenID, "email", "profile"}},
		verifier: p.Verifier(&oidc.Config{ClientID: g.clientID, Now: g.now}),
	}
	return g.discovered, nil
}

func (g *googleProvider) authURL(ctx context.Context, state string, f *perch.OAuthFlow) (string, error) {
	d, err := g.discover(ctx)
	if err != nil {
		return "", err
	}
	return d.cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(f.Verifier), oidc.Nonce(f.Nonce)), nil
}

func (g *googleProvider) identify(ctx context.Context, code string, f *perch.OAuthFlow) (*providerIdentity, error) {
	d, err := g.discover(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(context.WithValue(ctx, oauth2.HTTPClient, g.client), g.client), 3*providerTimeout)
	defer cancel()
	tok, err := d.cfg.Exchange(ctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return nil, fmt.Errorf("google: token: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return nil, fmt.Errorf("google: the token answer has no id_token")
	}
	idt, err := d.verifier.Verify(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("google: id_token: %w", err)
	}
	if idt.Nonce != f.Nonce {
		return nil, fmt.Errorf("google: id_token: the nonce is not this sign-in's")
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified any    `json:"email_verified"` // a boolean; some issuers send "true"
		Name          string `json:"name"`
	}
	if err := idt.Claims(&claims); err != nil {
		return nil, fmt.Errorf("google: id_token claims: %w", err)
	}
	verified := claims.EmailVerified == true || claims.EmailVerified == "true"
	return &providerIdentity{Subject: idt.Subject, Email: strings.TrimSpace(claims.Email), EmailVerified: verified, Name: claims.Name}, nil
}
