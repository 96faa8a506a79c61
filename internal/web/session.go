package web

import (
	"net/http"
	"net/url"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
)

// Cookies of a dashboard session. The access token stands in for the
// Authorization header (the API and /ws accept it) and goes with every
// request. The refresh token, which mints new access tokens for a month,
// goes only to RefreshPath, where the two handlers that use it live:
// renewal (/session/refresh) and sign-out (/session/signout). Pages never
// see it: a page whose access token has expired sends the browser to renew
// it (see renew).
const (
	SessionCookie = perch.SessionCookie
	RefreshCookie = perch.RefreshCookie
	RefreshPath   = perch.RefreshCookiePath
)

// newCall builds the API client of one page request, signed in with the
// access cookie when there is one.
func (d *Dashboard) newCall(w http.ResponseWriter, r *http.Request) *call {
	c := &call{d: d, w: w, r: r}
	access := ""
	if ck, err := r.Cookie(SessionCookie); err == nil {
		access = ck.Value
	}
	c.signed = access != ""
	c.api = d.client(r, access)
	return c
}

// client is an API client for the page request r, signed in with access
// unless it is empty. It never renews a token: a 401 is final.
func (d *Dashboard) client(r *http.Request, access string) *client.Client {
	opts := []client.Option{client.WithHTTPClient(&http.Client{Transport: inProcess{h: d.api, from: r}})}
	if access != "" {
		opts = append(opts, client.WithAccessToken(access, ""))
	}
	return client.New(d.base, opts...)
}

// setSession stores a token pair in the session cookies.
func (c *call) setSession(access, refresh string) {
	c.signed = true
	c.cookie(SessionCookie, "/", access, perch.RefreshTokenTTL)
	c.cookie(RefreshCookie, RefreshPath, refresh, perch.RefreshTokenTTL)
	// The refresh cookie used to be set on "/". A browser keeps cookies of
	// one name and different paths side by side, so the old one is removed
	// or it would go on being sent everywhere.
	c.cookie(RefreshCookie, "/", "", -1)
}

// signOut removes the session cookies, under every path they were set on.
func (c *call) signOut() {
	c.cookie(SessionCookie, "/", "", -1)
	c.cookie(RefreshCookie, RefreshPath, "", -1)
	c.cookie(RefreshCookie, "/", "", -1)
}

// cookie sets a session cookie for maxAge, or, with a negative maxAge,
// removes it.
func (c *call) cookie(name, path, value string, maxAge time.Duration) {
	seconds := int(maxAge.Seconds())
	if maxAge < 0 {
		seconds = -1 // Max-Age=0; a fraction of a second would be none at all, a cookie kept until the browser closes
	}
	http.SetCookie(c.w, &http.Cookie{
		Name: name, Value: value, Path: path, MaxAge: seconds,
		HttpOnly: true, Secure: c.d.secure, SameSite: http.SameSiteLaxMode,
	})
}

// renew answers a request whose access token has expired by sending the
// browser to /session/refresh, the one place that sees the refresh token,
// and from there on to target. A page is answered with a form that posts
// there, which the page's script submits at once (a button does without
// script): a renewal changes state, so it is a post that CheckOrigin
// guards, never a link another site could have a browser follow. A form
// post is sent there with 307, so that the browser posts the same form
// there and then, renewed, to target again.
func (c *call) renew(target string) {
	target = safeNext(target)
	if c.r.Method != http.MethodGet && c.r.Method != http.MethodHead {
		http.Redirect(c.w, c.r, RefreshPath+"/refresh?repeat="+url.QueryEscape(target), http.StatusTemporaryRedirect)
		return
	}
	c.render(http.StatusOK, "renew", view{Title: "Welcome back", Data: target})
}

// errSessionOver is a renewal refused: no refresh cookie, or one that is
// spent, expired or revoked.
var errSessionOver = perch.Errorf(perch.EUNAUTHORIZED, "The sign-in is over; sign in again.")

// refresh spends the refresh cookie for a new token pair and stores it in
// the cookies. The new access token is tried before it is kept, so that a
// page sent on does not come straight back to renew again.
func (c *call) refresh() error {
	rc, _ := c.r.Cookie(RefreshCookie)
	if rc == nil || rc.Value == "" {
		return errSessionOver
	}
	var s client.Session
	err := c.do(http.MethodPost, "/api/v1/auth/refresh", map[string]string{"refresh_token": rc.Value}, &s)
	if err == nil {
		_, err = c.d.client(c.r, s.AccessToken).Me(c.r.Context())
	}
	switch perch.ErrorCode(err) {
	case "":
		c.setSession(s.AccessToken, s.RefreshToken)
		return nil
	case perch.EUNAUTHORIZED, perch.EBADREQUEST:
		return errSessionOver
	}
	return err
}

// RefreshSession renews the session cookies. The page's script posts here
// when its access token has expired: 204, or 401 when the session is over.
// A page comes here with ?next= (its renewal form) and a form post with
// ?repeat= (307; see renew): renewed, the browser goes on to next, or posts
// the same form to repeat again; when the session is over, to sign in.
func (d *Dashboard) RefreshSession(w http.ResponseWriter, r *http.Request, c *call) error {
	q := r.URL.Query()
	next, repeat := q.Get("next"), q.Get("repeat")
	err := c.refresh()
	if err != nil && err != errSessionOver {
		return err
	}
	if err == errSessionOver {
		c.signOut()
	}
	switch {
	case repeat != "" && err == nil:
		http.Redirect(w, r, safeNext(repeat), http.StatusTemporaryRedirect)
	case repeat != "":
		return c.redirect("/signin", "Your sign-in has ended; sign in again, then send the form again.")
	case next != "" && err == nil:
		return c.redirect(next, "")
	case next != "":
		return c.redirect("/signin?next="+url.QueryEscape(safeNext(next)), "")
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusUnauthorized)
	}
	return nil
}

// SignOut ends the session on the server and forgets the cookies.
func (d *Dashboard) SignOut(w http.ResponseWriter, r *http.Request, c *call) error {
	if rc, _ := r.Cookie(RefreshCookie); rc != nil && rc.Value != "" {
		err := c.do(http.MethodPost, "/api/v1/auth/logout", map[string]string{"refresh_token": rc.Value}, nil)
		if err != nil && perch.ErrorCode(err) != perch.EUNAUTHORIZED {
			d.log.Warn("signing out on the server failed", "err", err)
		}
	}
	c.signOut()
	return c.redirect("/signin", "You are signed out.")
}

// SignOutMoved sends a sign-out posted to /signout, where pages served
// before the refresh cookie moved under RefreshPath post it, on to
// /session/signout, which sees the cookie (307: the same post).
func (d *Dashboard) SignOutMoved(w http.ResponseWriter, r *http.Request, c *call) error {
	http.Redirect(w, r, RefreshPath+"/signout", http.StatusTemporaryRedirect)
	return nil
}
