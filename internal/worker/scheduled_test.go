package worker

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/ingest"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

// scheduledWorld is a store on a clock the test moves, a user with a
// webhook token, and what the fan-out published.
type scheduledWorld struct {
	t     *testing.T
	s     *store.Store
	clock *storetest.Clock
	user  *perch.User
	token *perch.WebhookToken
	fan   *fanout.Local

	mu        sync.Mutex
	published []*perch.Notification
}

func newScheduledWorld(t *testing.T, s *store.Store) *scheduledWorld {
	t.Helper()
	clock := storetest.NewClock()
	s.Now = clock.Now
	u, err := s.CreateUser(t.Context(), "Ada", "ada@example.com", "x")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.CreateWebhookToken(t.Context(), &perch.WebhookToken{UserID: u.ID, OrgID: u.OrgID, Label: "cron", Sender: perch.SenderInbound,
		Scope: perch.ScopeUser, TokenPrefix: "whk_a"}, "hash-a")
	if err != nil {
		t.Fatal(err)
	}
	w := &scheduledWorld{t: t, s: s, clock: clock, user: u, token: tok, fan: fanout.NewLocal()}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := w.fan.Subscribe(ctx, func(m perch.FanoutMessage) {
		if m.Kind == perch.FanoutNotification {
			w.mu.Lock()
			w.published = append(w.published, m.Notification)
			w.mu.Unlock()
		}
	}, func() {}); err != nil {
		t.Fatal(err)
	}
	return w
}

// worker is a new worker with a writer of its own, as a freshly started
// instance has, on the world's store and fan-out.
func (w *scheduledWorld) worker() *Worker {
	w.t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	writer := ingest.New(w.s, w.fan, logger)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { writer.Run(ctx); close(done) }()
	w.t.Cleanup(func() { cancel(); <-done })
	return New(Options{Store: w.s, Ingest: writer, Logger: logger, Now: w.clock.Now})
}

func (w *scheduledWorld) schedule(title string, in time.Duration) store.ScheduledReceipt {
	w.t.Helper()
	out, err := w.s.ScheduleNotifications(w.t.Context(), []store.NewScheduled{{TokenID: w.token.ID, UserID: w.user.ID, OrgID: w.user.OrgID,
		DeliverAt: w.clock.Now().Add(in), Notification: perch.Notification{Tab: "Inbound", Title: title, Severity: perch.SeverityInfo,
			Source: perch.SourceInbound, Scope: perch.Scope{Type: perch.ScopeUser, ID: w.user.ID}}}})
	if err != nil {
		w.t.Fatal(err)
	}
	return out[0]
}

// history is the user's notifications, as GET /api/v1/notifications reads them.
func (w *scheduledWorld) history() []*perch.Notification {
	w.t.Helper()
	a, err := w.s.Audience(w.t.Context(), w.user)
	if err != nil {
		w.t.Fatal(err)
	}
	list, err := w.s.Notifications(w.t.Context(), a, "", 100)
	if err != nil {
		w.t.Fatal(err)
	}
	return list
}

func (w *scheduledWorld) publishedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.published)
}

// settled is how many notifications the fan-out published, once all it
// was given so far reached the subscriber: the fan-out delivers in the
// background, in order, so a sentinel published now comes after them.
func (w *scheduledWorld) settled() int {
	w.t.Helper()
	sentinel := &perch.Notification{Title: "sentinel"}
	if err := w.fan.Publish(w.t.Context(), perch.FanoutMessage{Kind: perch.FanoutNotification, Notification: sentinel}); err != nil {
		w.t.Fatal(err)
	}
	testenv.Eventually(w.t, 10*time.Second, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.published) > 0 && w.published[len(w.published)-1] == sentinel
	}, "the fan-out did not deliver the sentinel")
	w.mu.Lock()
	defer w.mu.Unlock()
	w.published = w.published[:len(w.published)-1]
	return len(w.published)
}

func tick(t *testing.T, wk *Worker) {
	t.Helper()
	if err := wk.Tick(t.Context()); err != nil {
		t.Fatalf("Tick: %v", err)
	}
}

func TestScheduledDeliveredOnceAtItsTime(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		w := newScheduledWorld(t, s)
		wk := w.worker()
		r := w.schedule("standup", 30*time.Minute)
		tick(t, wk)
		w.clock.Advance(30*time.Minute - time.Millisecond)
		tick(t, wk)
		if h, n := w.history(), w.settled(); len(h) != 0 || n != 0 {
			t.Fatalf("before its time: history %d, published %d", len(h), n)
		}
		w.clock.Advance(time.Millisecond)
		tick(t, wk)
		tick(t, wk)
		h, n := w.history(), w.settled()
		if len(h) != 1 || n != 1 {
			t.Fatalf("after its time: history %d, published %d", len(h), n)
		}
		if h[0].Title != "standup" || h[0].DeliverAt == nil || !h[0].DeliverAt.Equal(r.DeliverAt) || !h[0].CreatedAt.Equal(w.clock.Now()) {
			t.Fatalf("delivered %+v (deliver_at %v), want due %v", h[0], h[0].DeliverAt, r.DeliverAt)
		}
		if list, _ := s.ScheduledNotifications(t.Context(), w.user.ID); len(list) != 0 {
			t.Fatalf("still listed after delivery: %+v", list)
		}
	})
}

// A new instance on the same database delivers what an old one scheduled,
// and what an old one claimed and wrote but did not record done goes out
// once (the dedupe key), after the lease.
func TestScheduledDeliveredAfterARestart(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		w := newScheduledWorld(t, s)
		w.schedule("first", time.Hour)
		w.schedule("second", 2*time.Hour)
		w.clock.Advance(time.Hour)
		tick(t, w.worker())
		// The old instance claims the second and writes it, then stops.
		w.clock.Advance(time.Hour)
		due, err := s.DueScheduled(t.Context(), w.clock.Now(), ScheduledLease, 10)
		if err != nil || len(due) != 1 {
			t.Fatalf("claimed %d, %v", len(due), err)
		}
		old := w.worker()
		if _, err := old.ingest.Write(t.Context(), due[0].Delivery()); err != nil {
			t.Fatal(err)
		}
		fresh := w.worker()
		tick(t, fresh) // within the lease: nothing
		w.clock.Advance(ScheduledLease)
		tick(t, fresh)
		h, n := w.history(), w.settled()
		if len(h) != 2 || h[0].Title != "first" || h[1].Title != "second" || n != 2 {
			t.Fatalf("history %d, published %d", len(h), n)
		}
		if next, ok, _ := s.NextScheduled(t.Context(), w.clock.Now()); ok {
			t.Fatalf("still pending, due %v", next)
		}
	})
}

// Two workers on one database, ticking at once, deliver each once.
func TestScheduledTwoWorkersDeliverOnce(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		w := newScheduledWorld(t, s)
		for range 20 {
			w.schedule("n", time.Minute)
		}
		w.clock.Advance(time.Minute)
		a, b := w.worker(), w.worker()
		var wg sync.WaitGroup
		for _, wk := range []*Worker{a, b, a, b} {
			wg.Go(func() {
				if err := wk.Tick(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if h, n := w.history(), w.settled(); len(h) != 20 || n != 20 {
			t.Fatalf("history %d, published %d; want 20 each", len(h), n)
		}
	})
}

func TestScheduledCancelledNeverArrives(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		w := newScheduledWorld(t, s)
		r := w.schedule("never", time.Minute)
		if _, err := s.CancelScheduled(t.Context(), w.user.ID, r.ID); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Hour)
		tick(t, w.worker())
		if h, n := w.history(), w.settled(); len(h) != 0 || n != 0 {
			t.Fatalf("a cancelled one arrived: history %d, published %d", len(h), n)
		}
	})
}

// Run wakes at the next one's time, not only at its poll (here an hour).
func TestRunWakesWhenTheNextIsDue(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		w := newScheduledWorld(t, s)
		s.Now = time.Now // the timer runs on real time
		wk := w.worker()
		wk.now, wk.opts.Poll = time.Now, time.Hour
		out, err := s.ScheduleNotifications(t.Context(), []store.NewScheduled{{TokenID: w.token.ID, UserID: w.user.ID, OrgID: w.user.OrgID,
			DeliverAt: time.Now().Add(50 * time.Millisecond), Notification: perch.Notification{Tab: "Inbound", Title: "soon",
				Severity: perch.SeverityInfo, Source: perch.SourceInbound, Scope: perch.Scope{Type: perch.ScopeUser, ID: w.user.ID}}}})
		if err != nil || len(out) != 1 {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { wk.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		testenv.Eventually(t, 10*time.Second, func() bool { return w.publishedCount() == 1 }, "the scheduled notification was not delivered")
	})
}
