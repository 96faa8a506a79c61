package webhooks

import (
	"encoding/json"

	"github.com/perch-dev/perch"
)

// paddleCustomData holds the key Perch's checkout puts in a Paddle
// transaction's custom_data, which its subscription inherits.
type paddleCustomData struct {
	OrgID string `json:"org_id"`
}

// paddleItem is the part of a subscription's or transaction's item Perch
// reads.
type paddleItem struct {
	Price *struct {
		ID string `json:"id"`
	} `json:"price"`
	PriceID    string `json:"price_id"` // transaction items of older notifications
	Quantity   *int   `json:"quantity"`
	TrialDates *struct {
		EndsAt string `json:"ends_at"`
	} `json:"trial_dates"`
}

// paddlePeriod is a billing period; only its end matters to Perch.
type paddlePeriod struct {
	EndsAt string `json:"ends_at"`
}

// paddleSubscription is the part of a Paddle Billing subscription Perch
// reads.
type paddleSubscription struct {
	ID                   string            `json:"id"`
	TransactionID        string            `json:"transaction_id"` // subscription.created: the transaction that made it
	CustomerID           string            `json:"customer_id"`
	Status               string            `json:"status"`
	CustomData           *paddleCustomData `json:"custom_data"`
	Items                []paddleItem      `json:"items"`
	CurrentBillingPeriod *paddlePeriod     `json:"current_billing_period"`
	// ScheduledChange is kept raw to tell null (no change coming) from a
	// notification that leaves it out.
	ScheduledChange json.RawMessage `json:"scheduled_change"`
}

// paddleTransaction is the part of a Paddle Billing transaction Perch reads.
type paddleTransaction struct {
	ID             string            `json:"id"`
	SubscriptionID string            `json:"subscription_id"`
	CustomerID     string            `json:"customer_id"`
	CustomData     *paddleCustomData `json:"custom_data"`
	Items          []paddleItem      `json:"items"`
	BillingPeriod  *paddlePeriod     `json:"billing_period"`
}

// PaddleEvent reads a Paddle Billing notification, {event_id, event_type,
// occurred_at (RFC 3339), notification_id, data}, into a perch.BillingEvent
// of provider perch.BillingPaddle whose ID is the event's id, Type its type
// and OccurredAt its occurred_at.
//
// Perch acts on subscription.created|updated|activated|past_due|canceled,
// transaction.completed and transaction.payment_failed (of a subscription).
// For any other event, and for a transaction of no subscription (a one-off
// payment, or the first checkout's payment failing before there is one), ok
// is false with a nil error and ev holds only the envelope's fields: the
// receiver answers 200 "ignored".
//
// A body that is not a Paddle notification (not JSON, without event_id,
// event_type or occurred_at, data missing or not an object), a time that is
// not RFC 3339 or an id longer than 255 bytes is a perch.EBADREQUEST error
// whose message says what is wrong.
func PaddleEvent(body []byte) (ev perch.BillingEvent, ok bool, err error) {
	var n struct {
		EventID        string          `json:"event_id"`
		EventType      string          `json:"event_type"`
		OccurredAt     string          `json:"occurred_at"`
		NotificationID string          `json:"notification_id"`
		Data           json.RawMessage `json:"data"`
	}
	if err := perch.DecodeObject(body, &n); err != nil {
		return perch.BillingEvent{}, false, err
	}
	switch {
	case n.EventID == "":
		return perch.BillingEvent{}, false, badRequest("The body is not a Paddle notification: event_id is required.")
	case n.EventType == "":
		return perch.BillingEvent{}, false, badRequest("The body is not a Paddle notification: event_type is required.")
	case n.OccurredAt == "":
		return perch.BillingEvent{}, false, badRequest("The body is not a Paddle notification: occurred_at is required.")
	case !jsonObject(n.Data):
		return perch.BillingEvent{}, false, badRequest("The body is not a Paddle notification: data must be an object.")
	}
	if err := billingIDs("event_id", n.EventID, "event_type", n.EventType, "notification_id", n.NotificationID); err != nil {
		return perch.BillingEvent{}, false, err
	}
	occurred, err := rfc3339Time("occurred_at", n.OccurredAt)
	if err != nil {
		return perch.BillingEvent{}, false, err
	}
	ev = perch.BillingEvent{Provider: perch.BillingPaddle, ID: n.EventID, Type: n.EventType, OccurredAt: *occurred}

	switch n.EventType {
	case "subscription.created", "subscription.updated", "subscription.activated", "subscription.past_due", "subscription.canceled":
		ok, err = paddleSubscriptionEvent(&ev, n.Data)
	case "transaction.completed", "transaction.payment_failed":
		ok, err = paddleTransactionEvent(&ev, n.Data)
	default:
		return ev, false, nil
	}
	if err == nil {
		err = billingIDs("The organisation id in data", ev.OrgID, "The transaction id in data", ev.CheckoutID,
			"The customer id in data", ev.CustomerID,
			"The subscription id in data", ev.SubscriptionID, "The price id in data", ev.PriceID)
	}
	if err != nil {
		return perch.BillingEvent{}, false, err
	}
	if !ok || !located(ev) {
		return perch.BillingEvent{Provider: ev.Provider, ID: ev.ID, Type: ev.Type, OccurredAt: ev.OccurredAt}, false, nil
	}
	return ev, true, nil
}

// paddleSubscriptionEvent reads the subscription.* events Perch acts on. The
// data is the whole subscription, so whether it ends at the period's end is
// always known: a scheduled change to cancel says so. A cancellation and a
// subscription falling past due tell the owners.
func paddleSubscriptionEvent(ev *perch.BillingEvent, raw json.RawMessage) (bool, error) {
	var s paddleSubscription
	if err := decodeMember(raw, "data", &s); err != nil {
		return false, err
	}
	if s.ID == "" {
		return false, badRequest("data.id is required: a subscription has an id.")
	}
	ev.SubscriptionID = s.ID
	ev.CustomerID = s.CustomerID
	if s.CustomData != nil {
		ev.OrgID = s.CustomData.OrgID
	}
	if ev.Type == "subscription.created" {
		ev.CheckoutID = s.TransactionID
	}
	ev.Status = paddleStatus(s.Status)

	var err error
	if len(s.Items) > 0 {
		item := s.Items[0]
		ev.PriceID = itemPrice(item)
		if ev.Seats, err = seats("data.items[0].quantity", item.Quantity); err != nil {
			return false, err
		}
		if item.TrialDates != nil {
			if ev.TrialEndsAt, err = rfc3339Time("data.items[0].trial_dates.ends_at", item.TrialDates.EndsAt); err != nil {
				return false, err
			}
		}
	}
	if s.CurrentBillingPeriod != nil {
		if ev.PeriodEnd, err = rfc3339Time("data.current_billing_period.ends_at", s.CurrentBillingPeriod.EndsAt); err != nil {
			return false, err
		}
	}
	if len(s.ScheduledChange) > 0 {
		var change struct {
			Action string `json:"action"`
		}
		if err := decodeMember(s.ScheduledChange, "data.scheduled_change", &change); err != nil {
			return false, err
		}
		cancel := change.Action == "cancel"
		ev.CancelAtPeriodEnd = &cancel
	}

	switch ev.Type {
	case "subscription.canceled":
		ev.Alert = perch.AlertCanceled
	case "subscription.past_due":
		ev.Alert = perch.AlertPaymentFailed
	}
	return true, nil
}

// paddleStatus says a Paddle subscription status in Perch's words; "" for a
// status Paddle may add later, which leaves Perch's as it is.
func paddleStatus(s string) string {
	switch s {
	case "active":
		return perch.PlanActive
	case "trialing":
		return perch.PlanTrialing
	case "past_due":
		return perch.PlanPastDue
	case "paused":
		return perch.PlanPaused
	case "canceled":
		return perch.PlanCanceled
	}
	return ""
}

// paddleTransactionEvent reads transaction.completed and
// transaction.payment_failed. A transaction of no subscription is not
// Perch's to act on.
func paddleTransactionEvent(ev *perch.BillingEvent, raw json.RawMessage) (bool, error) {
	var t paddleTransaction
	if err := decodeMember(raw, "data", &t); err != nil {
		return false, err
	}
	if t.SubscriptionID == "" {
		return false, nil
	}
	ev.SubscriptionID = t.SubscriptionID
	ev.CustomerID = t.CustomerID
	if t.CustomData != nil {
		ev.OrgID = t.CustomData.OrgID
	}
	if len(t.Items) > 0 {
		ev.PriceID = itemPrice(t.Items[0])
	}

	switch ev.Type {
	case "transaction.completed":
		ev.CheckoutID = t.ID // the checkout's, when it completes one Perch opened
		ev.Status = perch.PlanActive
		if t.BillingPeriod != nil {
			var err error
			if ev.PeriodEnd, err = rfc3339Time("data.billing_period.ends_at", t.BillingPeriod.EndsAt); err != nil {
				return false, err
			}
		}
	case "transaction.payment_failed":
		ev.Status = perch.PlanPastDue
		ev.Alert = perch.AlertPaymentFailed
	}
	return true, nil
}

// itemPrice is the price of an item, from the price object or, failing it,
// the item's price_id.
func itemPrice(item paddleItem) string {
	if item.Price != nil && item.Price.ID != "" {
		return item.Price.ID
	}
	return item.PriceID
}
