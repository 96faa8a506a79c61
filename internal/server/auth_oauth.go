package server

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/oauth2"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
)

// Sign-in with GitHub (oauth-a) and Google (oauth-b) (docs/DESIGN.md, GitHub
// and Google).
//
// The start sends the browser to the provider with a random state, a PKCE
// S256 challenge and, for Google, an OpenID nonce. The flow (verifier,
// nonce, where to go afterwards, the desktop sign-in it continues, the user
// who links the provider) is kept in the database under the state's hash,
// and the state itself in a short-lived HttpOnly cookie, so that the
// callback takes only a state that this browser started, and each state
// once. Every outcome of the callback is a redirect: to the page asked for,
// signed in (the dashboard's session cookies set here), or back to sign-in
// with a message.

// SignInProviders lists the configured sign-in providers (github, google),
// for the dashboard's buttons.
func (s *Server) SignInProviders() []string {
	var out []string
	for _, p := range []string{perch.ProviderGitHub, perch.ProviderGoogle} {
		if s.providers[p] != nil {
			out = append(out, p)
		}
	}
	return out
}

// provider returns the configured provider name, or a 404 naming the
// settings that would configure it.
func (s *Server) provider(name string) (signInProvider, error) {
	if p := s.providers[name]; p != nil {
		return p, nil
	}
	return nil, perch.Errorf(perch.ENOTFOUND, "Sign-in with %s is not configured on this server: its operator sets %s.",
		perch.ProviderTitle(name), providerSettings[name])
}

// oauthStart sends the browser to the provider to sign in.
func (s *Server) oauthStart(provider string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.provider(provider)
		if err != nil {
			return err
		}
		q := r.URL.Query()
		f := &perch.OAuthFlow{Provider: provider, Verifier: oauth2.GenerateVerifier(), Redirect: perch.SafeRedirect(q.Get("redirect")),
			ExpiresAt: s.now().Add(perch.OAuthFlowTTL)}
		if provider == perch.ProviderGoogle {
			f.Nonce = rand.Text()
		}
		if id := q.Get("device_session"); id != "" {
			d, err := s.authDB.DeviceSession(r.Context(), id)
			if err == nil {
				err = d.CheckDecidable()
			}
			if perch.ErrorCode(err) == perch.EINTERNAL {
				return err
			}
			if err != nil {
				s.backToSignIn(w, r, "This desktop sign-in request cannot be answered any more: "+perch.ErrorMessage(err)+" Start again from the app.", "")
				return nil
			}
			f.DeviceSession, f.Redirect = d.ID, "/device?session_id="+url.QueryEscape(d.ID)
		}
		if u := s.linkingUser(r); u != nil {
			f.LinkUserID = u.ID
			if f.DeviceSession == "" && !perch.LocalPath(q.Get("redirect")) {
				f.Redirect = "/profile"
			}
		}
		state := rand.Text()
		to, err := p.authURL(r.Context(), state, f)
		if err != nil {
			return err
		}
		if err := s.authDB.CreateOAuthFlow(r.Context(), auth.HashToken(state), sealFlow(state, *f)); err != nil {
			return err
		}
		s.setCookie(w, perch.OAuthCookie, perch.OAuthPath, state, int(perch.OAuthFlowTTL.Seconds()))
		http.Redirect(w, r, to, http.StatusFound)
		return nil
	}
}

// linkingUser is the signed-in user of the dashboard session r carries,
// who links the provider to their account rather than signing in; nil for
// none. Only a start from Perch's own pages (or typed in) links: another
// site's link to the start signs in like any other.
func (s *Server) linkingUser(r *http.Request) *perch.User {
	c, err := r.Cookie(perch.SessionCookie)
	if err != nil || c.Value == "" || !strings.HasPrefix(c.Value, perch.AccessTokenPrefix) {
		return nil
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return nil
	}
	p, err := s.authDB.AccessPrincipal(r.Context(), auth.HashToken(c.Value))
	if err != nil {
		return nil
	}
	return p.User
}

// Messages of a callback that cannot sign in.
const (
	msgBadState = "This sign-in was not started in this browser, was already used or has expired. Please start again."
	msgNoCode   = "%s sent no sign-in code back. Please try again."
	msgFailed   = "Perch could not complete the sign-in with %s. Please try again in a minute."
)

// oauthCallback is where the provider sends the browser back.
func (s *Server) oauthCallback(provider string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.provider(provider)
		if err != nil {
			return err
		}
		title := perch.ProviderTitle(provider)
		q := r.URL.Query()
		// The cookie goes whatever happens: a state is used once.
		s.setCookie(w, perch.OAuthCookie, perch.OAuthPath, "", -1)
		state := q.Get("state")
		c, _ := r.Cookie(perch.OAuthCookie)
		if state == "" || c == nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) != 1 {
			s.backToSignIn(w, r, msgBadState, "")
			return nil
		}
		f, err := s.authDB.TakeOAuthFlow(r.Context(), auth.HashToken(state))
		if err == nil {
			f, err = openFlow(state, f)
		}
		switch {
		case perch.ErrorCode(err) == perch.EINTERNAL:
			return err
		case err != nil || f.Provider != provider:
			s.backToSignIn(w, r, msgBadState, "")
			return nil
		}
		fail := func(msg string) error {
			if f.LinkUserID != "" {
				http.Redirect(w, r, "/profile?error="+url.QueryEscape(msg), http.StatusFound)
			} else {
				s.backToSignIn(w, r, msg, f.Redirect)
			}
			return nil
		}
		if e := q.Get("error"); e != "" {
			if e == "access_denied" {
				return fail("You did not allow Perch to use your " + title + " account, so you are not signed in.")
			}
			return fail(title + " could not sign you in (" + clip(perch.CleanText(e, perch.SingleLine), 64) + "). Please try again.")
		}
		code := q.Get("code")
		if code == "" {
			return fail(fmt.Sprintf(msgNoCode, title))
		}
		id, err := p.identify(r.Context(), code, f)
		if err != nil {
			if perch.ErrorCode(err) == perch.EUNAVAILABLE {
				s.log.Warn("sign-in provider unreachable", "provider", provider, "err", err, "request_id", requestID(r))
				return fail(perch.ErrorMessage(err))
			}
			s.log.Warn("sign-in with a provider failed", "provider", provider, "err", err, "request_id", requestID(r))
			return fail(fmt.Sprintf(msgFailed, title))
		}
		link := perch.Identity{Provider: provider, Subject: id.Subject, Email: clip(id.Email, perch.MaxEmailLen)}
		if f.LinkUserID != "" {
			if err := s.linkIdentity(r, f.LinkUserID, link); err != nil {
				if code := perch.ErrorCode(err); code == perch.EINTERNAL || code == perch.EUNAVAILABLE {
					return err
				}
				return fail(perch.ErrorMessage(err))
			}
			http.Redirect(w, r, f.Redirect, http.StatusFound)
			return nil
		}
		u, err := s.oauthAccount(r, id, link)
		if err == nil {
			err = s.oauthSignIn(w, r, u, provider)
		}
		switch perch.ErrorCode(err) {
		case "":
			http.Redirect(w, r, f.Redirect, http.StatusFound)
			return nil
		case perch.EINTERNAL, perch.EUNAVAILABLE:
			return err
		}
		return fail(perch.ErrorMessage(err))
	}
}

// backToSignIn sends the browser to the sign-in page with msg, and with
// next, the page it was going to, when there is one to go back to.
func (s *Server) backToSignIn(w http.ResponseWriter, r *http.Request, msg, next string) {
	q := url.Values{"error": {msg}}
	if next != "" && next != perch.DefaultPage {
		q.Set("next", next)
	}
	http.Redirect(w, r, "/signin?"+q.Encode(), http.StatusFound)
}

// oauthAccount finds or makes the account of a person who signed in with
// a provider: the account linked to the provider's account; else the
// account of the address the provider verified, linked now (only when
// that account has proven its mailbox by one of Perch's round trips: an
// address typed at registration, or asserted by an identity provider, and
// never confirmed proves nothing about who made the account); else a new
// account, with an organisation of its own, as registration makes, whose
// mailbox is not proven until its confirmation link is followed. An
// address the provider has not verified signs in nowhere.
func (s *Server) oauthAccount(r *http.Request, id *providerIdentity, link perch.Identity) (*perch.User, error) {
	ctx := r.Context()
	title := perch.ProviderTitle(link.Provider)
	u, err := s.authDB.IdentityUser(ctx, link.Provider, link.Subject)
	if perch.ErrorCode(err) != perch.ENOTFOUND {
		return u, err
	}
	if id.Email == "" {
		return nil, perch.Errorf(perch.EFORBIDDEN, "Your %s account has no primary e-mail address that %s has verified. Verify one there and try again, or sign up with a password.", title, title)
	}
	if !id.EmailVerified {
		return nil, perch.Errorf(perch.EFORBIDDEN, "%s has not verified your address %s, so Perch cannot use it to sign you in. Verify it at %s first, or sign in with your password and link %s from your profile.",
			title, id.Email, title, title)
	}
	existing, _, err := s.authDB.UserCredentials(ctx, id.Email)
	switch perch.ErrorCode(err) {
	case "":
		if !existing.EmailVerified {
			return nil, perch.Errorf(perch.ECONFLICT, "An account with %s exists, but its address is not confirmed yet. Sign in to it as you usually do (or reset its password), then link %s from your profile.",
				existing.Email, title)
		}
		if err := s.linkIdentity(r, existing.ID, link); err != nil {
			return nil, err
		}
		return existing, nil
	case perch.ENOTFOUND:
	default:
		return nil, err
	}
	p := perch.Problems{}
	if perch.ValidateEmail(p, id.Email); len(p) > 0 {
		return nil, perch.Errorf(perch.EFORBIDDEN, "The address %s gave, %q, is not one Perch can use.", title, clip(id.Email, perch.MaxEmailLen))
	}
	name := perch.SignInName(id.Name, id.Login, id.Email)
	u, err = s.authDB.CreateIdentityUser(ctx, name, id.Email, link)
	if err != nil {
		return nil, err
	}
	// The provider vouched for the address, but only Perch's own round trip
	// proves the mailbox (and with it a listed address's admin rights), as
	// for a sign-up with a password.
	if err := s.mailEmailToken(ctx, u, perch.EmailVerify, u.Email); err != nil {
		return nil, err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditRegistered, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
		Changes: map[string]any{"name": u.Name, "org_role": u.OrgRole, "method": link.Provider}})
	return u, nil
}

// linkIdentity links the provider's account to the account userID and
// audits it.
func (s *Server) linkIdentity(r *http.Request, userID string, link perch.Identity) error {
	u, err := s.authDB.User(r.Context(), userID)
	if err != nil {
		return err
	}
	before, err := s.authDB.Identities(r.Context(), userID)
	if err != nil {
		return err
	}
	if _, err := s.authDB.LinkIdentity(r.Context(), userID, link); err != nil {
		return err
	}
	if slices.ContainsFunc(before, func(i perch.Identity) bool { return i.Provider == link.Provider && i.Subject == link.Subject }) {
		return nil // linked already
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditIdentityLinked, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
		Changes: map[string]any{"provider": link.Provider, "email": link.Email}})
	return nil
}

// oauthSignIn ends every sign-in with a provider: a session for u, set in
// the dashboard's cookies, and the audit entry. Whatever may refuse such a
// sign-in to u goes here.
func (s *Server) oauthSignIn(w http.ResponseWriter, r *http.Request, u *perch.User, provider string) error {
	if err := s.ssoRefusal(r.Context(), u, provider); err != nil {
		if perch.ErrorCode(err) == perch.EFORBIDDEN {
			s.audit(r, perch.AuditEntry{Action: perch.AuditSignInFailed, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
				Changes: map[string]any{"reason": "single sign-on enforced", "method": provider}})
		}
		return err
	}
	res, err := s.signIn(r.Context(), u)
	if perch.ErrorCode(err) == perch.EFORBIDDEN { // the account is disabled
		s.audit(r, perch.AuditEntry{Action: perch.AuditSignInFailed, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
			Changes: map[string]any{"reason": "account disabled", "method": provider}})
	}
	if err != nil {
		return err
	}
	s.setSessionCookies(w, res.AccessToken, res.RefreshToken)
	s.audit(r, perch.AuditEntry{Action: perch.AuditSignedIn, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
		Changes: map[string]any{"method": provider}})
	return nil
}

// setSessionCookies stores a token pair in the dashboard's session cookies,
// as internal/web's setSession does: the access token on every path, the
// refresh token only under perch.RefreshPath (and none left on "/", where
// it used to be set).
func (s *Server) setSessionCookies(w http.ResponseWriter, access, refresh string) {
	age := int(perch.RefreshTokenTTL.Seconds())
	s.setCookie(w, perch.SessionCookie, "/", access, age)
	s.setCookie(w, perch.RefreshCookie, perch.RefreshPath, refresh, age)
	s.setCookie(w, perch.RefreshCookie, "/", "", -1)
}

// setCookie sets an HttpOnly, SameSite=Lax cookie for maxAge seconds (a
// negative maxAge removes it), Secure when the base URL is https.
func (s *Server) setCookie(w http.ResponseWriter, name, path, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, Secure: strings.HasPrefix(s.opts.BaseURL, "https://"), SameSite: http.SameSiteLaxMode})
}
