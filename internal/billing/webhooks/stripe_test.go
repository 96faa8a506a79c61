package webhooks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
)

// stripeBody wraps a data.object (and previous_attributes, when not empty)
// in a Stripe event envelope.
func stripeBody(eventType, object, previous string) []byte {
	if previous == "" {
		previous = "null"
	}
	return fmt.Appendf(nil, `{"id":"evt_1","object":"event","type":%q,"created":1700000000,"data":{"object":%s,"previous_attributes":%s}}`,
		eventType, object, previous)
}

func TestStripeEvent(t *testing.T) {
	t.Parallel()
	envelope := perch.BillingEvent{Provider: perch.BillingStripe, ID: "evt_1", OccurredAt: unix(1700000000)}
	event := func(eventType string, e perch.BillingEvent) perch.BillingEvent {
		e.Provider, e.ID, e.Type, e.OccurredAt = envelope.Provider, envelope.ID, eventType, envelope.OccurredAt
		return e
	}
	const session = `"object":"checkout.session","mode":"subscription","payment_status":"paid"`
	cases := []struct {
		name string
		body []byte
		ok   bool
		want perch.BillingEvent
	}{
		{"a paid checkout in subscription mode starts Perch's subscription",
			stripeBody("checkout.session.completed", `{"id":"cs_1",`+session+`,"client_reference_id":"org_1","customer":"cus_1","subscription":"sub_1",
				"metadata":{"org_id":"org_meta","plan":"team","price_id":"price_team"}}`, ""),
			true, event("checkout.session.completed", perch.BillingEvent{OrgID: "org_1", CheckoutID: "cs_1", CustomerID: "cus_1", SubscriptionID: "sub_1",
				PriceID: "price_team", Status: perch.PlanActive})},
		{"without a client reference the organisation comes from the metadata, and expanded objects give their ids",
			stripeBody("checkout.session.completed", `{"object":"checkout.session","mode":"subscription","payment_status":"no_payment_required",
				"client_reference_id":null,"customer":{"id":"cus_2","object":"customer"},"subscription":{"id":"sub_2","object":"subscription"},"metadata":{"org_id":"org_2"}}`, ""),
			true, event("checkout.session.completed", perch.BillingEvent{OrgID: "org_2", CustomerID: "cus_2", SubscriptionID: "sub_2", Status: perch.PlanActive})},
		{"an unpaid checkout changes nothing",
			stripeBody("checkout.session.completed", `{"mode":"subscription","payment_status":"unpaid","client_reference_id":"org_1"}`, ""),
			false, event("checkout.session.completed", perch.BillingEvent{})},
		{"a checkout in setup mode is not Perch's",
			stripeBody("checkout.session.completed", `{"mode":"setup","payment_status":"no_payment_required","client_reference_id":"org_1"}`, ""),
			false, event("checkout.session.completed", perch.BillingEvent{})},
		{"an event naming no organisation, customer or subscription cannot be applied",
			stripeBody("checkout.session.completed", `{`+session+`}`, ""),
			false, event("checkout.session.completed", perch.BillingEvent{})},

		{"a new subscription on its trial, with the period end on its item (API 2025-03-31 on)",
			stripeBody("customer.subscription.created", `{"object":"subscription","id":"sub_3","customer":"cus_3","status":"trialing",
				"metadata":{"org_id":"org_3"},"cancel_at_period_end":true,"trial_end":1701000000,
				"items":{"data":[{"price":{"id":"price_solo"},"current_period_end":1702000000}]}}`, ""),
			true, event("customer.subscription.created", perch.BillingEvent{OrgID: "org_3", CustomerID: "cus_3", SubscriptionID: "sub_3", PriceID: "price_solo",
				Status: perch.PlanTrialing, TrialEndsAt: unixp(1701000000), PeriodEnd: unixp(1702000000), CancelAtPeriodEnd: boolp(true)})},
		{"the seats billed are the plan item's quantity, or an older API's subscription quantity",
			stripeBody("customer.subscription.updated", `{"object":"subscription","id":"sub_q","customer":"cus_q","status":"active","quantity":2,
				"items":{"data":[{"price":{"id":"price_team"},"quantity":7}]}}`, ""),
			true, event("customer.subscription.updated", perch.BillingEvent{CustomerID: "cus_q", SubscriptionID: "sub_q", PriceID: "price_team",
				Status: perch.PlanActive, Seats: intp(7)})},
		{"an older API's subscription says its quantity itself",
			stripeBody("customer.subscription.updated", `{"object":"subscription","id":"sub_q","customer":"cus_q","status":"active","quantity":4,
				"plan":{"id":"price_team"}}`, ""),
			true, event("customer.subscription.updated", perch.BillingEvent{CustomerID: "cus_q", SubscriptionID: "sub_q", PriceID: "price_team",
				Status: perch.PlanActive, Seats: intp(4)})},
		{"an older subscription names its price as the plan",
			stripeBody("customer.subscription.created", `{"id":"sub_4","customer":"cus_4","status":"active","plan":{"id":"gold"},"current_period_end":1702000000}`, ""),
			true, event("customer.subscription.created", perch.BillingEvent{CustomerID: "cus_4", SubscriptionID: "sub_4", PriceID: "gold",
				Status: perch.PlanActive, PeriodEnd: unixp(1702000000)})},
		{"an update that cancels the subscription tells the owners",
			stripeBody("customer.subscription.updated", `{"id":"sub_5","customer":"cus_5","status":"canceled"}`, `{"status":"past_due"}`),
			true, event("customer.subscription.updated", perch.BillingEvent{CustomerID: "cus_5", SubscriptionID: "sub_5", Status: perch.PlanCanceled, Alert: perch.AlertCanceled})},
		{"an update of a subscription canceled before tells nobody again",
			stripeBody("customer.subscription.updated", `{"id":"sub_5","customer":"cus_5","status":"canceled"}`, `{"metadata":{"x":null}}`),
			true, event("customer.subscription.updated", perch.BillingEvent{CustomerID: "cus_5", SubscriptionID: "sub_5", Status: perch.PlanCanceled})},
		{"an incomplete subscription expiring is canceled",
			stripeBody("customer.subscription.updated", `{"id":"sub_5","status":"incomplete_expired"}`, `{"status":"incomplete"}`),
			true, event("customer.subscription.updated", perch.BillingEvent{SubscriptionID: "sub_5", Status: perch.PlanCanceled, Alert: perch.AlertCanceled})},
		{"an unpaid subscription is past due",
			stripeBody("customer.subscription.updated", `{"id":"sub_5","status":"unpaid"}`, `{"status":"past_due"}`),
			true, event("customer.subscription.updated", perch.BillingEvent{SubscriptionID: "sub_5", Status: perch.PlanPastDue})},
		{"an incomplete subscription is past due",
			stripeBody("customer.subscription.created", `{"id":"sub_5","status":"incomplete"}`, ""),
			true, event("customer.subscription.created", perch.BillingEvent{SubscriptionID: "sub_5", Status: perch.PlanPastDue})},
		{"a paused subscription is paused",
			stripeBody("customer.subscription.updated", `{"id":"sub_5","status":"paused"}`, `{"status":"trialing"}`),
			true, event("customer.subscription.updated", perch.BillingEvent{SubscriptionID: "sub_5", Status: perch.PlanPaused})},
		{"a status Stripe adds later leaves Perch's as it is",
			stripeBody("customer.subscription.updated", `{"id":"sub_5","status":"hibernating"}`, `{"status":"active"}`),
			true, event("customer.subscription.updated", perch.BillingEvent{SubscriptionID: "sub_5"})},
		{"a deleted subscription is canceled whatever its status says",
			stripeBody("customer.subscription.deleted", `{"id":"sub_6","customer":{"id":"cus_6"},"status":"active","cancel_at_period_end":false}`, ""),
			true, event("customer.subscription.deleted", perch.BillingEvent{CustomerID: "cus_6", SubscriptionID: "sub_6", Status: perch.PlanCanceled,
				CancelAtPeriodEnd: boolp(false), Alert: perch.AlertCanceled})},

		{"a paid invoice renews the period",
			stripeBody("invoice.paid", `{"object":"invoice","customer":"cus_7","subscription":"sub_7","lines":{"data":[{"period":{"start":1700000000,"end":1702592000}}]}}`, ""),
			true, event("invoice.paid", perch.BillingEvent{CustomerID: "cus_7", SubscriptionID: "sub_7", Status: perch.PlanActive, PeriodEnd: unixp(1702592000)})},
		{"a newer invoice names its subscription and organisation under parent",
			stripeBody("invoice.paid", `{"customer":"cus_8","parent":{"subscription_details":{"subscription":"sub_8","metadata":{"org_id":"org_8"}}}}`, ""),
			true, event("invoice.paid", perch.BillingEvent{OrgID: "org_8", CustomerID: "cus_8", SubscriptionID: "sub_8", Status: perch.PlanActive})},
		{"or under its first line's parent",
			stripeBody("invoice.payment_failed", `{"customer":"cus_8","lines":{"data":[{"parent":{"subscription_item_details":{"subscription":"sub_8"}}}]}}`, ""),
			true, event("invoice.payment_failed", perch.BillingEvent{CustomerID: "cus_8", SubscriptionID: "sub_8", Status: perch.PlanPastDue, Alert: perch.AlertPaymentFailed})},
		{"a one-off invoice is not Perch's",
			stripeBody("invoice.payment_failed", `{"customer":"cus_9","subscription":null,"lines":{"data":[{"id":"ii_1","type":"invoiceitem"}]}}`, ""),
			false, event("invoice.payment_failed", perch.BillingEvent{})},

		{"an event Perch does not act on is ignored",
			stripeBody("customer.created", `{"object":"customer","id":"cus_1"}`, ""),
			false, event("customer.created", perch.BillingEvent{})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, ok, err := StripeEvent(c.body)
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

func TestStripeEventRefuses(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxBillingID+1)
	cases := []struct {
		name, body string
		says       string // in the message
	}{
		{"an empty body", ``, "empty"},
		{"text", `not json`, "not valid JSON"},
		{"an array", `[{"id":"evt_1"}]`, "JSON object"},
		{"no id", `{"type":"invoice.paid","created":1,"data":{"object":{}}}`, "id is required"},
		{"no type", `{"id":"evt_1","created":1,"data":{"object":{}}}`, "type is required"},
		{"no created", `{"id":"evt_1","type":"invoice.paid","data":{"object":{}}}`, "created is required"},
		{"created as text", `{"id":"evt_1","type":"invoice.paid","created":"yesterday","data":{"object":{}}}`, "created must be a whole number, not a string"},
		{"created beyond the year 9999", `{"id":"evt_1","type":"invoice.paid","created":300000000000,"data":{"object":{}}}`, "created must be a Unix time"},
		{"no data", `{"id":"evt_1","type":"invoice.paid","created":1}`, "data.object must be an object"},
		{"data.object of the wrong type", `{"id":"evt_1","type":"customer.created","created":1,"data":{"object":"cus_1"}}`, "data.object must be an object"},
		{"a thin event", `{"id":"evt_1","object":"v2.core.event","type":"invoice.paid","created":1}`, `its object is "v2.core.event"`},
		{"an event id too long", `{"id":"` + long + `","type":"invoice.paid","created":1,"data":{"object":{}}}`, "id is 256 bytes long"},
		{"a type with a control character", `{"id":"evt_1","type":"invoice.paid\n","created":1,"data":{"object":{}}}`, "type holds a control character"},
		{"an object of another kind than the type says", string(stripeBody("customer.subscription.updated", `{"object":"invoice","id":"in_1"}`, "")),
			`must be a "subscription" object, not "invoice"`},
		{"a subscription without an id", string(stripeBody("customer.subscription.updated", `{"status":"active"}`, "")), "data.object.id is required"},
		{"a customer as a number", string(stripeBody("customer.subscription.updated", `{"id":"sub_1","customer":5}`, "")),
			"data.object.customer must be a string, not a number"},
		{"a customer id too long", string(stripeBody("invoice.paid", `{"subscription":"sub_1","customer":"`+long+`"}`, "")),
			"The customer id in data.object is 256 bytes long"},
		{"a checkout session id too long", string(stripeBody("checkout.session.completed",
			`{"id":"`+long+`","mode":"subscription","payment_status":"paid","subscription":"sub_1"}`, "")),
			"The checkout session id in data.object is 256 bytes long"},
		{"a subscription id with a NUL", string(stripeBody("invoice.paid", `{"subscription":"sub_\u0000"}`, "")), "control character"},
		{"a negative period end", string(stripeBody("customer.subscription.updated", `{"id":"sub_1","current_period_end":-5}`, "")),
			"data.object.current_period_end must be a Unix time"},
		{"a trial end as text", string(stripeBody("customer.subscription.updated", `{"id":"sub_1","trial_end":"soon"}`, "")),
			"data.object.trial_end must be a whole number"},
		{"a negative quantity", string(stripeBody("customer.subscription.updated", `{"id":"sub_1","items":{"data":[{"quantity":-1}]}}`, "")),
			"data.object.items.data[0].quantity must be a quantity from 0"},
		{"previous attributes of the wrong shape", string(stripeBody("customer.subscription.updated", `{"id":"sub_1","status":"canceled"}`, `{"status":7}`)),
			"data.previous_attributes.status must be a string"},
		{"invoice lines that are not a list", string(stripeBody("invoice.paid", `{"subscription":"sub_1","lines":[]}`, "")),
			"data.object.lines must be an object, not an array"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, ok, err := StripeEvent([]byte(c.body))
			checkRefused(t, ev, ok, err, c.says)
		})
	}
}

// checkRefused checks that a body was refused as a bad request whose
// message says what is wrong, with nothing else returned.
func checkRefused(t *testing.T, ev perch.BillingEvent, ok bool, err error, says string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; ok = %v, event %+v", ok, ev)
	}
	if code := perch.ErrorCode(err); code != perch.EBADREQUEST {
		t.Errorf("code = %q, want %q (%v)", code, perch.EBADREQUEST, err)
	}
	if msg := perch.ErrorMessage(err); !strings.Contains(msg, says) {
		t.Errorf("message %q does not say %q", msg, says)
	}
	if ok || ev != (perch.BillingEvent{}) {
		t.Errorf("an error came with ok = %v and event %+v", ok, ev)
	}
}

// TestStripeTrialWillEnd reads customer.subscription.trial_will_end as
// Stripe's API reference shows it (the event, and the whole subscription
// as data.object): the trial's end, the seats billed, and the alert that
// tells the owners.
func TestStripeTrialWillEnd(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile(filepath.Join("testdata", "stripe", "customer.subscription.trial_will_end.json"))
	if err != nil {
		t.Fatal(err)
	}
	ev, ok, err := StripeEvent(body)
	if err != nil || !ok {
		t.Fatalf("StripeEvent = %v, %v", ok, err)
	}
	want := perch.BillingEvent{Provider: perch.BillingStripe, ID: "evt_1QtrialWillEndPerch01", Type: "customer.subscription.trial_will_end",
		OccurredAt: unix(1764979200), OrgID: "org_trial", CustomerID: "cus_PerchTrial01", SubscriptionID: "sub_1QtrialPerchTeam01",
		PriceID: "price_team", Status: perch.PlanTrialing, TrialEndsAt: unixp(1765238400), PeriodEnd: unixp(1765238400),
		CancelAtPeriodEnd: boolp(false), Seats: intp(3), Alert: perch.AlertTrialEnding}
	for _, d := range billingEventDiff(ev, want) {
		t.Error(d)
	}
}
