package client

import (
	"context"
	"net/http"
	"time"

	"github.com/perch-dev/perch"
)

// refreshTimeout bounds a refresh, which outlives its caller's context: once
// the server has rotated the pair, dropping the answer would strand the
// sign-in on a spent refresh token.
const refreshTimeout = 30 * time.Second

// Session is one sign-in, as Register and Login hand it out.
type Session struct {
	User         *perch.User `json:"user"`
	AccessToken  string      `json:"access_token"`
	RefreshToken string      `json:"refresh_token"`
	ExpiresIn    int         `json:"expires_in"` // seconds the access token lives
}

// Register creates an account, with an organisation of its own, and signs the
// client in as it. Errors: EVALIDATION (with fields), ECONFLICT when the
// address has an account, ERATELIMITED.
func (c *Client) Register(ctx context.Context, name, email, password string) (*Session, error) {
	return c.signIn(ctx, "/api/v1/auth/register", map[string]string{"name": name, "email": email, "password": password})
}

// Login signs the client in. Errors: EUNAUTHORIZED for a wrong address or
// password, EVALIDATION for a missing one, ERATELIMITED.
func (c *Client) Login(ctx context.Context, email, password string) (*Session, error) {
	return c.signIn(ctx, "/api/v1/auth/login", map[string]string{"email": email, "password": password})
}

func (c *Client) signIn(ctx context.Context, path string, body any) (*Session, error) {
	var s Session
	if err := c.do(ctx, request{method: http.MethodPost, path: path, body: body, out: &s, anonymous: true}); err != nil {
		return nil, err
	}
	c.setTokens(s.AccessToken, s.RefreshToken)
	return &s, nil
}

// Logout ends the client's sign-in on the server and forgets its tokens. A
// client signed in with an API token only forgets it: such a token ends by
// DeleteAPIToken. On error the client keeps its tokens.
func (c *Client) Logout(ctx context.Context) error {
	c.mu.Lock()
	refresh := c.refresh
	c.mu.Unlock()
	if refresh != "" {
		err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/auth/logout", body: map[string]string{"refresh_token": refresh}, anonymous: true})
		if err != nil {
			return err
		}
	}
	c.setTokens("", "")
	return nil
}

// Me returns the signed-in user. Errors: EUNAUTHORIZED.
func (c *Client) Me(ctx context.Context) (*perch.User, error) {
	var u perch.User
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/users/me", out: &u}); err != nil {
		return nil, err
	}
	return &u, nil
}

// refreshCall is a refresh in flight, which concurrent callers share.
type refreshCall struct {
	done chan struct{}
	err  error // set before done is closed
}

var errSignedOut = perch.Errorf(perch.EUNAUTHORIZED, "The sign-in has ended; sign in again.")

// refreshAfter renews the access token after the server refused stale. The
// server revokes a whole sign-in when a refresh token is used twice, so one
// refresh runs at a time, callers that arrive meanwhile wait for it, and a
// caller whose token was already replaced just uses the new one.
func (c *Client) refreshAfter(ctx context.Context, stale string) error {
	c.mu.Lock()
	if c.token != stale {
		c.mu.Unlock()
		return nil
	}
	rc := c.refreshing
	if rc == nil {
		if c.refresh == "" {
			c.mu.Unlock()
			return errSignedOut
		}
		rc = &refreshCall{done: make(chan struct{})}
		c.refreshing = rc
		go c.runRefresh(context.WithoutCancel(ctx), rc, c.refresh)
	}
	c.mu.Unlock()
	select {
	case <-rc.done:
		return rc.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runRefresh exchanges the refresh token used for a new pair. A refused
// refresh token is forgotten: the sign-in is over.
func (c *Client) runRefresh(ctx context.Context, rc *refreshCall, used string) {
	defer close(rc.done)
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	var s Session
	var err error
	if c.renew != nil {
		s.AccessToken, s.RefreshToken, err = c.renew(ctx, used, c.refreshWith)
	} else {
		s.AccessToken, s.RefreshToken, err = c.refreshWith(ctx, used)
	}

	c.mu.Lock()
	current := c.refresh == used // not replaced by a Login or Logout meanwhile
	switch {
	case err == nil && current:
		c.token, c.refresh = s.AccessToken, s.RefreshToken
	case perch.ErrorCode(err) == perch.EUNAUTHORIZED && current:
		c.refresh = ""
	}
	c.mu.Unlock()
	if err == nil && current && c.onTokens != nil {
		c.onTokens(s.AccessToken, s.RefreshToken)
	}
	c.mu.Lock()
	c.refreshing = nil
	c.mu.Unlock()
	rc.err = err
}

// refreshWith spends the refresh token used on a new pair.
func (c *Client) refreshWith(ctx context.Context, used string) (access, rotated string, err error) {
	var s Session
	err = c.do(ctx, request{method: http.MethodPost, path: "/api/v1/auth/refresh", body: map[string]string{"refresh_token": used}, out: &s, anonymous: true})
	return s.AccessToken, s.RefreshToken, err
}

// Regions lists the server's regions (docs/DESIGN.md, Regions), the server's own
// marked current. It needs no sign-in.
func (c *Client) Regions(ctx context.Context) ([]perch.Region, error) {
	var rs []perch.Region
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/regions", out: &rs}); err != nil {
		return nil, err
	}
	return rs, nil
}
