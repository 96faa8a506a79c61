package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/perch-dev/perch/internal/store"
)

// Scheduled delivery's pace and bounds.
const (
	// ScheduledLease is how long a worker holds the scheduled
	// notifications it claimed before another may claim them again: one
	// that stopped before recording them done leaves them to the next, and
	// the dedupe key makes the second write a no-op.
	ScheduledLease = 30 * time.Second
	scheduledBatch = 256 // claimed, and written in one ingest call, per tick (ingest.MaxBatch)
	// minScheduledWait is the least Run waits for a scheduled notification
	// that is due already.
	minScheduledWait = 20 * time.Millisecond
)

// deliverScheduled claims the scheduled notifications that are due and
// writes them through ingest in one call, each with the dedupe key
// "scheduled|<id>", so that they get their ids (and reach clients, the
// history and replay) only now, and once. One whose token may no longer
// send is dropped. A failed write leaves them claimed: they are claimed
// again, and written, once the lease ends.
func (wk *Worker) deliverScheduled(ctx context.Context) error {
	now := wk.now()
	// A read first: most ticks find nothing due, and the claim is a write,
	// which on SQLite waits for the one writer that ingest uses.
	if next, ok, err := wk.store.NextScheduled(ctx, now); err != nil {
		return fmt.Errorf("looking for due scheduled notifications: %w", err)
	} else if !ok || next.After(now) {
		return nil
	}
	due, err := wk.store.DueScheduled(ctx, now, ScheduledLease, scheduledBatch)
	if err != nil {
		return fmt.Errorf("claiming due scheduled notifications: %w", err)
	}
	var send []*store.Scheduled
	batch := make([]store.NewNotification, 0, len(due))
	for _, sc := range due {
		if !sc.Usable {
			wk.log.Info("a scheduled notification is dropped: its webhook token may no longer send", "scheduled", sc.ID, "token", sc.TokenID)
			if err := wk.store.DoneScheduled(ctx, sc.ID, ""); err != nil {
				return fmt.Errorf("dropping scheduled notification %s: %w", sc.ID, err)
			}
			continue
		}
		send = append(send, sc)
		batch = append(batch, sc.Delivery())
	}
	if len(batch) == 0 {
		return nil
	}
	stored, err := wk.ingest.Write(ctx, batch...)
	if err != nil {
		return fmt.Errorf("delivering %d scheduled notifications: %w", len(batch), err)
	}
	for i, st := range stored {
		if err := wk.store.DoneScheduled(ctx, send[i].ID, st.Notification.ID); err != nil {
			return fmt.Errorf("recording scheduled notification %s delivered: %w", send[i].ID, err)
		}
	}
	return nil
}

// armScheduled sets due to fire when the next scheduled notification is
// due, so that it goes out at its time rather than at the next poll. One
// due already (it came due while the tick ran, or before Run started) fires
// it after minScheduledWait: soon, but never a busy loop; those a worker
// holds are not counted (NextScheduled), and a store that fails leaves the
// poll to try again.
func (wk *Worker) armScheduled(ctx context.Context, due *time.Timer) {
	now := wk.now()
	next, ok, err := wk.store.NextScheduled(ctx, now)
	if err != nil || !ok {
		due.Stop()
		return
	}
	due.Reset(max(next.Sub(now), minScheduledWait))
}
