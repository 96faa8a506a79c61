package feed_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/feed"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

// Every subscription starts goroutines; none may outlive its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testPoll is the tests' poll interval: short, so that the tests that
// wait for a poll (no wake-up reaches them) are quick; nothing asserts it.
const testPoll = 20 * time.Millisecond

// subscriber collects what a Feed delivers.
type subscriber struct {
	got  chan perch.FanoutMessage
	lost atomic.Int64
}

func subscribe(t *testing.T, f *feed.Feed) *subscriber {
	t.Helper()
	s := &subscriber{got: make(chan perch.FanoutMessage, 10_000)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := f.Subscribe(ctx, func(m perch.FanoutMessage) { s.got <- m }, func() { s.lost.Add(1) }); err != nil {
		t.Fatal(err)
	}
	return s
}

// next is the next message delivered, or a failure after ten seconds (a
// hang, never a timing: a lost wake-up is caught up within a poll).
func (s *subscriber) next(t *testing.T) perch.FanoutMessage {
	t.Helper()
	select {
	case m := <-s.got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered")
		return perch.FanoutMessage{}
	}
}

// titles are the titles of the next n notifications delivered.
func (s *subscriber) titles(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		m := s.next(t)
		if m.Kind != perch.FanoutNotification || m.Notification == nil {
			t.Fatalf("delivered %+v, want a notification", m)
		}
		out = append(out, m.Notification.Title)
	}
	return out
}

// store inserts notifications titled titles and, unless quietly, announces
// them through f as the ingest writer does.
func insert(t *testing.T, s *store.Store, f perch.Fanout, titles ...string) {
	t.Helper()
	batch := make([]store.NewNotification, len(titles))
	for i, title := range titles {
		batch[i] = store.NewNotification{Notification: perch.Notification{Title: title, Tab: "T", Severity: "info", Source: "inbound",
			URL: "https://example.com/" + title, Scope: perch.Scope{Type: perch.ScopeUser, ID: "u1"}}}
	}
	announce := func(stored []store.Stored) {
		if f == nil {
			return
		}
		for i := range stored {
			if err := f.Publish(context.Background(), perch.FanoutMessage{Kind: perch.FanoutNotification, Notification: &stored[i].Notification}); err != nil {
				t.Error(err)
			}
		}
	}
	if _, err := s.InsertNotifications(context.Background(), batch, announce); err != nil {
		t.Fatal(err)
	}
}

// TestFeedDeliversBothLogsInOrder: what is stored and published after a
// subscription is delivered once, in id order, every field as stored; a
// notification no one announced (its wake-up lost) comes with the next
// poll; what was stored before the subscription is not delivered.
func TestFeedDeliversBothLogsInOrder(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		f := feed.New(s, nil, testPoll, quiet)
		insert(t, s, f, "before")
		sub := subscribe(t, f)
		insert(t, s, f, "one", "two")
		insert(t, s, nil, "unannounced")
		insert(t, s, f, "three")
		if got := fmt.Sprint(sub.titles(t, 4)); got != "[one two unannounced three]" {
			t.Fatalf("delivered %s", got)
		}

		read := perch.FanoutMessage{Kind: perch.FanoutRead, UserID: "u1", IDs: []string{"7", "8"}}
		revoked := perch.FanoutMessage{Kind: perch.FanoutRevoked, UserID: "u1", Sessions: []string{"s1"}, APITokens: []string{"k1"}}
		for _, m := range []perch.FanoutMessage{read, revoked} {
			if err := f.Publish(t.Context(), m); err != nil {
				t.Fatal(err)
			}
		}
		for _, want := range []perch.FanoutMessage{read, revoked} {
			if got := sub.next(t); fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
				t.Fatalf("delivered %+v, want %+v", got, want)
			}
		}
		select {
		case m := <-sub.got:
			t.Fatalf("delivered more: %+v", m)
		case <-time.After(3 * testPoll):
		}
		if sub.lost.Load() != 0 {
			t.Fatal("lost called on a healthy log")
		}
	})
}

// TestFeedKeepsEveryField: a notification comes out of the log as the
// writer announced it.
func TestFeedKeepsEveryField(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		f := feed.New(s, nil, testPoll, quiet)
		sub := subscribe(t, f)
		var announced perch.Notification
		batch := []store.NewNotification{{Notification: perch.Notification{Title: "Disk full", Message: "98% used.\nQuotes \" ' <tags> & 🔔",
			Tab: perch.TabIncidents, Severity: perch.SeverityError, Source: perch.SourceIncidents, URL: "https://status.example.com/i/42?x=1#top",
			Scope: perch.Scope{Type: perch.ScopeTeam, ID: "team_42"}}}}
		if _, err := s.InsertNotifications(t.Context(), batch, func(st []store.Stored) {
			announced = st[0].Notification
			f.Publish(t.Context(), perch.FanoutMessage{Kind: perch.FanoutNotification, Notification: &st[0].Notification})
		}); err != nil {
			t.Fatal(err)
		}
		got := sub.next(t).Notification
		if fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", announced) || got.CreatedAt.Location() != time.UTC {
			t.Fatalf("delivered %+v\nwant      %+v", *got, announced)
		}
	})
}

// lossy is a wake-up transport that loses every message while lose is set.
type lossy struct {
	perch.Fanout
	lose atomic.Bool
}

func (l *lossy) Publish(ctx context.Context, m perch.FanoutMessage) error {
	if l.lose.Load() {
		return errors.New("the transport is down")
	}
	return l.Fanout.Publish(ctx, m)
}

// TestFeedAcrossInstances: two instances on one database, woken through a
// transport. A notification stored by one reaches the other's subscriber,
// in order with the other's own; while the transport loses every wake-up,
// the storing instance's subscriber still gets it at once and the other
// by its poll, with nothing more stored and nothing skipped; WakeupHealth
// says so, and clears once a wake-up goes out.
func TestFeedAcrossInstances(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		transport := &lossy{Fanout: fanout.NewLocal()}
		one, two := feed.New(s, transport, testPoll, quiet), feed.New(s, transport, testPoll, quiet)
		subOne, subTwo := subscribe(t, one), subscribe(t, two)
		insert(t, s, one, "a")
		insert(t, s, two, "b")
		for _, sub := range []*subscriber{subOne, subTwo} {
			if got := fmt.Sprint(sub.titles(t, 2)); got != "[a b]" {
				t.Fatalf("delivered %s", got)
			}
		}

		transport.lose.Store(true)
		insert(t, s, one, "while the transport is down")
		for _, sub := range []*subscriber{subOne, subTwo} {
			if got := fmt.Sprint(sub.titles(t, 1)); got != "[while the transport is down]" {
				t.Fatalf("delivered %s", got)
			}
		}
		// The wake-up goes out after the publish.
		testenv.Eventually(t, 10*time.Second, func() bool { return one.WakeupHealth() != nil },
			"WakeupHealth never reported the failing transport")
		transport.lose.Store(false)
		insert(t, s, one, "after")
		for _, sub := range []*subscriber{subOne, subTwo} {
			if got := fmt.Sprint(sub.titles(t, 1)); got != "[after]" {
				t.Fatalf("delivered %s", got)
			}
		}
		testenv.Eventually(t, 10*time.Second, func() bool { return one.WakeupHealth() == nil }, "WakeupHealth never cleared")
	})
}

// TestFeedTellsOfNotificationsPrunedBeforeTheyWereRead: a subscriber that
// retention overtook is told (lost), so its clients replay from the store
// and learn of the gap there; then it goes on from what is kept.
func TestFeedTellsOfNotificationsPrunedBeforeTheyWereRead(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		// A poll so long that only a wake-up makes this subscriber read.
		f := feed.New(s, nil, time.Hour, quiet)
		sub := subscribe(t, f)
		insert(t, s, nil, "pruned one", "pruned two")
		clock.Advance(time.Hour)
		if _, err := s.PruneNotifications(t.Context(), clock.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
		insert(t, s, f, "kept")
		if got := fmt.Sprint(sub.titles(t, 1)); got != "[kept]" {
			t.Fatalf("delivered %s", got)
		}
		if sub.lost.Load() != 1 {
			t.Fatalf("lost called %d times, want once", sub.lost.Load())
		}
	})
}
