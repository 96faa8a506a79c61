package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perch-dev/perch"
)

// mustServer starts h and closes it when the test ends.
func mustServer(tb testing.TB, h http.Handler) *httptest.Server {
	tb.Helper()
	s := httptest.NewServer(h)
	tb.Cleanup(s.Close)
	return s
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, `{"error":{"code":"`+code+`","message":"`+message+`"}}`)
}

// jsonEqual fails unless got, encoded, decodes to the same value as want.
func jsonEqual(tb testing.TB, got any, want string) {
	tb.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		tb.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(b, &g); err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatalf("bad want %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		tb.Errorf("got  %s\nwant %s", b, want)
	}
}

// seen is what the fake server was asked.
type seen struct {
	Method, Path, Query, Auth string
	Body                      any
}

func TestMethods(t *testing.T) {
	t.Parallel()
	const user = `{"id":"1","email":"ann@example.com","name":"Ann","email_verified":false,"org_id":"7","org_role":"owner","is_admin":false,"newsletter":false,"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}`
	const apiToken = `{"id":"3","label":"laptop","token_prefix":"pat_abcd","is_active":true,"last_verified_at":null,"created_at":"2026-01-02T03:04:05Z","expires_at":null,"scopes":null}`
	const limitedToken = `{"id":"4","label":"ci","token_prefix":"pat_efgh","is_active":true,"last_verified_at":null,"created_at":"2026-01-02T03:04:05Z","expires_at":"2027-01-01T00:00:00Z","scopes":["read","send"]}`
	const whToken = `{"id":"4","label":"ci","sender":"inbound","scope":"team","team_id":"9","token_prefix":"whk_abcd","created_at":"2026-01-02T03:04:05Z","last_used_at":null}`
	const note = `{"id":"42","tab":"Code","title":"PR #1","message":"m","severity":"info","source":"code-host","url":"https://x","created_at":"2026-01-02T03:04:05Z","scope":{"type":"user","id":"1"},"read":false,"priority":3}`
	tests := []struct {
		name   string
		call   func(context.Context, *Client) (any, error)
		want   seen   // Body as JSON text, decoded before comparing
		status int    // of the answer
		answer string // body of the answer
		result string // JSON of what call returns
	}{{
		name:   "me",
		call:   func(ctx context.Context, c *Client) (any, error) { return c.Me(ctx) },
		want:   seen{Method: "GET", Path: "/api/v1/users/me", Auth: "Bearer pac_a"},
		status: 200, answer: `{"data":` + user + `}`, result: user,
	}, {
		name: "create API token",
		call: func(ctx context.Context, c *Client) (any, error) {
			k, raw, err := c.CreateAPIToken(ctx, "laptop")
			return map[string]any{"token": k, "raw": raw}, err
		},
		want:   seen{Method: "POST", Path: "/api/v1/tokens", Auth: "Bearer pac_a", Body: `{"label":"laptop"}`},
		status: 201, answer: `{"data":{"token":` + apiToken + `,"raw_token":"pat_abcdef"}}`,
		result: `{"token":` + apiToken + `,"raw":"pat_abcdef"}`,
	}, {
		name: "create limited API token",
		call: func(ctx context.Context, c *Client) (any, error) {
			ends := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
			k, raw, err := c.CreateLimitedAPIToken(ctx, APITokenInput{Label: "ci", ExpiresAt: &ends, Scopes: []perch.TokenScope{perch.ScopeSend}})
			return map[string]any{"token": k, "raw": raw}, err
		},
		want:   seen{Method: "POST", Path: "/api/v1/tokens", Auth: "Bearer pac_a", Body: `{"label":"ci","expires_at":"2027-01-01T00:00:00Z","scopes":["send"]}`},
		status: 201, answer: `{"data":{"token":` + limitedToken + `,"raw_token":"pat_efghij"}}`,
		result: `{"token":` + limitedToken + `,"raw":"pat_efghij"}`,
	}, {
		name: "empty scopes are sent, not widened",
		call: func(ctx context.Context, c *Client) (any, error) {
			_, _, err := c.CreateLimitedAPIToken(ctx, APITokenInput{Label: "ci", Scopes: []perch.TokenScope{}})
			return nil, err
		},
		want:   seen{Method: "POST", Path: "/api/v1/tokens", Auth: "Bearer pac_a", Body: `{"label":"ci","scopes":[]}`},
		status: 201, answer: `{"data":{"token":` + limitedToken + `,"raw_token":"pat_efghij"}}`, result: `null`,
	}, {
		name:   "API tokens",
		call:   func(ctx context.Context, c *Client) (any, error) { return c.APITokens(ctx) },
		want:   seen{Method: "GET", Path: "/api/v1/tokens", Auth: "Bearer pac_a"},
		status: 200, answer: `{"data":[` + apiToken + `]}`, result: `[` + apiToken + `]`,
	}, {
		name:   "delete API token",
		call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.DeleteAPIToken(ctx, "3") },
		want:   seen{Method: "DELETE", Path: "/api/v1/tokens/3", Auth: "Bearer pac_a"},
		status: 204, result: `null`,
	}, {
		name: "create webhook token",
		call: func(ctx context.Context, c *Client) (any, error) {
			return c.CreateWebhookToken(ctx, WebhookTokenInput{Label: "ci", Sender: perch.SenderInbound, Scope: perch.ScopeTeam, TeamID: "9"})
		},
		want:   seen{Method: "POST", Path: "/api/v1/webhook-tokens", Auth: "Bearer pac_a", Body: `{"label":"ci","sender":"inbound","scope":"team","team_id":"9"}`},
		status: 201, answer: `{"data":{"token":` + whToken + `,"raw_token":"whk_abcdef","url":"http://h/webhooks/inbound?token=whk_abcdef"}}`,
		result: `{"token":` + whToken + `,"raw_token":"whk_abcdef","url":"http://h/webhooks/inbound?token=whk_abcdef"}`,
	}, {
		name: "create user webhook token",
		call: func(ctx context.Context, c *Client) (any, error) {
			_, err := c.CreateWebhookToken(ctx, WebhookTokenInput{Label: "me", Sender: perch.SenderCodeHost, Scope: perch.ScopeUser})
			return nil, err
		},
		want:   seen{Method: "POST", Path: "/api/v1/webhook-tokens", Auth: "Bearer pac_a", Body: `{"label":"me","sender":"code-host","scope":"user"}`},
		status: 201, answer: `{"data":{"token":` + whToken + `,"raw_token":"whk_x","url":"u"}}`, result: `null`,
	}, {
		name:   "webhook tokens",
		call:   func(ctx context.Context, c *Client) (any, error) { return c.WebhookTokens(ctx) },
		want:   seen{Method: "GET", Path: "/api/v1/webhook-tokens", Auth: "Bearer pac_a"},
		status: 200, answer: `{"data":[` + whToken + `]}`, result: `[` + whToken + `]`,
	}, {
		name:   "delete webhook token",
		call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.DeleteWebhookToken(ctx, "4") },
		want:   seen{Method: "DELETE", Path: "/api/v1/webhook-tokens/4", Auth: "Bearer pac_a"},
		status: 204, result: `null`,
	}, {
		name:   "notifications since",
		call:   func(ctx context.Context, c *Client) (any, error) { return c.Notifications(ctx, "41", 50) },
		want:   seen{Method: "GET", Path: "/api/v1/notifications", Query: "limit=50&since=41", Auth: "Bearer pac_a"},
		status: 200, answer: `{"data":[` + note + `]}`, result: `[` + note + `]`,
	}, {
		name:   "newest notifications",
		call:   func(ctx context.Context, c *Client) (any, error) { return c.Notifications(ctx, "", 0) },
		want:   seen{Method: "GET", Path: "/api/v1/notifications", Auth: "Bearer pac_a"},
		status: 200, answer: `{"data":[]}`, result: `[]`,
	}, {
		name:   "mark read",
		call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.MarkRead(ctx, []string{"1", "2"}) },
		want:   seen{Method: "POST", Path: "/api/v1/notifications/read", Auth: "Bearer pac_a", Body: `{"ids":["1","2"]}`},
		status: 204, result: `null`,
	}, {
		name:   "mark all read",
		call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.MarkAllRead(ctx) },
		want:   seen{Method: "POST", Path: "/api/v1/notifications/read", Auth: "Bearer pac_a", Body: `{"all":true}`},
		status: 200, answer: `{"data":{"marked":2}}`, result: `null`,
	}, {
		name: "start device sign-in",
		call: func(ctx context.Context, c *Client) (any, error) {
			return c.StartDeviceSignIn(ctx, 53682, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "perch CLI")
		},
		want: seen{Method: "GET", Path: "/api/v1/auth/device/authorize",
			Query: "client_name=perch+CLI&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&port=53682"},
		status: 200, answer: `{"data":{"session_id":"dev_1","verification_url":"http://h/device?session_id=dev_1","user_code":"BCDF-GHJK","expires_in":600}}`,
		result: `{"session_id":"dev_1","verification_url":"http://h/device?session_id=dev_1","user_code":"BCDF-GHJK","expires_in":600}`,
	}, {
		name: "device sign-in status",
		call: func(ctx context.Context, c *Client) (any, error) {
			return c.DeviceSignInStatus(ctx, "dev_1", "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
		},
		want:   seen{Method: "GET", Path: "/api/v1/auth/device/status/dev_1", Query: "code_verifier=dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"},
		status: 200, answer: `{"data":{"status":"approved","callback_only":true}}`,
		result: `{"status":"approved","exchanged":false,"callback_only":true,"user":null,"access_token":"","refresh_token":"","expires_in":0}`,
	}, {
		name: "exchange device code",
		call: func(ctx context.Context, c *Client) (any, error) {
			return c.ExchangeDeviceCode(ctx, "dev_1", "dvc_x", "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
		},
		want: seen{Method: "POST", Path: "/api/v1/auth/device/exchange",
			Body: `{"session_id":"dev_1","code":"dvc_x","code_verifier":"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"}`},
		status: 200, answer: `{"data":{"user":` + user + `,"access_token":"pac_b","refresh_token":"prf_b","expires_in":900}}`,
		result: `{"user":` + user + `,"access_token":"pac_b","refresh_token":"prf_b","expires_in":900}`,
	}, {
		name:   "device request",
		call:   func(ctx context.Context, c *Client) (any, error) { return c.DeviceRequest(ctx, "dev_1") },
		want:   seen{Method: "GET", Path: "/api/v1/auth/device/requests/dev_1", Auth: "Bearer pac_a"},
		status: 200, answer: `{"data":{"session_id":"dev_1","client_name":"perch CLI","client_ip":"192.0.2.1","status":"pending","created_at":"2026-01-02T03:04:05Z","expires_at":"2026-01-02T03:14:05Z"}}`,
		result: `{"session_id":"dev_1","client_name":"perch CLI","client_ip":"192.0.2.1","status":"pending","created_at":"2026-01-02T03:04:05Z","expires_at":"2026-01-02T03:14:05Z"}`,
	}, {
		name: "approve device with the user code",
		call: func(ctx context.Context, c *Client) (any, error) {
			return c.AnswerDevice(ctx, "dev_1", true, "BCDF-GHJK")
		},
		want:   seen{Method: "POST", Path: "/api/v1/auth/device/complete", Auth: "Bearer pac_a", Body: `{"session_id":"dev_1","action":"approve","user_code":"BCDF-GHJK"}`},
		status: 200, answer: `{"data":{"status":"approved","redirect_url":"http://127.0.0.1:53682/callback?session_id=dev_1&code=dvc_x","user_code_confirmed":true}}`,
		result: `{"status":"approved","redirect_url":"http://127.0.0.1:53682/callback?session_id=dev_1&code=dvc_x","user_code_confirmed":true}`,
	}, {
		name:   "deny device",
		call:   func(ctx context.Context, c *Client) (any, error) { return c.AnswerDevice(ctx, "dev_1", false, "") },
		want:   seen{Method: "POST", Path: "/api/v1/auth/device/complete", Auth: "Bearer pac_a", Body: `{"session_id":"dev_1","action":"deny"}`},
		status: 200, answer: `{"data":{"status":"denied","redirect_url":"http://127.0.0.1:53682/callback?error=access_denied&session_id=dev_1","user_code_confirmed":false}}`,
		result: `{"status":"denied","redirect_url":"http://127.0.0.1:53682/callback?error=access_denied&session_id=dev_1","user_code_confirmed":false}`,
	}, {
		name: "send",
		call: func(ctx context.Context, c *Client) (any, error) {
			return nil, c.Send(ctx, "whk_secret", InboundEvent{Title: "Deployed", Message: "v2", Severity: perch.SeverityWarning})
		},
		want:   seen{Method: "POST", Path: "/webhooks/inbound", Query: "token=whk_secret", Body: `{"title":"Deployed","message":"v2","severity":"warning"}`},
		status: 200, answer: `{"received":true}`, result: `null`,
	}, {
		name: "deliver",
		call: func(ctx context.Context, c *Client) (any, error) {
			return c.Deliver(ctx, "whk_secret", InboundEvent{Title: "Deployed", Tab: "Deploys"})
		},
		want:   seen{Method: "POST", Path: "/webhooks/inbound", Query: "token=whk_secret", Body: `{"title":"Deployed","tab":"Deploys"}`},
		status: 200, answer: `{"received":true,"ids":["41","42"],"duplicate":true}`, result: `{"ids":["41","42"],"duplicate":true}`,
	}, {
		name: "a page of a list",
		call: func(ctx context.Context, c *Client) (any, error) {
			var items []map[string]any
			next, err := c.CallPage(ctx, "/api/v1/admin/users?q=ann&cursor=c1", &items)
			return map[string]any{"items": items, "next": next}, err
		},
		want:   seen{Method: "GET", Path: "/api/v1/admin/users", Query: "q=ann&cursor=c1", Auth: "Bearer pac_a"},
		status: 200, answer: `{"data":[{"id":"1"}],"next_cursor":"c2"}`, result: `{"items":[{"id":"1"}],"next":"c2"}`,
	}, {
		name: "the last page of a list",
		call: func(ctx context.Context, c *Client) (any, error) {
			var items []map[string]any
			next, err := c.CallPage(ctx, "/api/v1/admin/users", &items)
			return map[string]any{"items": items, "next": next}, err
		},
		want:   seen{Method: "GET", Path: "/api/v1/admin/users", Auth: "Bearer pac_a"},
		status: 200, answer: `{"data":[],"next_cursor":null}`, result: `{"items":[],"next":""}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got seen
			srv := mustServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = seen{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization")}
				if b, _ := io.ReadAll(r.Body); len(b) > 0 {
					got.Body = string(b)
				}
				if tt.answer == "" {
					w.WriteHeader(tt.status)
					return
				}
				writeJSON(w, tt.status, tt.answer)
			}))
			c := New(srv.URL+"/", WithAccessToken("pac_a", "prf_a"))
			res, err := tt.call(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, res, tt.result)
			wantBody, gotBody := tt.want.Body, got.Body
			tt.want.Body, got.Body = nil, nil
			if got != tt.want {
				t.Errorf("request %+v, want %+v", got, tt.want)
			}
			if wantBody != nil || gotBody != nil {
				jsonEqual(t, json.RawMessage(gotBody.(string)), wantBody.(string))
			}
		})
	}
}

func TestErrorRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   perch.Error
	}{
		{"not found", 404, nil, `{"error":{"code":"not_found","message":"No such token."}}`,
			perch.Error{Code: perch.ENOTFOUND, Message: "No such token."}},
		{"validation", 422, nil, `{"error":{"code":"validation_failed","message":"Some fields are not valid.","fields":{"password":"must be at least 10 characters","email":"is required"}}}`,
			perch.Error{Code: perch.EVALIDATION, Message: "Some fields are not valid.", Fields: map[string]string{"password": "must be at least 10 characters", "email": "is required"}}},
		{"rate limited", 429, http.Header{"Retry-After": {"90"}}, `{"error":{"code":"rate_limited","message":"Too many requests; try again in 1m30s."}}`,
			perch.Error{Code: perch.ERATELIMITED, Message: "Too many requests; try again in 1m30s. (Retry-After: 90)"}},
		{"proxy page", 502, nil, `<html>Bad Gateway</html>`,
			perch.Error{Code: perch.EINTERNAL, Message: "The server answered 502 Bad Gateway to GET /api/v1/users/me."}},
		{"other JSON", 500, nil, `{"message":"boom"}`,
			perch.Error{Code: perch.EINTERNAL, Message: "The server answered 500 Internal Server Error to GET /api/v1/users/me."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mustServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header()[k] = v
				}
				writeJSON(w, tt.status, tt.body)
			}))
			_, err := New(srv.URL, WithAPIToken("pat_x")).Me(t.Context())
			e, ok := errors.AsType[*perch.Error](err)
			if !ok {
				t.Fatalf("err = %v (%T), want a *perch.Error", err, err)
			}
			if !reflect.DeepEqual(*e, tt.want) {
				t.Errorf("err = %#v, want %#v", *e, tt.want)
			}
			if perch.ErrorCode(err) != tt.want.Code {
				t.Errorf("ErrorCode = %q", perch.ErrorCode(err))
			}
		})
	}
}

// authServer is a fake of the sign-in endpoints and GET /users/me, which
// accepts only the access token it handed out last.
type authServer struct {
	t         *testing.T
	refreshes atomic.Int32
	refuse    bool          // answer every refresh 401
	gate      chan struct{} // when set, a refresh waits for it
	mu        sync.Mutex
	access    string
	refresh   string
	n         int
}

func (a *authServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in map[string]string
	json.NewDecoder(r.Body).Decode(&in)
	a.mu.Lock()
	defer a.mu.Unlock()
	pair := func() string {
		a.n++
		a.access, a.refresh = "pac_"+string(rune('a'+a.n)), "prf_"+string(rune('a'+a.n))
		return `"access_token":"` + a.access + `","refresh_token":"` + a.refresh + `","token_type":"Bearer","expires_in":900`
	}
	switch r.URL.Path {
	case "/api/v1/auth/login":
		if in["email"] != "ann@example.com" || in["password"] != "correct horse" {
			writeError(w, 401, "unauthorized", "The e-mail address or password is incorrect.")
			return
		}
		writeJSON(w, 200, `{"data":{"user":{"id":"1","email":"ann@example.com","name":"Ann"},`+pair()+`}}`)
	case "/api/v1/auth/refresh":
		a.refreshes.Add(1)
		if a.gate != nil {
			a.mu.Unlock()
			select {
			case <-a.gate:
			case <-time.After(5 * time.Second):
				a.t.Error("the refresh gate never opened")
			}
			a.mu.Lock()
		}
		if a.refuse || in["refresh_token"] != a.refresh {
			writeError(w, 401, "unauthorized", "The refresh token is not valid.")
			return
		}
		writeJSON(w, 200, `{"data":{`+pair()+`}}`)
	case "/api/v1/auth/logout":
		if in["refresh_token"] == a.refresh {
			a.access, a.refresh = "", ""
		}
		w.WriteHeader(204)
	case "/api/v1/users/me":
		if r.Header.Get("Authorization") != "Bearer "+a.access || a.access == "" {
			writeError(w, 401, "unauthorized", "The access token has expired.")
			return
		}
		writeJSON(w, 200, `{"data":{"id":"1","email":"ann@example.com","name":"Ann"}}`)
	default:
		http.NotFound(w, r)
	}
}

func TestLoginLogout(t *testing.T) {
	t.Parallel()
	a := &authServer{t: t}
	c := New(mustServer(t, a).URL)
	if _, err := c.Me(t.Context()); perch.ErrorCode(err) != perch.EUNAUTHORIZED {
		t.Fatalf("signed out Me: %v", err)
	}
	if _, err := c.Login(t.Context(), "ann@example.com", "wrong password"); perch.ErrorCode(err) != perch.EUNAUTHORIZED {
		t.Fatalf("wrong password: %v", err)
	}
	s, err := c.Login(t.Context(), "ann@example.com", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if s.User.Email != "ann@example.com" || s.AccessToken != "pac_b" || s.RefreshToken != "prf_b" || s.ExpiresIn != 900 {
		t.Errorf("session = %+v", s)
	}
	if _, err := c.Me(t.Context()); err != nil {
		t.Fatalf("Me after Login: %v", err)
	}
	if err := c.Logout(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a.refresh != "" {
		t.Error("Logout did not end the sign-in on the server")
	}
	if _, err := c.Me(t.Context()); perch.ErrorCode(err) != perch.EUNAUTHORIZED || a.refreshes.Load() != 0 {
		t.Fatalf("Me after Logout: %v, %d refreshes", err, a.refreshes.Load())
	}
}

// Ten requests fail with an expired access token at once: one refresh serves
// them all, and every one of them succeeds with the new token.
func TestRefreshOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	const n = 10
	a := &authServer{t: t, access: "pac_expired", refresh: "prf_a", gate: make(chan struct{})}
	var refused atomic.Int32
	srv := mustServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/users/me" && r.Header.Get("Authorization") == "Bearer pac_old" {
			if refused.Add(1) == n {
				close(a.gate) // every request has been refused: let the refresh finish
			}
			writeError(w, 401, "unauthorized", "The access token has expired.")
			return
		}
		a.ServeHTTP(w, r)
	}))
	var updates [][2]string
	var mu sync.Mutex
	c := New(srv.URL, WithAccessToken("pac_old", "prf_a"), WithTokenUpdate(func(access, refresh string) {
		mu.Lock()
		defer mu.Unlock()
		updates = append(updates, [2]string{access, refresh})
	}))
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := c.Me(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := a.refreshes.Load(); got != 1 {
		t.Errorf("%d refreshes, want 1", got)
	}
	if !reflect.DeepEqual(updates, [][2]string{{"pac_b", "prf_b"}}) {
		t.Errorf("token updates = %v", updates)
	}
	if _, err := c.Me(t.Context()); err != nil || a.refreshes.Load() != 1 {
		t.Errorf("Me with the new token: %v, %d refreshes", err, a.refreshes.Load())
	}
}

func TestRefreshRefused(t *testing.T) {
	t.Parallel()
	a := &authServer{t: t, access: "pac_new", refresh: "prf_a", refuse: true}
	called := false
	c := New(mustServer(t, a).URL, WithAccessToken("pac_old", "prf_a"), WithTokenUpdate(func(string, string) { called = true }))
	for range 2 {
		if _, err := c.Me(t.Context()); perch.ErrorCode(err) != perch.EUNAUTHORIZED {
			t.Fatalf("Me = %v, want unauthorized", err)
		}
	}
	if a.refreshes.Load() != 1 || called {
		t.Errorf("%d refreshes (want 1: a refused refresh token is not sent again), update called %v", a.refreshes.Load(), called)
	}
}

func TestAPITokenIsNotRefreshed(t *testing.T) {
	t.Parallel()
	a := &authServer{t: t, access: "pac_a", refresh: "prf_a"}
	c := New(mustServer(t, a).URL, WithAPIToken("pat_deleted"))
	if _, err := c.Me(t.Context()); perch.ErrorCode(err) != perch.EUNAUTHORIZED {
		t.Fatalf("Me = %v", err)
	}
	if a.refreshes.Load() != 0 {
		t.Error("an API token was refreshed")
	}
}

// A transport error names the request but not its query, where a webhook
// token may be.
func TestTransportErrorHidesQuery(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	err := New(srv.URL).Send(t.Context(), "whk_secret", InboundEvent{Title: "x"})
	if err == nil || strings.Contains(err.Error(), "whk_secret") || !strings.Contains(err.Error(), "/webhooks/inbound") {
		t.Errorf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := New(srv.URL).Me(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled in its chain", err)
	}
}
