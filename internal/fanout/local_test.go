package fanout

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/fanout/fanouttest"
	"github.com/perch-dev/perch/internal/testenv"
)

// Not parallel: the suite checks for leaked goroutines, which a test
// running beside it would start.
func TestLocal(t *testing.T) {
	fanouttest.Run(t, func(t *testing.T) []perch.Fanout {
		l := NewLocal()
		return []perch.Fanout{l, l}
	})
}

func TestLocalSlowSubscriberDoesNotBlockPublish(t *testing.T) {
	t.Parallel()
	l := NewLocal()
	l.queueSize = 4
	release := make(chan struct{})
	got := make(chan perch.FanoutMessage, 100)
	lost := make(chan struct{}, 1)
	deliver := func(m perch.FanoutMessage) {
		<-release // stuck, like a hub whose deliver hangs
		got <- m
	}
	if err := l.Subscribe(t.Context(), deliver, func() { lost <- struct{}{} }); err != nil {
		t.Fatal(err)
	}

	published := make(chan error, 1)
	go func() {
		for i := range 100 {
			if err := l.Publish(t.Context(), message(i)); err != nil {
				published <- err
				return
			}
		}
		published <- nil
	}()
	select {
	case err := <-published:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(fanouttest.Timeout):
		t.Fatal("Publish blocked behind a stuck subscriber")
	}

	close(release)
	select {
	case <-lost:
	case <-time.After(fanouttest.Timeout):
		t.Fatal("lost not called after messages were dropped")
	}
	l.Publish(t.Context(), message(100))
	// deliver got stuck in the batch it took (up to four messages), and
	// the queue took four more; the rest were dropped. What was kept
	// arrives in order, and delivery resumes afterwards.
	var seq []int
	for len(seq) == 0 || seq[len(seq)-1] != 100 {
		select {
		case m := <-got:
			i, _ := strconv.Atoi(m.IDs[0])
			if len(seq) > 0 && i <= seq[len(seq)-1] {
				t.Fatalf("message %d after %v", i, seq)
			}
			seq = append(seq, i)
		case <-time.After(fanouttest.Timeout):
			t.Fatalf("message 100 not delivered; got %v", seq)
		}
	}
	if len(seq) > 2*l.queueSize+1 {
		t.Errorf("delivered %v: more than the queue holds", seq)
	}
}

func TestLocalPublishAfterCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := NewLocal().Publish(ctx, message(0)); err == nil {
		t.Error("Publish with an ended context succeeded")
	}
	if err := NewLocal().Subscribe(ctx, func(perch.FanoutMessage) {}, func() {}); err == nil {
		t.Error("Subscribe with an ended context succeeded")
	}
}

func message(i int) perch.FanoutMessage {
	return perch.FanoutMessage{Kind: perch.FanoutRead, UserID: "user_1", IDs: []string{strconv.Itoa(i)}}
}

// BenchmarkLocalPublish measures Publish alone: subscribers drain their
// queues on their own goroutines. dropped/op is the share of deliveries that
// did not fit in a queue, were the subscribers too slow to keep up.
func BenchmarkLocalPublish(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run("subscribers="+strconv.Itoa(n), func(b *testing.B) {
			l := NewLocal()
			var delivered atomic.Int64
			for range n {
				if err := l.Subscribe(b.Context(), func(perch.FanoutMessage) { delivered.Add(1) }, func() {}); err != nil {
					b.Fatal(err)
				}
			}
			m := perch.FanoutMessage{Kind: perch.FanoutNotification, Notification: &perch.Notification{ID: "ntf_1"}}
			ctx := context.Background()
			published := 0
			for b.Loop() {
				l.Publish(ctx, m)
				published++
			}
			b.StopTimer()
			waitDrained(b, l)
			b.ReportMetric(1-float64(delivered.Load())/float64(published*n), "dropped/op")
		})
	}
}

// waitDrained waits until no subscription of l has anything queued.
func waitDrained(b *testing.B, l *Local) {
	testenv.Eventually(b, fanouttest.Timeout, func() bool {
		for _, s := range *l.subs.Load() {
			if queued(s) > 0 {
				return false
			}
		}
		return true
	}, "subscribers did not drain their queues")
}

func queued(s *localSub) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// BenchmarkLocalRoundTrip measures a message's trip from Publish to deliver
// when the subscriber is idle, the usual case at a few thousand messages a
// second: the cost of waking its goroutine.
func BenchmarkLocalRoundTrip(b *testing.B) {
	l := NewLocal()
	got := make(chan struct{})
	if err := l.Subscribe(b.Context(), func(perch.FanoutMessage) { got <- struct{}{} }, func() {}); err != nil {
		b.Fatal(err)
	}
	m := perch.FanoutMessage{Kind: perch.FanoutNotification, Notification: &perch.Notification{ID: "ntf_1"}}
	for b.Loop() {
		l.Publish(b.Context(), m)
		<-got
	}
}
