package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/perch-dev/perch/internal/store"
)

// tokenTouches records when webhook tokens were last used, in the
// background: a delivery only notes the use, and the notes of a second are
// written in one transaction. It was a durable write in the request, on the
// first use of a token and then once a minute: on PostgreSQL a commit of its
// own, which a burst of first deliveries (a fresh cluster, a redeploy of a
// sender) queued behind the group commit and turned into the tail of
// POST-to-frame latency. last_used_at is a record for people, to the
// minute: a crash loses at most the second being gathered.
type tokenTouches struct {
	store    *store.Store
	log      *slog.Logger
	hurry    chan struct{} // ends the wait of a batch at once (wait)
	mu       sync.Mutex
	pending  map[string]time.Time // token id → when it was used
	written  map[string]time.Time // token id → the use last written, for touchInterval
	flushing bool
	done     sync.WaitGroup
}

// touchLinger is how long uses gather before they are written.
const touchLinger = time.Second

// touchInterval is how often one token's use is written at most.
const touchInterval = time.Minute

func newTokenTouches(st *store.Store, log *slog.Logger) *tokenTouches {
	return &tokenTouches{store: st, log: log, hurry: make(chan struct{}, 1), pending: map[string]time.Time{}, written: map[string]time.Time{}}
}

// add notes that the token id was used at, unless a use less than
// touchInterval before it was written already: the store would leave the
// row as it is, so the write is not even tried.
func (tt *tokenTouches) add(id string, at time.Time) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if w, ok := tt.written[id]; ok && at.Sub(w) < touchInterval {
		return
	}
	if prev, ok := tt.pending[id]; !ok || at.After(prev) {
		tt.pending[id] = at
	}
	if !tt.flushing {
		tt.flushing = true
		tt.done.Add(1)
		go tt.flush()
	}
}

// flush writes the noted uses until none is waiting.
func (tt *tokenTouches) flush() {
	defer tt.done.Done()
	linger := time.NewTimer(touchLinger)
	select {
	case <-linger.C:
	case <-tt.hurry:
		linger.Stop()
	}
	for {
		tt.mu.Lock()
		uses := tt.pending
		if len(uses) == 0 {
			tt.flushing = false
			tt.mu.Unlock()
			return
		}
		tt.pending = map[string]time.Time{}
		tt.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := tt.store.TouchWebhookTokens(ctx, uses, touchInterval)
		cancel()
		if err != nil {
			tt.log.Warn("recording when webhook tokens were last used failed", "tokens", len(uses), "err", err)
			continue
		}
		var latest time.Time // by the clock the uses were noted with
		for _, at := range uses {
			if at.After(latest) {
				latest = at
			}
		}
		tt.mu.Lock()
		for id, at := range tt.written {
			if latest.Sub(at) >= touchInterval {
				delete(tt.written, id) // long written: the store decides again
			}
		}
		for id, at := range uses {
			tt.written[id] = at
		}
		tt.mu.Unlock()
	}
}

// wait writes what was noted so far at once, and returns when it is
// written.
func (tt *tokenTouches) wait() {
	select {
	case tt.hurry <- struct{}{}:
	default:
	}
	tt.done.Wait()
}
