package ingest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestLingersOnlyUnderConcurrency drives the writer's lingering by hand: it
// waits for more deliveries after a transaction that carried several, never
// after one that carried a single delivery, and never longer than maxLinger.
func TestLingersOnlyUnderConcurrency(t *testing.T) {
	s := storetest.New(t, store.SQLite)
	w := New(s, fanout.NewLocal(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	lingering := make(chan time.Duration, 1)
	stopLingering := make(chan time.Time)
	w.after = func(d time.Duration) <-chan time.Time {
		lingering <- d
		return stopLingering
	}
	// write queues a delivery as Write does, but returns once it is queued,
	// so the test knows what the writer can see.
	write := func(title string) <-chan reply {
		r := &request{reply: make(chan reply, 1), batch: []store.NewNotification{{Notification: perch.Notification{
			Title: title, Tab: "T", Severity: "info", Source: "inbound", Scope: perch.Scope{Type: perch.ScopeAll}}}}}
		w.reqs <- r
		return r.reply
	}
	wait := func(replied <-chan reply) {
		t.Helper()
		select {
		case r := <-replied:
			if r.err != nil || len(r.stored) != 1 {
				t.Fatalf("reply %+v", r)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a write was not answered")
		}
	}
	taken := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); len(w.reqs) > 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the writer did not take what was queued")
			}
		}
	}
	lingered := func() time.Duration {
		t.Helper()
		select {
		case d := <-lingering:
			return d
		case <-time.After(10 * time.Second):
			t.Fatal("the writer did not linger")
			return 0
		}
	}
	expect := func(transactions, notifications int64) {
		t.Helper()
		if tx, n := w.Stats(); tx != transactions || n != notifications {
			t.Fatalf("Stats = %d transactions, %d notifications; want %d, %d", tx, n, transactions, notifications)
		}
	}

	// Two deliveries waiting when the writer starts: one transaction, taken
	// without lingering, since nothing yet says the load is concurrent.
	a, b := write("a"), write("b")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	wait(a)
	wait(b)
	expect(1, 2)

	// After that transaction the writer lingers, and what arrives meanwhile
	// shares the next one.
	c := write("c")
	if d := lingered(); d <= 0 || d > maxLinger {
		t.Fatalf("lingers for %s, want (0, %s]", d, maxLinger)
	}
	d := write("d")
	taken()
	stopLingering <- time.Now()
	wait(c)
	wait(d)
	expect(2, 4)

	// A lone delivery after two: the writer lingers once more, in vain; after
	// that lone transaction it no longer does.
	e := write("e")
	lingered()
	stopLingering <- time.Now()
	wait(e)
	expect(3, 5)
	wait(write("f"))
	expect(4, 6)
	select {
	case d := <-lingering:
		t.Fatalf("lingered %s after a lone delivery", d)
	default:
	}
}
