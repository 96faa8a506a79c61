package web_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/web"
)

// TestAPageIsLoggedAndCountedOnce: the dashboard calls the API in-process
// around the outer middleware, so a page view is one log line and one
// request counted, under the page's route and request id, however many API
// calls the page made.
func TestAPageIsLoggedAndCountedOnce(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	ada := a.register("Ada Lovelace")
	logged := len(requestLines(a.logs.String()))
	counted := requestCounts(t, a.metrics)

	// The page reads the user and the feed through the API.
	res := a.call("GET", "/notifications", "", nil, "Cookie", web.SessionCookie+"="+ada.Access)
	if res.Status != 200 || !strings.Contains(res.Raw, "Ada Lovelace") || !strings.Contains(res.Raw, "<h1>Notifications") {
		t.Fatalf("GET /notifications: %d %.300s", res.Status, res.Raw)
	}

	lines := requestLines(a.logs.String())[logged:]
	id := res.Header.Get("X-Request-Id")
	if len(lines) != 1 || !strings.Contains(lines[0], `route="GET /notifications" status=200`) || id == "" || !strings.HasSuffix(lines[0], "request_id="+id) {
		t.Fatalf("request id %q; the page view logged %d request lines, want 1 of GET /notifications with that id:\n%s", id, len(lines), strings.Join(lines, "\n"))
	}
	const page = "GET GET /notifications 200" // method, route, status
	after := requestCounts(t, a.metrics)
	if after[page] != counted[page]+1 {
		t.Errorf("the page view counted %v times under its route, want once", after[page]-counted[page])
	}
	for key, n := range after {
		if key != page && n != counted[key] {
			t.Errorf("perch_http_requests_total{%s} went from %v to %v on a page view", key, counted[key], n)
		}
	}
}

// TestANotFoundIsLoggedWithItsPath: a 404's log line says what was asked
// for (method and path), for a page and for the API alike, but never the
// query, which can carry a token.
func TestANotFoundIsLoggedWithItsPath(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	for _, path := range []string{"/no/such/page", "/api/v1/no-such-thing", "/webhooks/nobody"} {
		logged := len(requestLines(a.logs.String()))
		res := a.call("GET", path+"?token=whk_secret", "", nil)
		if res.Status != 404 {
			t.Fatalf("GET %s: %d, want 404", path, res.Status)
		}
		lines := requestLines(a.logs.String())[logged:]
		if len(lines) != 1 || !strings.Contains(lines[0], "method=GET ") || !strings.Contains(lines[0], " path="+path+" status=404 ") {
			t.Errorf("GET %s logged:\n%s\nwant one line with method=GET and path=%s", path, strings.Join(lines, "\n"), path)
		}
		if strings.Contains(a.logs.String(), "whk_secret") {
			t.Fatalf("the log holds the query's token:\n%s", a.logs)
		}
	}
}

// requestLines are the log's lines of requests answered.
func requestLines(log string) []string {
	var out []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, " msg=request ") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// requestCounts reads perch_http_requests_total from reg, by "method route
// status".
func requestCounts(tb testing.TB, reg *prometheus.Registry) map[string]float64 {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "perch_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["method"]+" "+labels["route"]+" "+labels["status"]] = m.GetCounter().GetValue()
		}
	}
	return out
}
