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
	"github.com/perch-dev/perch/internal/testenv"
)

// TestLingersOnlyUnderConcurrency drives the writer's lingering by hand: it
// waits for more deliveries only after it has seen several waiting at once,
// until the transaction holds half that many, never longer than maxLinger;
// a linger that runs out lowers what it waits for, and a lone delivery after
// that never waits.
func TestLingersOnlyUnderConcurrency(t *testing.T) {
	t.Parallel()
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
		testenv.Eventually(t, 10*time.Second, func() bool { return len(w.reqs) == 0 }, "the writer did not take what was queued")
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

	notLingering := func() {
		t.Helper()
		select {
		case d := <-lingering:
			t.Fatalf("lingered %s", d)
		default:
		}
	}

	// Four deliveries waiting when the writer starts: one transaction, taken
	// without lingering, since nothing yet says the load is concurrent.
	first := []<-chan reply{write("a"), write("b"), write("c"), write("d")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	for _, r := range first {
		wait(r)
	}
	expect(1, 4)
	notLingering()

	// Four were waiting at once, so the next transaction waits for two: the
	// first delivery lingers, the second ends the linger without its timer.
	e := write("e")
	if d := lingered(); d <= 0 || d > maxLinger {
		t.Fatalf("lingers for %s, want (0, %s]", d, maxLinger)
	}
	f := write("f")
	wait(e)
	wait(f)
	expect(2, 6)

	// A lone delivery: the writer lingers once more, in vain; the linger
	// running out shows the load is one sender now, and after that lone
	// transaction the writer no longer waits.
	g := write("g")
	lingered()
	taken()
	stopLingering <- time.Now()
	wait(g)
	expect(3, 7)
	wait(write("h"))
	expect(4, 8)
	notLingering()
}
