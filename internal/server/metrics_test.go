package server

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestMetricsBehindAToken: with Metrics.Token set, /metrics answers only
// "Authorization: Bearer <token>", and 401 in the error shape otherwise.
func TestMetricsBehindAToken(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) { o.Metrics.Token = "s3cret-scrape-token" })
	ada := a.register("Ada")
	for _, auth := range []string{"", "Bearer", "Bearer wrong", "Bearer s3cret-scrape-token-and-more", "Bearer s3cret-scrape-toke",
		"Basic czNjcmV0LXNjcmFwZS10b2tlbg==", "s3cret-scrape-token", "Bearer " + ada.Access} {
		res := expect(t, a.call("GET", "/metrics", "", nil, "Authorization", auth), 401)
		if strings.Contains(res.Raw, "perch_http_requests_total") || res.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("Authorization %q: %v %.200s", auth, res.Header, res.Raw)
		}
	}
	for _, auth := range []string{"Bearer s3cret-scrape-token", "bearer  s3cret-scrape-token "} {
		res := expect(t, a.call("GET", "/metrics", "", nil, "Authorization", auth), 200)
		if !strings.Contains(res.Raw, "perch_http_requests_total") {
			t.Fatalf("Authorization %q: no metrics: %.300s", auth, res.Raw)
		}
	}
	// Without the setting, /metrics is open, as before.
	b := newAPI(t, storetest.New(t, store.SQLite))
	expect(t, b.call("GET", "/metrics", "", nil), 200)
}

// TestMetricsOnAListenerOfTheirOwn: with Metrics.Separate, the main handler
// has no /metrics and MetricsHandler serves it (and nothing else), still
// behind the token when one is set.
func TestMetricsOnAListenerOfTheirOwn(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) { o.Metrics.Separate = true; o.Metrics.Token = "tok" })
	expect(t, a.call("GET", "/metrics", "", nil, "Authorization", "Bearer tok"), 404)
	a.call("GET", "/api/v1/billing/plans", "", nil)

	m := a.srv.MetricsHandler()
	serve := func(path, auth string) *response {
		req := httptest.NewRequest("GET", path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		res := &response{Status: rec.Code, Header: rec.Header(), Raw: rec.Body.String()}
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			if err := json.Unmarshal(rec.Body.Bytes(), &res.Body); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s on the metrics listener: no nosniff", path)
		}
		return res
	}
	expect(t, serve("/metrics", ""), 401)
	res := expect(t, serve("/metrics", "Bearer tok"), 200)
	if !strings.Contains(res.Raw, `perch_http_requests_total{method="GET",route="GET /api/v1/billing/plans",status="200"} 1`) {
		t.Fatalf("the metrics listener does not count the main one's requests: %.2000s", res.Raw)
	}
	for _, path := range []string{"/", "/healthz", "/api/v1/billing/plans", "/signin"} {
		expect(t, serve(path, "Bearer tok"), 404)
	}
}
