package fanouttest

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/perch-dev/perch"
)

// Run runs the suite, one subtest per behaviour. newFanout is called once
// per subtest and returns one or more Fanouts sharing a fresh medium: the
// same value more than once for an in-process implementation, or one value
// per instance (each with its own connection) for a networked one. Messages
// are published on each of them and subscribed to on each of them.
//
// Subtests are not parallel: one of them checks for leaked goroutines.
func Run(t *testing.T, newFanout func(t *testing.T) []perch.Fanout) {
	t.Run("ReachesEverySubscriber", func(t *testing.T) { testReachesEverySubscriber(t, newFanout(t)) })
	t.Run("KeepsOrderOfOnePublisher", func(t *testing.T) { testKeepsOrderOfOnePublisher(t, newFanout(t)) })
	t.Run("KeepsOrderOfConcurrentPublishers", func(t *testing.T) { testKeepsOrderOfConcurrentPublishers(t, newFanout(t)) })
	t.Run("StopsWhenCancelled", func(t *testing.T) { testStopsWhenCancelled(t, newFanout(t)) })
	t.Run("SubscribedOnReturn", func(t *testing.T) { testSubscribedOnReturn(t, newFanout(t)) })
	t.Run("KeepsEveryField", func(t *testing.T) { testKeepsEveryField(t, newFanout(t)) })
}

func testReachesEverySubscriber(t *testing.T, fs []perch.Fanout) {
	var subs []*Subscriber
	for _, f := range fs {
		subs = append(subs, Subscribe(t, t.Context(), f), Subscribe(t, t.Context(), f))
	}
	for i, f := range fs {
		m := perch.FanoutMessage{Kind: perch.FanoutGrants, UserID: fmt.Sprintf("user-%d", i)}
		publish(t, f, m)
		for j, s := range subs {
			if got := s.Next(t); !reflect.DeepEqual(got, m) {
				t.Errorf("subscriber %d got %+v, want %+v", j, got, m)
			}
		}
	}
}

func testKeepsOrderOfOnePublisher(t *testing.T, fs []perch.Fanout) {
	const n = 1000
	subs := subscribeAll(t, fs)
	for p, f := range fs {
		for i := range n {
			publish(t, f, numbered(p, i))
		}
		for _, s := range subs {
			for i := range n {
				if got, want := s.Next(t), numbered(p, i); !reflect.DeepEqual(got, want) {
					t.Fatalf("publisher %d: got %v, want %v", p, got, want)
				}
			}
		}
	}
	checkNothingLost(t, subs)
}

func testKeepsOrderOfConcurrentPublishers(t *testing.T, fs []perch.Fanout) {
	const publishers, each = 8, 250
	subs := subscribeAll(t, fs)
	var wg sync.WaitGroup
	for p := range publishers {
		f := fs[p%len(fs)]
		wg.Go(func() {
			for i := range each {
				if err := f.Publish(t.Context(), numbered(p, i)); err != nil {
					t.Errorf("publisher %d: Publish: %v", p, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for j, s := range subs {
		next := make([]int, publishers)
		for range publishers * each {
			p, i := parseNumbered(t, s.Next(t))
			if p < 0 || p >= publishers {
				t.Fatalf("subscriber %d: message from unknown publisher %d", j, p)
			}
			if i != next[p] {
				t.Fatalf("subscriber %d: message %d of publisher %d came when %d was due", j, i, p, next[p])
			}
			next[p]++
		}
	}
	checkNothingLost(t, subs)
}

func testStopsWhenCancelled(t *testing.T, fs []perch.Fanout) {
	witness := Subscribe(t, t.Context(), fs[0])
	// Lazily started background goroutines (a connection pool's) are
	// running before the snapshot, and so are not taken for leaks.
	for _, f := range fs {
		publish(t, f, numbered(0, 0))
		witness.Next(t)
	}
	ignore := goleak.IgnoreCurrent()

	ctx, cancel := context.WithCancel(t.Context())
	var delivered atomic.Int64
	got := make(chan perch.FanoutMessage, 1)
	deliver := func(m perch.FanoutMessage) {
		delivered.Add(1)
		select {
		case got <- m:
		default:
		}
	}
	if err := fs[0].Subscribe(ctx, deliver, func() {}); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	publish(t, fs[len(fs)-1], numbered(0, 1))
	witness.Next(t)
	select {
	case <-got:
	case <-time.After(Timeout):
		t.Fatalf("no message within %s", Timeout)
	}

	cancel()
	goleak.VerifyNone(t, ignore)
	for _, f := range fs {
		publish(t, f, numbered(0, 2))
		witness.Next(t) // by now the cancelled one would have had it too
	}
	if n := delivered.Load(); n != 1 {
		t.Errorf("deliver called %d times, want once: before cancel only", n)
	}
}

func testSubscribedOnReturn(t *testing.T, fs []perch.Fanout) {
	// Repeated, because a Subscribe that returns early loses the race only
	// some of the time.
	for i := range 20 {
		ctx, cancel := context.WithCancel(t.Context())
		s := Subscribe(t, ctx, fs[i%len(fs)])
		m := numbered(0, i)
		publish(t, fs[(i+1)%len(fs)], m)
		if got := s.Next(t); !reflect.DeepEqual(got, m) {
			t.Errorf("got %v, want %v", got, m)
		}
		cancel()
	}
}

func testKeepsEveryField(t *testing.T, fs []perch.Fanout) {
	n := &perch.Notification{
		ID:        "ntf_0123456789",
		Tab:       perch.TabIncidents,
		Title:     "Disk full on db-1",
		Message:   "98% used.\nQuotes \" ' and <tags> & emoji 🔔, é",
		Severity:  perch.SeverityError,
		Source:    perch.SourceIncidents,
		URL:       "https://status.example.com/incidents/42?tab=log#top",
		CreatedAt: time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC),
		Scope:     perch.Scope{Type: perch.ScopeTeam, ID: "team_42"},
		Read:      true,
	}
	want := []perch.FanoutMessage{
		{Kind: perch.FanoutNotification, Notification: n},
		{Kind: perch.FanoutRead, UserID: "user_7", IDs: []string{"ntf_1", "ntf_2"}},
		{Kind: perch.FanoutGrants, UserID: "user_7"},
	}
	subs := subscribeAll(t, fs)
	for _, m := range want {
		publish(t, fs[len(fs)-1], m)
	}
	for j, s := range subs {
		for _, m := range want {
			got := s.Next(t)
			if !reflect.DeepEqual(got, m) {
				t.Errorf("subscriber %d: got %+v, want %+v", j, got, m)
			}
			if got.Notification != nil && got.Notification.CreatedAt.Location() != time.UTC {
				t.Errorf("subscriber %d: CreatedAt in %s, want UTC", j, got.Notification.CreatedAt.Location())
			}
		}
	}
}

func subscribeAll(t *testing.T, fs []perch.Fanout) []*Subscriber {
	subs := make([]*Subscriber, len(fs))
	for i, f := range fs {
		subs[i] = Subscribe(t, t.Context(), f)
	}
	return subs
}

func publish(t *testing.T, f perch.Fanout, m perch.FanoutMessage) {
	t.Helper()
	if err := f.Publish(t.Context(), m); err != nil {
		t.Fatalf("Publish: %v", err)
	}
}

// numbered is message i of publisher p.
func numbered(p, i int) perch.FanoutMessage {
	return perch.FanoutMessage{Kind: perch.FanoutRead, UserID: strconv.Itoa(p), IDs: []string{strconv.Itoa(i)}}
}

func parseNumbered(t *testing.T, m perch.FanoutMessage) (p, i int) {
	t.Helper()
	p, err := strconv.Atoi(m.UserID)
	if err == nil && len(m.IDs) == 1 {
		i, err = strconv.Atoi(m.IDs[0])
	}
	if err != nil || len(m.IDs) != 1 {
		t.Fatalf("not a numbered message: %+v", m)
	}
	return p, i
}

func checkNothingLost(t *testing.T, subs []*Subscriber) {
	t.Helper()
	for j, s := range subs {
		if s.Lost() {
			t.Errorf("subscriber %d: lost called on a healthy medium", j)
		}
		if n := s.Pending(); n > 0 {
			t.Errorf("subscriber %d: %d messages more than published", j, n)
		}
	}
}
