// Package fanouttest is the conformance suite of perch.Fanout: every
// implementation runs Run, so that the hub can rely on the same behaviour
// from one instance to many.
package fanouttest

import (
	"context"
	"testing"
	"time"

	"github.com/perch-dev/perch"
)

// Timeout bounds every wait of the suite. Nothing waits for it when the
// implementation is right; it only turns a hang into a failure.
const Timeout = 10 * time.Second

// Subscriber records what a subscription is given.
type Subscriber struct {
	msgs chan perch.FanoutMessage
	lost chan struct{}
}

// Subscribe subscribes to f until ctx ends, failing t if Subscribe fails.
// Messages are buffered for Next; deliver blocks once the buffer is full,
// until ctx ends.
func Subscribe(t testing.TB, ctx context.Context, f perch.Fanout) *Subscriber {
	t.Helper()
	s := &Subscriber{
		msgs: make(chan perch.FanoutMessage, 4096),
		lost: make(chan struct{}, 64),
	}
	deliver := func(m perch.FanoutMessage) {
		select {
		case s.msgs <- m:
		case <-ctx.Done():
		}
	}
	lost := func() {
		select {
		case s.lost <- struct{}{}:
		default: // a pile of signals means no more than one
		}
	}
	if err := f.Subscribe(ctx, deliver, lost); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	return s
}

// Next returns the next message, failing t if none arrives within Timeout.
func (s *Subscriber) Next(t testing.TB) perch.FanoutMessage {
	t.Helper()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case m := <-s.msgs:
		return m
	case <-timer.C:
		t.Fatalf("no message within %s", Timeout)
		return perch.FanoutMessage{}
	}
}

// Pending returns how many messages were delivered and not yet taken by
// Next.
func (s *Subscriber) Pending() int { return len(s.msgs) }

// WaitLost waits for lost to be called, failing t if it is not within
// Timeout.
func (s *Subscriber) WaitLost(t testing.TB) {
	t.Helper()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case <-s.lost:
	case <-timer.C:
		t.Fatalf("lost not called within %s", Timeout)
	}
}

// Lost reports whether lost was called since the last WaitLost or Lost.
func (s *Subscriber) Lost() bool {
	select {
	case <-s.lost:
		return true
	default:
		return false
	}
}
