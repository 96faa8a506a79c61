package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/feed"
	"github.com/perch-dev/perch/internal/ingest"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// flaky is fan-out that fails while broken is set, as when Redis is away.
type flaky struct {
	perch.Fanout
	broken atomic.Bool
}

func (f *flaky) Publish(ctx context.Context, m perch.FanoutMessage) error {
	if f.broken.Load() {
		return errors.New("fan-out unavailable")
	}
	return f.Fanout.Publish(ctx, m)
}

func start(t *testing.T, s *store.Store, f perch.Fanout) *ingest.Writer {
	t.Helper()
	w := ingest.New(s, f, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func event(title string) store.NewNotification {
	return store.NewNotification{Notification: perch.Notification{Title: title, Tab: "T", Severity: "info", Source: "inbound", Scope: perch.Scope{Type: perch.ScopeAll}}}
}

// subscribe collects what fan-out delivers.
func subscribe(t *testing.T, f perch.Fanout) (<-chan perch.FanoutMessage, *atomic.Int64) {
	t.Helper()
	got := make(chan perch.FanoutMessage, 10_000)
	var lost atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := f.Subscribe(ctx, func(m perch.FanoutMessage) { got <- m }, func() { lost.Add(1) }); err != nil {
		t.Fatal(err)
	}
	return got, &lost
}

func next(t *testing.T, got <-chan perch.FanoutMessage) perch.FanoutMessage {
	t.Helper()
	select {
	case m := <-got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("nothing published")
		return perch.FanoutMessage{}
	}
}

// While fan-out is down, deliveries are still stored and answered (the
// store is the log clients replay from); once it is back, notifications
// flow again.
func TestAcceptsWhileFanoutIsDown(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		f := &flaky{Fanout: fanout.NewLocal()}
		got, _ := subscribe(t, f)
		w := start(t, s, f)
		ctx := context.Background()
		if _, err := w.Write(ctx, event("before")); err != nil {
			t.Fatal(err)
		}
		if m := next(t, got); m.Kind != perch.FanoutNotification || m.Notification.Title != "before" {
			t.Fatalf("published %+v", m)
		}
		f.broken.Store(true)
		stored, err := w.Write(ctx, event("while down"))
		if err != nil || len(stored) != 1 || stored[0].Notification.ID == "" {
			t.Fatalf("a delivery while fan-out is down: %v, %v; want it stored", stored, err)
		}
		f.broken.Store(false)
		// Publishing pauses for a moment after a failure; write until it
		// resumes.
		i := 0
		testenv.Eventually(t, 10*time.Second, func() bool {
			i++
			if _, err := w.Write(ctx, event(fmt.Sprintf("after %d", i))); err != nil {
				t.Fatal(err)
			}
			select {
			case m := <-got:
				if m.Kind != perch.FanoutNotification || m.Notification.Title != fmt.Sprintf("after %d", i) {
					t.Fatalf("first message after the outage is %+v; want notification %q", m, fmt.Sprintf("after %d", i))
				}
				return true
			case <-time.After(50 * time.Millisecond):
				return false
			}
		}, "publishing never resumed")
	})
}

// slow is fan-out whose Publish takes up to a millisecond.
type slow struct{ perch.Fanout }

func (f *slow) Publish(ctx context.Context, m perch.FanoutMessage) error {
	time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
	return f.Fanout.Publish(ctx, m)
}

// Several instances (writers of their own, on one PostgreSQL database,
// their notifications read back as a log by every instance's feed) deliver
// in id order with nothing missed: ids become visible in the order they are
// given, so a reader that has seen id n never later finds a smaller one,
// however the commits and the reads interleave.
func TestInstancesDeliverInIDOrder(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.Postgres)
	// Wake-ups take a while, as a network round trip does.
	transport := &slow{Fanout: fanout.NewLocal()}
	const instances, writes = 3, 200
	var stores []*store.Store
	var subs []<-chan perch.FanoutMessage
	for i := range instances {
		s, err := store.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if i == 0 {
			if err := s.Migrate(context.Background(), quiet); err != nil {
				t.Fatal(err)
			}
		}
		stores = append(stores, s)
	}
	feeds := make([]*feed.Feed, instances)
	for i, s := range stores {
		feeds[i] = feed.New(s, transport, time.Millisecond, quiet) // reading all the time, to meet commits half way
		got, _ := subscribe(t, feeds[i])
		subs = append(subs, got)
	}
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			w := start(t, s, feeds[i])
			var inner sync.WaitGroup
			for j := range writes {
				inner.Go(func() {
					if _, err := w.Write(context.Background(), event(fmt.Sprintf("%d-%d", i, j))); err != nil {
						t.Error(err)
					}
				})
			}
			inner.Wait()
		})
	}
	wg.Wait()
	for i, got := range subs {
		var last int64
		for range instances * writes {
			m := next(t, got)
			id, _ := store.ParseNotificationID(m.Notification.ID)
			if id <= last {
				t.Fatalf("instance %d: id %d delivered after %d", i, id, last)
			}
			last = id
		}
	}
}
