package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// readyz asks whether the instance is ready and checks the answer's shape:
// 200 with status, or 503 unavailable in the error shape with Retry-After;
// checks beside either.
func (a *api) readyz(status int) (checks map[string]any, res *response) {
	a.t.Helper()
	res = expect(a.t, a.call("GET", "/readyz", "", nil), status)
	if status == 503 && res.Header.Get("Retry-After") == "" {
		a.t.Fatalf("503 without Retry-After: %s", res.Raw)
	}
	checks, _ = res.Body["checks"].(map[string]any)
	if checks == nil {
		a.t.Fatalf("no checks: %s", res.Raw)
	}
	return checks, res
}

// tryDelivery posts an inbound event and returns the answer, whatever it is.
func (a *api) tryDelivery(token, title string) *response {
	a.t.Helper()
	return a.call("POST", "/webhooks/inbound?token="+token, "", map[string]string{"title": title})
}

// wantUnavailable fails t unless res is a storage outage's answer: 503
// unavailable, in the error shape, with Retry-After.
func wantUnavailable(t *testing.T, res *response) {
	t.Helper()
	expect(t, res, 503)
	if res.ErrorCode() != perch.EUNAVAILABLE || res.Header.Get("Retry-After") != retryUnavailable || !strings.Contains(res.ErrorMessage(), "Storage is unavailable") {
		t.Fatalf("want 503 unavailable with Retry-After %s, got %v %s", retryUnavailable, res.Header, res.Raw)
	}
}

// TestAStorageOutageAnswersUnavailableAndMakesTheInstanceUnready: while the
// database cannot take writes (SQLite refusing them, PostgreSQL cut off), a
// delivery is answered 503 unavailable with Retry-After, not 500, so the
// sender delivers it again; three failed writes in a row make /readyz 503,
// saying what is wrong; the first write that succeeds afterwards makes it
// 200 again.
func TestAStorageOutageAnswersUnavailableAndMakesTheInstanceUnready(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Backends {
		t.Run(string(dialect), func(t *testing.T) {
			s, outage := storetest.WithOutage(t, dialect)
			a := newAPI(t, s)
			ada := a.register("Ada")
			token := a.webhookToken(ada, "user", "")
			a.post(token, "before") // the token is cached now, so deliveries go straight to the write
			// Its use is written now, not in the outage: the outage's failed
			// writes are the deliveries' alone.
			a.srv.touches.wait()
			if checks, res := a.readyz(200); res.Body["status"] != "ready" || checks["database"] != "ok" || checks["writes"] != "ok" || checks["wakeups"] != nil {
				t.Fatalf("ready: %s", res.Raw)
			}

			outage.Start()
			for i := 1; i <= writeFailuresUnready; i++ {
				wantUnavailable(t, a.tryDelivery(token, "during"))
				if i == writeFailuresUnready {
					break
				}
				if dialect == store.SQLite { // PostgreSQL's ping fails too, at once
					if checks, _ := a.readyz(200); checks["writes"] != "ok" {
						t.Fatalf("unready after %d failed writes: %v", i, checks)
					}
				}
			}
			checks, res := a.readyz(503)
			writes, _ := checks["writes"].(string)
			if !strings.HasPrefix(writes, "failing: 3 writes in a row since ") || !strings.Contains(res.ErrorMessage(), "writes are failing") {
				t.Fatalf("unready: %s", res.Raw)
			}
			switch dialect {
			case store.SQLite:
				if checks["database"] != "ok" || !strings.HasSuffix(writes, "the database refuses writes") {
					t.Fatalf("unready: %s", res.Raw)
				}
			case store.Postgres:
				if checks["database"] != "failing: the database is not reachable" || !strings.HasSuffix(writes, "the database is not reachable") {
					t.Fatalf("unready: %s", res.Raw)
				}
			}

			outage.End()
			a.readyz(503) // nothing has been written since
			a.post(token, "after")
			if checks, _ := a.readyz(200); checks["database"] != "ok" || checks["writes"] != "ok" {
				t.Fatalf("after a write went in: %v", checks)
			}
		})
	}
}

// TestAnUnreadyInstanceTriesAWriteOfItsOwn: once writes have been failing
// and none has been tried for writeProbeAfter (a load balancer has taken
// the instance out of rotation), /readyz tries one itself: it stays
// unready while that fails, and is ready again as soon as one succeeds,
// without any delivery.
func TestAnUnreadyInstanceTriesAWriteOfItsOwn(t *testing.T) {
	t.Parallel()
	s, outage := storetest.WithOutage(t, store.SQLite)
	a := newAPI(t, s)
	ada := a.register("Ada")
	token := a.webhookToken(ada, "user", "")
	a.post(token, "before")
	outage.Start()
	for range writeFailuresUnready {
		wantUnavailable(t, a.tryDelivery(token, "during"))
	}
	a.clock.Advance(writeProbeAfter - time.Second)
	if checks, _ := a.readyz(503); !strings.HasPrefix(checks["writes"].(string), "failing: 3 writes") {
		t.Fatalf("a write was tried before its time: %v", checks)
	}
	a.clock.Advance(time.Second)
	if checks, _ := a.readyz(503); !strings.HasPrefix(checks["writes"].(string), "failing: 4 writes") {
		t.Fatalf("the probe's failure is not counted: %v", checks)
	}
	a.readyz(503) // the probe failed just now: not tried again yet

	outage.End()
	a.readyz(503)
	a.clock.Advance(writeProbeAfter)
	if checks, res := a.readyz(200); checks["writes"] != "ok" || res.Body["status"] != "ready" {
		t.Fatalf("after a probe went in: %s", res.Raw)
	}
}

// TestReadinessReportsTheWakeupChannel: the wake-up channel's health, when
// the server is given one, is the check "wakeups"; its failure leaves the
// instance ready (delivery goes on without it) but degraded, and says what
// is wrong only in the words of Perch's own errors.
func TestReadinessReportsTheWakeupChannel(t *testing.T) {
	t.Parallel()
	var wakeups error
	a := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) { o.WakeupHealth = func() error { return wakeups } })
	if checks, res := a.readyz(200); res.Body["status"] != "ready" || checks["wakeups"] != "ok" {
		t.Fatalf("wake-ups working: %s", res.Raw)
	}
	wakeups = perch.Errorf(perch.EUNAVAILABLE, "Redis does not answer.")
	if checks, res := a.readyz(200); res.Body["status"] != "degraded" || checks["wakeups"] != "failing: Redis does not answer" || checks["writes"] != "ok" {
		t.Fatalf("wake-ups down: %s", res.Raw)
	}
	wakeups = errors.New("dial tcp 10.1.2.3:6379: connect: connection refused")
	if checks, res := a.readyz(200); checks["wakeups"] != "failing: the wake-up channel is down" || strings.Contains(res.Raw, "10.1.2.3") {
		t.Fatalf("wake-ups down, for internal reasons: %s", res.Raw)
	}
}
