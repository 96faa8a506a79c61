package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func TestUnknownRouteAndWrongMethod(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	expect(t, a.call("GET", "/api/v1/nothing-here", "", nil), 404)
	expect(t, a.call("GET", "/no-such-page", "", nil), 404) // outside the API and the dashboard
	res := expect(t, a.call("PUT", "/api/v1/tokens", "", nil), 405)
	if got := res.Header.Get("Allow"); got != "GET, POST" {
		t.Fatalf("Allow = %q", got)
	}
	res = expect(t, a.call("GET", "/api/v1/tokens/abc", "", nil), 405)
	if got := res.Header.Get("Allow"); got != "PATCH, DELETE" {
		t.Fatalf("Allow = %q", got)
	}
}

func TestBadBodies(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		cases := []struct {
			name, body string
			status     int
		}{
			{"empty", "", 400},
			{"malformed", `{"label": `, 400},
			{"not an object", `["label"]`, 400},
			{"wrong type", `{"label": 42}`, 400},
			{"trailing garbage", `{"label": "a"} {"label": "b"}`, 400},
			{"unknown fields ignored", `{"label": "ok", "colour": "red"}`, 201},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				expect(t, a.call("POST", "/api/v1/tokens", ada.Access, c.body), c.status)
			})
		}
		res := expect(t, a.call("POST", "/api/v1/tokens", ada.Access, `{"label": 42}`), 400)
		if res.Fields()["label"] != "must be a string" {
			t.Fatalf("fields = %v", res.Fields())
		}
	})
}

func TestBodyOverTheLimitIs413(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ada := a.register("Ada")
	big := `{"label": "` + strings.Repeat("x", defaultBodyLimit) + `"}`
	res := expect(t, a.call("POST", "/api/v1/tokens", ada.Access, big), 413)
	if !strings.Contains(res.Raw, "1 MiB") {
		t.Fatalf("message does not name the limit: %s", res.Raw)
	}
	// Without a Content-Length, the limit holds while reading.
	req, _ := http.NewRequest("POST", "/api/v1/auth/login", strings.NewReader(big))
	req.ContentLength = -1
	rec := newRecorder()
	a.srv.ServeHTTP(rec, req)
	if rec.Code != 413 {
		t.Fatalf("streamed body: status %d", rec.Code)
	}
}

func TestPanicsBecomeQuiet500s(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	a.srv.mux.Handle("GET /test/panic", a.srv.handle(func(w http.ResponseWriter, r *http.Request) error {
		panic("secret detail")
	}))
	res := expect(t, a.call("GET", "/test/panic", "", nil), 500)
	if strings.Contains(res.Raw, "secret") {
		t.Fatalf("the panic leaked: %s", res.Raw)
	}
	if !strings.Contains(a.logs.String(), "secret detail") || !strings.Contains(a.logs.String(), res.Header.Get("X-Request-Id")) {
		t.Fatalf("the log lacks the panic or the request id:\n%s", a.logs)
	}
}

// TestEveryResponseSaysNoSniff: whatever the API answers, and however, the
// browser is told not to guess the content type (the dashboard's pages and
// assets are checked in internal/web).
func TestEveryResponseSaysNoSniff(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ada := a.register("Ada")
	a.srv.mux.Handle("GET /test/panic", a.srv.handle(func(w http.ResponseWriter, r *http.Request) error { panic("boom") }))
	for _, c := range []struct {
		method, path, token string
		body                any
		status              int
	}{
		{"GET", "/api/v1/billing/plans", "", nil, 200},
		{"GET", "/api/v1/users/me", ada.Access, nil, 200},
		{"GET", "/api/v1/users/me", "", nil, 401},
		{"DELETE", "/api/v1/tokens/nope", ada.Access, nil, 404},
		{"PUT", "/api/v1/tokens", ada.Access, nil, 405},
		{"POST", "/webhooks/inbound", "", map[string]string{"title": "Hi"}, 200},
		{"POST", "/webhooks/inbound?token=whk_nope", "", map[string]string{"title": "Hi"}, 401},
		{"GET", "/healthz", "", nil, 200},
		{"GET", "/metrics", "", nil, 200},
		{"GET", "/no-such-page", "", nil, 404},
		{"GET", "/test/panic", "", nil, 500},
	} {
		res := a.call(c.method, c.path, c.token, c.body)
		if res.Status != c.status {
			t.Errorf("%s %s: status %d, want %d: %.200s", c.method, c.path, res.Status, c.status, res.Raw)
		}
		if got := res.Header.Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
			t.Errorf("%s %s: X-Content-Type-Options %q, want nosniff", c.method, c.path, got)
		}
	}
}

func TestRequestIDsAreTheCallersOnlyWhenPlain(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	a.srv.mux.Handle("GET /test/fail", a.srv.handle(func(w http.ResponseWriter, r *http.Request) error {
		return errors.New("internal detail")
	}))
	for _, tc := range []struct{ sent, kept string }{
		{sent: "trace-42.a_b", kept: "trace-42.a_b"},
		{sent: "two words", kept: ""},
		{sent: strings.Repeat("x", 65), kept: ""},
	} {
		before := len(a.logs.String())
		req := httptest.NewRequest("GET", "/test/fail", nil)
		req.Header.Set("X-Request-Id", tc.sent)
		rec := newRecorder()
		a.srv.ServeHTTP(rec, req)
		got := rec.Header().Get("X-Request-Id")
		if tc.kept != "" && got != tc.kept || tc.kept == "" && (got == tc.sent || len(got) != 16) {
			t.Fatalf("sent %q: answered with request id %q", tc.sent, got)
		}
		// The log line of the failure names the same id, never a rejected one.
		logged := a.logs.String()[before:]
		if !strings.Contains(logged, "internal detail") || !strings.Contains(logged, got) || tc.kept == "" && strings.Contains(logged, tc.sent) {
			t.Fatalf("sent %q, answered %q; log:\n%s", tc.sent, got, logged)
		}
	}
}

func TestSignInEndpointsAreLimitedPerIP(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, func(o *Options) { o.Limits.Auth = perch.Limit{Count: 10, Period: 15 * time.Minute} })
		login := map[string]string{"email": "nobody@example.com", "password": "whatever it is"}
		for i := range 10 {
			res := expect(t, a.call("POST", "/api/v1/auth/login", "", login), 401)
			if got := res.Header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(9-i) {
				t.Fatalf("request %d: remaining %q", i+1, got)
			}
			if res.Header.Get("X-RateLimit-Limit") != "10" || res.Header.Get("X-RateLimit-Reset") == "" {
				t.Fatalf("headers: %v", res.Header)
			}
		}
		res := expect(t, a.call("POST", "/api/v1/auth/register", "", login), 429)
		if res.Header.Get("Retry-After") != "90" {
			t.Fatalf("Retry-After = %q", res.Header.Get("Retry-After"))
		}
		reset, _ := strconv.ParseInt(res.Header.Get("X-RateLimit-Reset"), 10, 64)
		if want := a.clock.Now().Add(15 * time.Minute).Unix(); reset < want || reset > want+1 {
			t.Fatalf("X-RateLimit-Reset = %d, want about %d", reset, want)
		}
		// Another address has its own allowance; refresh has a bucket of its own.
		expect(t, a.call("POST", "/api/v1/auth/login", "", login, "RemoteAddr", "198.51.100.7:4000"), 401)
		expect(t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": "prf_x"}), 401)
		a.clock.Advance(90 * time.Second)
		expect(t, a.call("POST", "/api/v1/auth/login", "", login), 401)
	})
}

// TestEachKindOfSignInRequestHasItsOwnBucket: the spec's limit is login's
// and register's; mistyped passwords do not lock a person out of resetting
// theirs, and a desktop sign-in does not spend sign-in attempts.
func TestEachKindOfSignInRequestHasItsOwnBucket(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) { o.Limits.Auth = perch.Limit{Count: 2, Period: 15 * time.Minute} })
	login := map[string]string{"email": "ada@example.com", "password": "not the password"}
	expect(t, a.call("POST", "/api/v1/auth/login", "", login), 401)
	expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": "A", "email": "x", "password": "y"}), 422)
	expect(t, a.call("POST", "/api/v1/auth/login", "", login), 429)
	for range 2 {
		expect(t, a.call("POST", "/api/v1/auth/forgot-password", "", map[string]string{"email": "ada@example.com"}), 202)
	}
	expect(t, a.call("POST", "/api/v1/auth/reset-password", "", map[string]string{"token": "pem_x", "password": "a fine new password"}), 429)
	a.startDevice(53682)
	a.startDevice(53683)
	expect(t, a.call("GET", "/api/v1/auth/device/authorize?port=53684&code_challenge="+perch.S256Challenge(newVerifier()), "", nil), 429)
}

// TestRateLimitHeadersOnEveryAnswer: a rate-limited route says how much is
// left on every answer, refusals of its credential and of its input too.
func TestRateLimitHeadersOnEveryAnswer(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ada := a.register("Ada")
	for _, res := range []*response{
		expect(t, a.call("GET", "/api/v1/users/me", "", nil), 401),
		expect(t, a.call("GET", "/api/v1/users/me", "pac_forged", nil), 401),
		expect(t, a.call("GET", "/ws", "", nil), 401),
		expect(t, a.call("POST", "/api/v1/tokens", ada.Access, map[string]string{"label": ""}), 400),
		expect(t, a.call("PATCH", "/api/v1/tokens/nope", ada.Access, map[string]string{"label": "x"}), 404),
		expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{}), 422),
		expect(t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{}), 422),
		expect(t, a.call("GET", "/api/v1/auth/device/status/dev_x", "", nil), 400),
	} {
		for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			if res.Header.Get(h) == "" {
				t.Errorf("%d %s: no %s", res.Status, res.Raw, h)
			}
		}
	}
}

func TestAuthenticatedEndpointsAreLimitedPerUser(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) { o.Limits.User = perch.Limit{Count: 3, Period: time.Minute} })
	ada, bob := a.register("Ada"), a.register("Bob")
	a.apiToken(ada, "ci") // one request
	expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200)
	expect(t, a.call("GET", "/api/v1/users/me", ada.Token, nil), 200) // the same user through another credential
	res := expect(t, a.call("GET", "/api/v1/tokens", ada.Access, nil), 429)
	if res.Header.Get("Retry-After") != "20" || res.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("headers: %v", res.Header)
	}
	expect(t, a.call("GET", "/api/v1/users/me", bob.Access, nil), 200)
}

func TestClientIPTrustsOnlyConfiguredProxies(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) {
		o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	})
	cases := []struct{ remote, xff, want string }{
		{"203.0.113.9:1000", "1.1.1.1", "203.0.113.9"},             // untrusted peer: header ignored
		{"10.0.0.2:1000", "1.1.1.1", "1.1.1.1"},                    // trusted proxy
		{"10.0.0.2:1000", "6.6.6.6, 1.1.1.1, 10.0.0.3", "1.1.1.1"}, // forged left part skipped
		{"10.0.0.2:1000", "", "10.0.0.2"},                          // no header
		{"10.0.0.2:1000", "garbage", "10.0.0.2"},                   // unreadable header
		{"[::ffff:10.0.0.2]:1000", "2001:db8::1", "2001:db8::1"},   // mapped IPv4 peer
	}
	for _, c := range cases {
		req, _ := http.NewRequest("GET", "/", nil)
		req.RemoteAddr = c.remote
		if c.xff != "" {
			req.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := a.srv.clientIP(req).String(); got != c.want {
			t.Errorf("%s via %q: client %s, want %s", c.remote, c.xff, got, c.want)
		}
	}
}

func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, store.SQLite)
	a := newAPI(t, s)
	expect(t, a.call("GET", "/healthz", "", nil), 200)
	expect(t, a.call("GET", "/readyz", "", nil), 200)
	a.call("GET", "/api/v1/billing/plans", "", nil)
	a.call("GET", "/missing", "", nil)
	a.post(a.webhookToken(a.register("Ada"), "user", ""), "Deploy finished")
	req, _ := http.NewRequest("GET", "/metrics", nil)
	rec := newRecorder()
	a.srv.ServeHTTP(rec, req)
	body := rec.Body.String()
	for _, want := range []string{
		`perch_http_requests_total{method="GET",route="GET /api/v1/billing/plans",status="200"} 1`,
		`perch_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`perch_http_request_duration_seconds_bucket{method="GET",route="GET /readyz"`,
		"perch_ingest_transactions_total 1\n",
		"perch_ingest_notifications_total 1\n",
		"perch_websocket_clients 0\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(a.logs.String(), `route="GET /api/v1/billing/plans" status=200`) {
		t.Errorf("no request log line:\n%s", a.logs)
	}
	s.Close()
	expect(t, a.call("GET", "/readyz", "", nil), 503)
	expect(t, a.call("GET", "/healthz", "", nil), 200)
}
