package perch

import (
	"fmt"
	"time"
)

// ScheduledNotification is a notification sent for later (deliver_at or
// delay) that is not due yet: it has no notification id, and no client
// sees it, until it is delivered. Only the owner of the webhook token that
// sent it lists it (GET /api/v1/notifications/scheduled) and may cancel it.
type ScheduledNotification struct {
	ID             string    `json:"id"`
	DeliverAt      time.Time `json:"deliver_at"`
	CreatedAt      time.Time `json:"created_at"` // when it was received
	WebhookTokenID string    `json:"webhook_token_id"`
	Tab            string    `json:"tab"`
	Title          string    `json:"title"`
	Message        string    `json:"message"`
	Severity       string    `json:"severity"`
	Source         string    `json:"source"`
	Priority       int       `json:"priority"`
	Scope          Scope     `json:"scope"`
}

// MaxPendingScheduled is how many scheduled notifications one webhook
// token may have waiting at once.
const MaxPendingScheduled = 1000

// DeliveryTime decides when an event that asked for deliverAt or delay
// (zero: not asked) is delivered, by the receiving server's clock now:
// scheduled is false for an event to deliver at once (neither asked, a
// delay of 0, or a deliver_at that is not after now: a sender's clock a
// little ahead of the server's must not cost its notification). Asking for
// both, a negative delay, or a time more than MaxDeliveryDelay ahead are
// problems of the fields deliver_at and delay.
func DeliveryTime(deliverAt time.Time, delay time.Duration, now time.Time) (due time.Time, scheduled bool, problems Problems) {
	limit := now.Add(MaxDeliveryDelay)
	problem := func(field, what string) {
		if problems == nil {
			problems = Problems{}
		}
		problems.Add(field, what)
	}
	switch {
	case !deliverAt.IsZero() && delay != 0:
		problem("deliver_at", "give deliver_at or delay, not both")
		problem("delay", "give deliver_at or delay, not both")
		return time.Time{}, false, problems
	case delay < 0:
		problem("delay", "must not be negative")
		return time.Time{}, false, problems
	case delay > MaxDeliveryDelay:
		problem("delay", fmt.Sprintf("must be at most %s (7 days)", MaxDeliveryDelay))
		return time.Time{}, false, problems
	case delay > 0:
		return Timestamp(now.Add(delay)), true, nil
	case deliverAt.IsZero():
		return time.Time{}, false, nil
	case deliverAt.After(limit):
		problem("deliver_at", "must be at most 7 days ahead")
		return time.Time{}, false, problems
	case !deliverAt.After(now):
		return time.Time{}, false, nil
	}
	return Timestamp(deliverAt), true, nil
}
