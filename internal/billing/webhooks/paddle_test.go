package webhooks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
)

// paddleBody wraps data in a Paddle notification envelope.
func paddleBody(eventType, data string) []byte {
	return fmt.Appendf(nil, `{"event_id":"evt_01","event_type":%q,"occurred_at":"2024-04-12T10:18:49.738971Z","notification_id":"ntf_01","data":%s}`,
		eventType, data)
}

func TestPaddleEvent(t *testing.T) {
	t.Parallel()
	occurred := rfc3339(t, "2024-04-12T10:18:49.738971Z")
	event := func(eventType string, e perch.BillingEvent) perch.BillingEvent {
		e.Provider, e.ID, e.Type, e.OccurredAt = perch.BillingPaddle, "evt_01", eventType, occurred
		return e
	}
	const sub = `"id":"sub_1","customer_id":"ctm_1","custom_data":{"org_id":"org_1","plan":"team"},"items":[{"price":{"id":"pri_team"}}]`
	cases := []struct {
		name string
		body []byte
		ok   bool
		want perch.BillingEvent
	}{
		{"a new subscription on its trial, made by the checkout's transaction",
			paddleBody("subscription.created", `{`+sub+`,"status":"trialing","scheduled_change":null,"transaction_id":"txn_0",
				"items":[{"price":{"id":"pri_team"},"trial_dates":{"starts_at":"2024-04-12T10:18:47Z","ends_at":"2024-04-26T10:18:47Z"}}],
				"current_billing_period":{"starts_at":"2024-04-12T10:18:47Z","ends_at":"2024-04-26T10:18:47Z"}}`),
			true, event("subscription.created", perch.BillingEvent{OrgID: "org_1", CheckoutID: "txn_0", CustomerID: "ctm_1", SubscriptionID: "sub_1", PriceID: "pri_team",
				Status: perch.PlanTrialing, TrialEndsAt: rfc3339p(t, "2024-04-26T10:18:47Z"), PeriodEnd: rfc3339p(t, "2024-04-26T10:18:47Z"), CancelAtPeriodEnd: boolp(false)})},
		{"a subscription set to cancel at the period's end, in another offset; only its creation names a checkout",
			paddleBody("subscription.updated", `{`+sub+`,"status":"active","transaction_id":"txn_0","scheduled_change":{"action":"cancel","effective_at":"2024-05-12T10:18:47Z"},
				"current_billing_period":{"ends_at":"2024-05-12T12:18:47.5+02:00"}}`),
			true, event("subscription.updated", perch.BillingEvent{OrgID: "org_1", CustomerID: "ctm_1", SubscriptionID: "sub_1", PriceID: "pri_team",
				Status: perch.PlanActive, PeriodEnd: rfc3339p(t, "2024-05-12T10:18:47.5Z"), CancelAtPeriodEnd: boolp(true)})},
		{"a scheduled pause is not a cancellation",
			paddleBody("subscription.updated", `{`+sub+`,"status":"active","scheduled_change":{"action":"pause"}}`),
			true, event("subscription.updated", perch.BillingEvent{OrgID: "org_1", CustomerID: "ctm_1", SubscriptionID: "sub_1", PriceID: "pri_team",
				Status: perch.PlanActive, CancelAtPeriodEnd: boolp(false)})},
		{"a subscription without scheduled_change leaves cancel_at_period_end as it is",
			paddleBody("subscription.activated", `{`+sub+`,"status":"active"}`),
			true, event("subscription.activated", perch.BillingEvent{OrgID: "org_1", CustomerID: "ctm_1", SubscriptionID: "sub_1", PriceID: "pri_team", Status: perch.PlanActive})},
		{"a subscription falling past due tells the owners",
			paddleBody("subscription.past_due", `{`+sub+`,"status":"past_due"}`),
			true, event("subscription.past_due", perch.BillingEvent{OrgID: "org_1", CustomerID: "ctm_1", SubscriptionID: "sub_1", PriceID: "pri_team",
				Status: perch.PlanPastDue, Alert: perch.AlertPaymentFailed})},
		{"a paused subscription",
			paddleBody("subscription.updated", `{"id":"sub_1","status":"paused","custom_data":null}`),
			true, event("subscription.updated", perch.BillingEvent{SubscriptionID: "sub_1", Status: perch.PlanPaused})},
		{"a status Paddle adds later leaves Perch's as it is",
			paddleBody("subscription.updated", `{"id":"sub_1","status":"frozen"}`),
			true, event("subscription.updated", perch.BillingEvent{SubscriptionID: "sub_1"})},
		{"a canceled subscription tells the owners",
			paddleBody("subscription.canceled", `{"id":"sub_1","status":"canceled","current_billing_period":null}`),
			true, event("subscription.canceled", perch.BillingEvent{SubscriptionID: "sub_1", Status: perch.PlanCanceled, Alert: perch.AlertCanceled})},

		{"a completed renewal",
			paddleBody("transaction.completed", `{"id":"txn_1","subscription_id":"sub_1","customer_id":"ctm_1","custom_data":{"org_id":"org_1"},
				"items":[{"price_id":"pri_team","quantity":1}],"billing_period":{"starts_at":"2024-04-12T10:18:47Z","ends_at":"2024-05-12T10:18:47Z"}}`),
			true, event("transaction.completed", perch.BillingEvent{OrgID: "org_1", CheckoutID: "txn_1", CustomerID: "ctm_1", SubscriptionID: "sub_1", PriceID: "pri_team",
				Status: perch.PlanActive, PeriodEnd: rfc3339p(t, "2024-05-12T10:18:47Z")})},
		{"a failed renewal payment",
			paddleBody("transaction.payment_failed", `{"id":"txn_1","subscription_id":"sub_1","customer_id":"ctm_1","billing_period":{"ends_at":"2024-05-12T10:18:47Z"}}`),
			true, event("transaction.payment_failed", perch.BillingEvent{CustomerID: "ctm_1", SubscriptionID: "sub_1", Status: perch.PlanPastDue, Alert: perch.AlertPaymentFailed})},
		{"a one-off payment is not Perch's",
			paddleBody("transaction.completed", `{"id":"txn_1","subscription_id":null,"customer_id":"ctm_1","custom_data":{"org_id":"org_1"}}`),
			false, event("transaction.completed", perch.BillingEvent{})},

		{"an event Perch does not act on is ignored",
			paddleBody("adjustment.created", `{"id":"adj_1"}`),
			false, event("adjustment.created", perch.BillingEvent{})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, ok, err := PaddleEvent(c.body)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if ok != c.ok {
				t.Errorf("ok = %v, want %v", ok, c.ok)
			}
			for _, d := range billingEventDiff(ev, c.want) {
				t.Error(d)
			}
		})
	}
}

func TestPaddleEventRefuses(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxBillingID+1)
	const at = `"occurred_at":"2024-04-12T10:18:49Z"`
	cases := []struct {
		name, body string
		says       string // in the message
	}{
		{"an empty body", ` `, "empty"},
		{"text", `event_id=1`, "not valid JSON"},
		{"a string", `"evt_1"`, "JSON object"},
		{"no event id", `{"event_type":"subscription.updated",` + at + `,"data":{}}`, "event_id is required"},
		{"no event type", `{"event_id":"evt_1",` + at + `,"data":{}}`, "event_type is required"},
		{"no time", `{"event_id":"evt_1","event_type":"subscription.updated","data":{}}`, "occurred_at is required"},
		{"a time that is not RFC 3339", `{"event_id":"evt_1","event_type":"x.y","occurred_at":"12/04/2024","data":{}}`, "occurred_at must be an RFC 3339 time"},
		{"a time before 1970", `{"event_id":"evt_1","event_type":"x.y","occurred_at":"0001-01-01T00:00:00Z","data":{}}`, "occurred_at must be a time from 1970 on"},
		{"a time as a number", `{"event_id":"evt_1","event_type":"x.y","occurred_at":1712917129,"data":{}}`, "occurred_at must be a string, not a number"},
		{"no data", `{"event_id":"evt_1","event_type":"x.y",` + at + `}`, "data must be an object"},
		{"data as an array", `{"event_id":"evt_1","event_type":"x.y",` + at + `,"data":[]}`, "data must be an object"},
		{"an event id too long", `{"event_id":"` + long + `","event_type":"x.y",` + at + `,"data":{}}`, "event_id is 256 bytes long"},
		{"a subscription without an id", string(paddleBody("subscription.updated", `{"status":"active"}`)), "data.id is required"},
		{"an organisation id that is not a string", string(paddleBody("subscription.updated", `{"id":"sub_1","custom_data":{"org_id":42}}`)),
			"data.custom_data.org_id must be a string, not a number"},
		{"an organisation id too long", string(paddleBody("transaction.completed", `{"subscription_id":"sub_1","custom_data":{"org_id":"`+long+`"}}`)),
			"The organisation id in data is 256 bytes long"},
		{"a checkout transaction id too long", string(paddleBody("subscription.created", `{"id":"sub_1","transaction_id":"`+long+`"}`)),
			"The transaction id in data is 256 bytes long"},
		{"a period end that is not a time", string(paddleBody("subscription.updated", `{"id":"sub_1","current_billing_period":{"ends_at":"next month"}}`)),
			"data.current_billing_period.ends_at must be an RFC 3339 time"},
		{"a trial end that is not a time", string(paddleBody("subscription.created", `{"id":"sub_1","items":[{"trial_dates":{"ends_at":"2024-13-01T00:00:00Z"}}]}`)),
			"data.items[0].trial_dates.ends_at must be an RFC 3339 time"},
		{"a quantity beyond any plan", string(paddleBody("subscription.updated", `{"id":"sub_1","items":[{"price":{"id":"pri_team"},"quantity":1000001}]}`)),
			"data.items[0].quantity must be a quantity from 0 to 1000000"},
		{"a scheduled change that is not an object", string(paddleBody("subscription.updated", `{"id":"sub_1","scheduled_change":"cancel"}`)),
			"data.scheduled_change must be an object, not a string"},
		{"a billing period end that is not a time", string(paddleBody("transaction.completed", `{"subscription_id":"sub_1","billing_period":{"ends_at":"soon"}}`)),
			"data.billing_period.ends_at must be an RFC 3339 time"},
		{"items that are not a list", string(paddleBody("transaction.completed", `{"subscription_id":"sub_1","items":{}}`)),
			"data.items must be an array, not an object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, ok, err := PaddleEvent([]byte(c.body))
			checkRefused(t, ev, ok, err, c.says)
		})
	}
}
