package server

import (
	"context"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/senders"
	"github.com/perch-dev/perch/internal/store"
)

// scheduleStore is what the receivers need from storage to keep a
// notification for later.
type scheduleStore interface {
	ScheduleNotifications(ctx context.Context, batch []store.NewScheduled) ([]store.ScheduledReceipt, error)
}

var _ scheduleStore = (*store.Store)(nil)

// scheduledReceipt names a notification kept for later in a receiver's
// answer: its scheduled id (for GET and DELETE
// /api/v1/notifications/scheduled) and when it is due. It gets a
// notification id only then.
type scheduledReceipt struct {
	ID        string    `json:"id"`
	DeliverAt time.Time `json:"deliver_at"`
}

// deliveryTimes checks the events' deliver_at and delay against the
// server's clock, before anything of the delivery is stored or run: nil
// when none is scheduled (the usual delivery, which costs one pass over
// the events), else each event's due time (zero: at once). A scheduled
// notification is cancellable only by its webhook token's owner, so an
// anonymous broadcast cannot be scheduled.
func (s *Server) deliveryTimes(res senders.Result, tok sender) ([]time.Time, error) {
	var dues []time.Time
	var now time.Time
	for i, e := range res.Events {
		if e.DeliverAt.IsZero() && e.Delay == 0 {
			continue
		}
		if now.IsZero() {
			now = s.now()
		}
		due, later, problems := perch.DeliveryTime(e.DeliverAt, e.Delay, now)
		if problems == nil && later && tok.userID == "" {
			problems = perch.Problems{}
			field := "deliver_at"
			if e.Delay != 0 {
				field = "delay"
			}
			problems.Add(field, "needs a webhook token (?token=whk_…): a scheduled notification is cancellable by the token's owner")
		}
		if problems != nil {
			return nil, &perch.Error{Code: perch.EBADREQUEST, Message: "The delivery's schedule is not valid.", Fields: problems}
		}
		if !later {
			continue
		}
		if dues == nil {
			dues = make([]time.Time, len(res.Events))
		}
		dues[i] = due
	}
	return dues, nil
}

// holdScheduled keeps the notifications of batch that are due later
// (their Notification.DeliverAt set by the receiver from dues, after the
// workflows ran on them at receipt) for the worker to deliver then, and
// answers the ones to store now. The runs of the held ones are recorded
// now, as the runs of the notifications workflows withhold are: they
// have no notification id yet; the forwards and e-mails the runs queued
// go with the notification when it is delivered.
func (s *Server) holdScheduled(ctx context.Context, tok sender, batch []store.NewNotification, f *flowed) ([]store.NewNotification, []scheduledReceipt, bool, error) {
	var later []store.NewScheduled
	now := batch[:0:0]
	var runs [][]*perch.WorkflowRun
	for i, nn := range batch {
		if nn.Notification.DeliverAt == nil {
			now = append(now, nn)
			if f != nil {
				runs = append(runs, f.runs[i])
			}
			continue
		}
		due := *nn.Notification.DeliverAt
		nn.Notification.DeliverAt = nil // set again, with the id, when it is delivered
		later = append(later, store.NewScheduled{TokenID: tok.id, UserID: tok.userID, OrgID: tok.orgID, DeliverAt: due,
			Notification: nn.Notification, DedupeKey: nn.DedupeKey, Jobs: nn.Jobs})
		if f != nil {
			f.other = append(f.other, f.runs[i]...)
		}
	}
	if f != nil {
		f.keep, f.runs = now, runs
	}
	if len(later) == 0 {
		return now, nil, false, nil
	}
	got, err := s.scheduleDB.ScheduleNotifications(ctx, later)
	if err != nil {
		return nil, nil, false, err
	}
	out := make([]scheduledReceipt, len(got))
	dup := true
	for i, r := range got {
		out[i] = scheduledReceipt{ID: r.ID, DeliverAt: r.DeliverAt}
		dup = dup && r.Duplicate
	}
	s.worker.Wake() // to wake again when the soonest is due
	return now, out, dup, nil
}
