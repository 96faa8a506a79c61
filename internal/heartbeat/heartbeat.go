// Package heartbeat records, for the admin metrics, that a server instance
// is running and how many WebSocket clients it holds: a row per instance
// in the database, written at start and every Every, and deleted when the
// instance stops. The summary's connected_clients sums the instances heard
// from within the last minute, so an instance that dies without deleting
// its row drops out of the count by itself.
package heartbeat

import (
	"context"
	"crypto/rand"
	"log/slog"
	"time"
)

// Every is how often a running instance records its count.
const Every = 15 * time.Second

// Store is where the beats go.
type Store interface {
	Heartbeat(ctx context.Context, instance string, clients int) error
	DropInstance(ctx context.Context, instance string) error
}

// Beater records one instance's count.
type Beater struct {
	Store   Store
	ID      string     // the instance's id; NewID gives a fresh one
	Clients func() int // the count to record, read at each beat
	Log     *slog.Logger
}

// NewID is a fresh, random instance id.
func NewID() string { return rand.Text() }

// Beat records the count once.
func (b *Beater) Beat(ctx context.Context) error {
	return b.Store.Heartbeat(ctx, b.ID, b.Clients())
}

// Run beats at once and every interval until ctx ends, then deletes the
// instance's row (within a few seconds of its own, ctx being done) and
// returns. A beat that fails is logged and tried again at the next tick;
// no beat can come after the row is deleted, since both are Run's.
func (b *Beater) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := b.Beat(ctx); err != nil && ctx.Err() == nil {
			b.Log.Warn("recording this instance's heartbeat failed", "instance", b.ID, "err", err)
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := b.Store.DropInstance(dctx, b.ID); err != nil {
				b.Log.Warn("forgetting this instance's heartbeat failed", "instance", b.ID, "err", err)
			}
			return
		case <-t.C:
		}
	}
}
