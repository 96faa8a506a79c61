package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// pagerDutyV2Batch is a PagerDuty V2 delivery carrying n trigger messages.
func pagerDutyV2Batch(tb testing.TB, n int) string {
	tb.Helper()
	var one struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal([]byte(whRead(tb, "pagerduty/v2.incident.trigger.low.json")), &one); err != nil || len(one.Messages) != 1 {
		tb.Fatalf("the V2 sample: %v", err)
	}
	var batch struct {
		Messages []map[string]any `json:"messages"`
	}
	for i := range n {
		m := map[string]any{}
		for k, v := range one.Messages[0] {
			m[k] = v
		}
		m["id"] = fmt.Sprintf("msg-%d", i)
		batch.Messages = append(batch.Messages, m)
	}
	b, _ := json.Marshal(batch)
	return string(b)
}

// countAll is how many notifications a user sees, broadcasts included.
func (a *api) countAll(acc *account) int {
	a.t.Helper()
	return len(expect(a.t, a.call("GET", "/api/v1/notifications?limit=200", acc.Access, nil), 200).List())
}

// TestOneDeliveryMakesBoundedNotifications: a delivery may not make more
// than the configured number of notifications, whatever its scope, and an
// anonymous broadcast counts its notifications, not its requests, against
// the address's limit.
func TestOneDeliveryMakesBoundedNotifications(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, func(o *Options) {
			o.Webhooks.MaxDeliveryNotifications = 5
			o.Webhooks.BroadcastLimit = perch.Limit{Count: 8, Period: time.Hour}
		})
		ada := a.register("Ada")
		_, token := a.whToken(ada, "incidents", "org", "")

		// Over the cap: refused whole, for a token's scope and for a broadcast.
		for _, path := range []string{"/webhooks/incidents?token=" + token, "/webhooks/incidents"} {
			res := expect(t, a.call("POST", path, "", pagerDutyV2Batch(t, 6)), 413)
			if !strings.Contains(res.Body["error"].(map[string]any)["message"].(string), "at most 5") {
				t.Fatalf("the refusal does not say the cap: %s", res.Raw)
			}
		}
		if n := a.countAll(ada); n != 0 {
			t.Fatalf("%d notifications from refused deliveries", n)
		}

		// At the cap: fine. Anonymously, each notification counts (and the
		// refused delivery above spent one, for its request): 6 of 8.
		expect(t, a.call("POST", "/webhooks/incidents?token="+token, "", pagerDutyV2Batch(t, 5)), 200)
		res := expect(t, a.call("POST", "/webhooks/incidents", "", pagerDutyV2Batch(t, 5)), 200)
		if got := res.Header.Get("X-RateLimit-Remaining"); got != "2" {
			t.Fatalf("X-RateLimit-Remaining = %q after 6 of 8", got)
		}
		// Three more would pass a request count, not a notification count.
		expect(t, a.call("POST", "/webhooks/incidents", "", pagerDutyV2Batch(t, 3)), 429)
		if n := a.countAll(ada); n != 10 {
			t.Fatalf("%d notifications, want the 5 of the token and the 5 broadcast", n)
		}
		expect(t, a.call("POST", "/webhooks/incidents", "", pagerDutyV2Batch(t, 1)), 200)
	})
}

// rawRequest writes head (a request line and headers, without the blank
// line) and then body to the server, and returns the answer; closeWrite
// ends the client's side once the body is written.
func rawRequest(t *testing.T, addr, head, body string, closeWrite bool) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head+"\r\n\r\n"+body); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		conn.(*net.TCPConn).CloseWrite()
	}
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func errorCodeOf(t *testing.T, res *http.Response) string {
	t.Helper()
	var e errorBody
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil {
		t.Fatalf("status %d: the body is not the error shape: %v", res.StatusCode, err)
	}
	return e.Error.Code
}

// TestSlowAndCutOffBodies: a body that does not arrive in time, or ends
// before its declared length, is the client's fault (400), and a receiver
// refuses a bad token before waiting for the body.
func TestSlowAndCutOffBodies(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) {
		o.Limits.BodyTimeout, o.Webhooks.ReceiverBodyTimeout = 300*time.Millisecond, 300*time.Millisecond
	})
	ts := a.live()
	addr := strings.TrimPrefix(ts.URL, "http://")
	req := func(target string, length int) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: perch.test\r\nContent-Type: application/json\r\nContent-Length: %d", target, length)
	}
	cases := []struct {
		name, head, body string
		closeWrite       bool
		status           int
		code             string
	}{
		{"API body too slow", req("/api/v1/auth/login", 100), `{"em`, false, 400, perch.EBADREQUEST},
		{"receiver body too slow", req("/webhooks/inbound", 100), `{"ti`, false, 400, perch.EBADREQUEST},
		{"API body cut off", req("/api/v1/auth/login", 100), `{"email": "a@b.c"`, true, 400, perch.EBADREQUEST},
		{"receiver body cut off", req("/webhooks/inbound", 100), `{"title": "x"`, true, 400, perch.EBADREQUEST},
		{"bad token, body never sent", req("/webhooks/inbound?token=whk_nonsense", 100), "", false, 401, perch.EUNAUTHORIZED},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := rawRequest(t, addr, c.head, c.body, c.closeWrite)
			if res.StatusCode != c.status {
				t.Fatalf("status %d, want %d", res.StatusCode, c.status)
			}
			if got := errorCodeOf(t, res); got != c.code {
				t.Fatalf("error code %q, want %q", got, c.code)
			}
		})
	}
	if strings.Contains(a.logs.String(), "internal error") {
		t.Fatalf("a client's fault was logged as an internal error:\n%s", a.logs)
	}
}
