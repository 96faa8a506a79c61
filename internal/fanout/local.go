// Package fanout holds the implementations of perch.Fanout: Local, in
// process, for a single instance, and Redis, over Redis pub/sub, for many.
// Both pass the suite in fanouttest.
package fanout

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/perch-dev/perch"
)

// QueueSize is how many messages a Local subscription queues while its
// deliver func works through the batch it took before. Publish never waits
// for a subscriber: when a subscription's queue is full the message is
// dropped for that subscription alone, and its lost func is called so that
// its clients catch up from the store. At a few thousand messages a second
// this is seconds of slack.
const QueueSize = 8192

// Local is the in-process Fanout of a single instance. Each subscription has
// a bounded queue and one goroutine that calls deliver, so Publish costs an
// append per subscription whatever deliver does, and deliver is never called
// concurrently with itself.
type Local struct {
	queueSize int // QueueSize; smaller in tests that overflow it

	mu sync.Mutex // serializes changes to subs
	// subs is replaced, never modified, so that Publish reads it without
	// taking a lock.
	subs atomic.Pointer[[]*localSub]
}

type localSub struct {
	mu      sync.Mutex
	queue   []perch.FanoutMessage
	dropped bool // since lost was last called
	// wake holds a token when queue went from empty to not: one wake-up
	// per batch rather than per message, so a subscriber that has fallen
	// behind takes all that waits at once.
	wake chan struct{}
}

var _ perch.Fanout = (*Local)(nil)

// NewLocal returns a Local with no subscribers.
func NewLocal() *Local {
	return &Local{queueSize: QueueSize}
}

// Publish queues m for every subscriber and returns without waiting for any
// of them. It fails only when ctx has already ended.
func (l *Local) Publish(ctx context.Context, m perch.FanoutMessage) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	subs := l.subs.Load()
	if subs == nil {
		return nil
	}
	for _, s := range *subs {
		s.mu.Lock()
		wasEmpty := len(s.queue) == 0
		if len(s.queue) < l.queueSize {
			s.queue = append(s.queue, m)
		} else {
			s.dropped = true
		}
		s.mu.Unlock()
		if wasEmpty {
			select {
			case s.wake <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}
	return nil
}

// Subscribe starts a goroutine that calls deliver with every message
// published from now on, in order, until ctx ends; it then exits, and
// messages still queued are discarded. When messages were dropped because
// deliver fell behind (see QueueSize), lost is called, from the same
// goroutine, where the gap is: after the messages published before it and
// before those published after it.
func (l *Local) Subscribe(ctx context.Context, deliver func(perch.FanoutMessage), lost func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s := &localSub{wake: make(chan struct{}, 1)}
	l.update(func(subs []*localSub) []*localSub { return append(subs, s) })
	go func() {
		defer l.update(func(subs []*localSub) []*localSub {
			return slices.DeleteFunc(subs, func(x *localSub) bool { return x == s })
		})
		var batch []perch.FanoutMessage
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
			}
			s.mu.Lock()
			// The two slices take turns, so that a steady flow allocates
			// nothing.
			batch, s.queue = s.queue, batch[:0]
			dropped := s.dropped
			s.dropped = false
			s.mu.Unlock()
			for i, m := range batch {
				if ctx.Err() != nil {
					return
				}
				deliver(m)
				batch[i] = perch.FanoutMessage{} // let the notification go
			}
			// Messages are dropped only while the queue is full, so the gap
			// comes right after this batch.
			if dropped && ctx.Err() == nil {
				lost()
			}
		}
	}()
	return nil
}

// update replaces the subscriber list with f applied to a copy of it.
func (l *Local) update(f func([]*localSub) []*localSub) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var subs []*localSub
	if p := l.subs.Load(); p != nil {
		subs = slices.Clone(*p)
	}
	subs = f(subs)
	l.subs.Store(&subs)
}
