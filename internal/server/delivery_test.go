package server

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/feed"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

// Live delivery that cannot skip (issue 39): several instances on one
// PostgreSQL database deliver by reading the notifications table as a log,
// Redis only waking them. These tests run a Redis of their own, which they
// pause and stop, and poll every 50 ms when no wake-up comes (a lost
// wake-up is caught up within a poll; nothing here times it).

// deliveryPoll is the instances' poll interval in these tests.
const deliveryPoll = 50 * time.Millisecond

// instance is one Perch instance of a cluster on s, woken through the
// Redis at addr, with its own hub and a listener of its own.
func instance(t *testing.T, s *store.Store, redisURL, channel string) (*api, *feed.Feed, *httptest.Server) {
	t.Helper()
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	rc := redis.NewClient(opt)
	t.Cleanup(func() { rc.Close() })
	var f *feed.Feed
	a := newAPI(t, s, func(o *Options) {
		f = feed.New(s, fanout.NewRedis(rc, channel, o.Logger), deliveryPoll, o.Logger)
		o.Fanout, o.Hub, o.WakeupHealth = f, hub.New(), f.WakeupHealth
	})
	return a, f, a.live()
}

// titles reads n notification frames from c and answers their
// titles, in the order they came.
func (c *wsConn) titles(n int) []string {
	c.tb.Helper()
	var out []string
	for len(out) < n {
		if f := c.next(); f.Type == "notification" {
			out = append(out, f.notification(c.tb).Title)
		}
	}
	return out
}

// nothingMore fails unless c receives no notification for a few polls.
func (c *wsConn) nothingMore() {
	c.tb.Helper()
	deadline := time.After(4 * deliveryPoll)
	for {
		select {
		case f, ok := <-c.frames:
			if ok && f.Type == "notification" {
				c.tb.Fatalf("one notification too many: %s", f.Data)
			}
		case <-deadline:
			return
		}
	}
}

// TestDeliveryCrossesARedisWritePause is the review's finding: two
// instances, a client on each; during a Redis write pause (what a failover
// does) a delivery to the first instance is stored and answered while its
// wake-up cannot be sent, then the second instance stores another. Both
// clients get both, in order, once, with no further traffic.
func TestDeliveryCrossesARedisWritePause(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, store.Postgres) // several instances need PostgreSQL
	r := testenv.StartRedis(t)
	channel := fmt.Sprintf("perch-test-%d:fanout", time.Now().UnixNano())
	one, _, tsOne := instance(t, s, r.URL(), channel)
	two, _, tsTwo := instance(t, s, r.URL(), channel)
	ada := one.register("Ada")
	token := one.webhookToken(ada, "user", "")
	clients := []*wsConn{dial(t, tsOne, ada.Access, ""), dial(t, tsTwo, ada.Access, "")}
	for _, c := range clients {
		c.ready()
	}

	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	if err := admin.Do(t.Context(), "CLIENT", "PAUSE", "2000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	one.post(token, "during the pause, to one")
	two.post(token, "during the pause, to two")
	for i, c := range clients {
		if got := fmt.Sprint(c.titles(2)); got != "[during the pause, to one during the pause, to two]" {
			t.Fatalf("client %d got %s", i, got)
		}
		c.nothingMore()
	}
}

// TestDeliveryGoesOnWhileRedisIsDown: with Redis gone, the instance that
// stores a notification serves its own clients, and the other instance's
// clients get it from the log, with nothing more stored; the instance
// that stored it says wake-ups are failing.
func TestDeliveryGoesOnWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, store.Postgres)
	r := testenv.StartRedis(t)
	channel := fmt.Sprintf("perch-test-%d:fanout", time.Now().UnixNano())
	one, feedOne, tsOne := instance(t, s, r.URL(), channel)
	_, _, tsTwo := instance(t, s, r.URL(), channel)
	ada := one.register("Ada")
	token := one.webhookToken(ada, "user", "")
	clients := []*wsConn{dial(t, tsOne, ada.Access, ""), dial(t, tsTwo, ada.Access, "")}
	for _, c := range clients {
		c.ready()
	}
	one.post(token, "before")
	for _, c := range clients {
		c.titles(1)
	}

	r.Stop()
	one.post(token, "while Redis is down")
	for i, c := range clients {
		if got := fmt.Sprint(c.titles(1)); got != "[while Redis is down]" {
			t.Fatalf("client %d got %s", i, got)
		}
		c.nothingMore()
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return feedOne.WakeupHealth() != nil },
		"the storing instance never said its wake-ups fail")
	// Still ready (delivery goes on), and saying what is wrong.
	ready := expect(t, one.call("GET", "/readyz", "", nil), 200)
	if ready.Body["status"] != "degraded" || !strings.HasPrefix(fmt.Sprint(lookup(ready.Body, "checks.wakeups")), "failing") {
		t.Fatalf("/readyz while Redis is down: %s", ready.Raw)
	}
}
