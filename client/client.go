// Package client is the Go client of the Perch API and its WebSocket, used by
// the perch CLI, the menu-bar tray, the dashboard and the end-to-end tests.
// It has typed methods for what the CLI and the tray do (sign-in and the
// desktop sign-in, history and read state, sending, API and webhook tokens,
// Listen); Call reaches any other endpoint with the same errors and token
// refresh.
//
// Every method that talks to the server returns a *perch.Error when the
// server answers with an error, so callers branch on perch.ErrorCode just as
// the server does:
//
//	c := client.New("https://perch.example.com",
//		client.WithAccessToken(access, refresh),
//		client.WithTokenUpdate(save), // persist the pair after each refresh
//	)
//	me, err := c.Me(ctx)
//	if perch.ErrorCode(err) == perch.EUNAUTHORIZED {
//		// sign in again
//	}
//	err = c.Listen(ctx, lastSeenID, func(e client.Event) {
//		switch e.Type {
//		case client.EventNotification:
//			fmt.Println(e.Notification.Title)
//		case client.EventDisconnected:
//			fmt.Println("offline:", e.Err, "retrying in", e.RetryIn)
//		}
//	})
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Client talks to one Perch server. It is safe for concurrent use.
type Client struct {
	base     string // without a trailing slash
	http     *http.Client
	onTokens func(access, refresh string)
	renew    Renewer

	// Reconnection of Listen; tests shorten them.
	minDelay, maxDelay time.Duration
	stableAfter        time.Duration       // a connection this long resets the backoff
	pingEvery          time.Duration       // Listen's own liveness check of the server
	pingTimeout        time.Duration       // how long a pong may take
	jitter             func(n int64) int64 // uniform in [0, n)

	mu         sync.Mutex
	token      string // bearer: an access token or an API token
	refresh    string // "" for API tokens and signed-out clients
	refreshing *refreshCall
}

// Option configures a Client.
type Option func(*Client)

// New returns a client of the server at baseURL ("https://perch.example.com").
// Without a credential option it is signed out until Register or Login.
func New(baseURL string, opts ...Option) *Client {
	c := &Client{
		base:        strings.TrimRight(baseURL, "/"),
		http:        &http.Client{Timeout: 30 * time.Second},
		minDelay:    250 * time.Millisecond,
		maxDelay:    30 * time.Second,
		stableAfter: time.Minute,
		pingEvery:   30 * time.Second,
		pingTimeout: 20 * time.Second,
		jitter:      rand.Int64N,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// WithHTTPClient makes the client send its requests, the WebSocket handshake
// included, through hc. Its Timeout bounds each REST request and the
// handshake, not a WebSocket connection's life.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.http = hc
		}
	}
}

// WithAccessToken signs the client in with a session's token pair. When the
// server refuses the access token as expired, the client renews the pair
// with the refresh token; see WithTokenUpdate.
func WithAccessToken(access, refresh string) Option {
	return func(c *Client) { c.token, c.refresh = access, refresh }
}

// WithAPIToken signs the client in with an API token (pat_...), which is
// never refreshed: a 401 is final.
func WithAPIToken(raw string) Option {
	return func(c *Client) { c.token, c.refresh = raw, "" }
}

// WithTokenUpdate has fn called with the new pair after each refresh, so that
// the caller can persist it: the old refresh token is spent. Refreshes never
// overlap, so neither do the calls. Register and Login return their pair in
// the Session instead.
func WithTokenUpdate(fn func(access, refresh string)) Option {
	return func(c *Client) { c.onTokens = fn }
}

// Renewer renews a spent access token given the refresh token the client
// holds. It is for processes that share one sign-in (a CLI and a tray,
// say): with rotation, only one of them may spend a refresh token, so a
// Renewer takes a lock, adopts a pair another process stored meanwhile, and
// otherwise calls refresh (the client's own POST /auth/refresh) and stores
// the result.
type Renewer func(ctx context.Context, used string, refresh func(ctx context.Context, used string) (access, rotated string, err error)) (access, rotated string, err error)

// WithRenewer makes the client renew through fn; see Renewer.
func WithRenewer(fn Renewer) Option {
	return func(c *Client) { c.renew = fn }
}

// WithReconnectDelay sets the bounds of Listen's backoff between connection
// attempts: the ceiling starts at lo and doubles up to hi, and each wait is
// drawn uniformly below the ceiling. The default is 250 ms to 30 s.
func WithReconnectDelay(lo, hi time.Duration) Option {
	return func(c *Client) {
		if lo > 0 {
			c.minDelay, c.maxDelay = lo, max(hi, lo)
		}
	}
}

// credential returns the bearer token to send and whether it can be renewed.
func (c *Client) credential() (token string, refreshable bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token, c.refresh != ""
}

func (c *Client) setTokens(access, refresh string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.token, c.refresh = access, refresh
}

// request is one call of the API.
type request struct {
	method, path string
	query        url.Values
	body         any  // sent as JSON when not nil
	out          any  // receives the "data" of a success when not nil
	bare         bool // out receives the whole answer: the receivers answer outside the envelope
	anonymous    bool // sent without a credential
}

// do sends r. A 401 to a request made with a renewable access token renews
// it, once, and sends r again.
func (c *Client) do(ctx context.Context, r request) error {
	var body []byte
	if r.body != nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			return fmt.Errorf("perch: encoding the request to %s: %w", r.path, err)
		}
	}
	var token string
	var refreshable bool
	if !r.anonymous {
		token, refreshable = c.credential()
	}
	res, err := c.send(ctx, r, body, token)
	if err != nil {
		return err
	}
	if res.StatusCode == http.StatusUnauthorized && refreshable {
		discard(res)
		if err := c.refreshAfter(ctx, token); err != nil {
			return err
		}
		token, _ = c.credential()
		if res, err = c.send(ctx, r, body, token); err != nil {
			return err
		}
	}
	defer discard(res)
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return responseError(res)
	}
	if r.out == nil || res.StatusCode == http.StatusNoContent {
		return nil
	}
	var into any = &struct {
		Data any `json:"data"`
	}{r.out}
	if r.bare {
		into = r.out
	}
	if err := json.NewDecoder(res.Body).Decode(into); err != nil {
		return fmt.Errorf("perch: reading the answer to %s %s: %w", r.method, r.path, err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, r request, body []byte, token string) (*http.Response, error) {
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("perch: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := c.http.Do(req)
	if ue, ok := errors.AsType[*url.Error](err); ok {
		// Without the query, which may hold a webhook token.
		return nil, fmt.Errorf("perch: %s %s%s: %w", r.method, c.base, r.path, ue.Err)
	}
	return res, err
}

// discard reads what is left of a body, so the connection can be reused, and
// closes it.
func discard(res *http.Response) {
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
}

// Call sends any request of the API (path under the server root, such as
// "/api/v1/org/teams") with in as its JSON body when not nil, and decodes the
// "data" of a success into out when not nil. It is for endpoints without a
// method of their own; errors are *perch.Error as everywhere.
func (c *Client) Call(ctx context.Context, method, path string, in, out any) error {
	return c.do(ctx, request{method: method, path: path, body: in, out: out})
}

// CallPage is Call for a GET of a list that pages (?cursor=&limit=, path
// with its query): it decodes the "data" of a success into out and returns
// the answer's "next_cursor", "" after the last page.
func (c *Client) CallPage(ctx context.Context, path string, out any) (next string, err error) {
	var page struct {
		Data       any     `json:"data"`
		NextCursor *string `json:"next_cursor"`
	}
	page.Data = out
	if err := c.do(ctx, request{method: http.MethodGet, path: path, out: &page, bare: true}); err != nil {
		return "", err
	}
	if page.NextCursor != nil {
		next = *page.NextCursor
	}
	return next, nil
}
