package server

import (
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/billing"
	"github.com/perch-dev/perch/internal/billing/paddlefake"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

// unmoved fails the test unless acc's organisation's subscription is
// still what it was, nothing of billing was audited for it since, and its
// owners were told nothing.
func (a *api) unmoved(acc *account, before map[string]any, what string) {
	a.t.Helper()
	if after := a.subscription(acc); !sameJSON(after, before) {
		a.t.Fatalf("%s: %s's subscription moved from %v to %v", what, acc.Email, before, after)
	}
	entries, _, err := a.store.AuditLog(a.t.Context(), perch.AuditFilter{Action: perch.AuditSubscriptionChanged, OrgID: acc.OrgID})
	if err != nil || len(entries) != 0 {
		a.t.Fatalf("%s: %d subscription changes audited for %s, %v", what, len(entries), acc.Email, err)
	}
	for _, n := range expect(a.t, a.call("GET", "/api/v1/notifications", acc.Access, nil), 200).List() {
		if n["tab"] == perch.TabPayments {
			a.t.Fatalf("%s: %s was told %v", what, acc.Email, n)
		}
	}
}

func sameJSON(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// wantIgnored fails the test unless res is the receipt of an event that
// changed nothing, saying why.
func wantIgnored(tb testing.TB, res *response, what string) {
	tb.Helper()
	if expect(tb, res, 200); res.Body["received"] != true || res.Body["ignored"] == nil || res.Body["ignored"] == "" {
		tb.Fatalf("%s: %s, want it received and ignored", what, res.Raw)
	}
}

// TestStripeEventsFollowTheLinkedOrganisation: a Stripe subscription
// belongs to the organisation whose checkout made it. A signed event whose
// metadata.org_id or client_reference_id names another organisation, for
// that subscription or from a checkout Perch never opened (a payment link
// takes client_reference_id from its URL), moves nothing into that
// organisation: answered 200 ignored, so Stripe does not retry, and
// logged.
func TestStripeEventsFollowTheLinkedOrganisation(t *testing.T) {
	t.Parallel()
	mock := testenv.StripeMock(t)
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, withBilling(billing.NewStripe("sk_test_perch", mock, stripePrices, nil)))
		mallory, vera := a.register("Mallory"), a.register("Vera Victim")
		for _, acc := range []*account{mallory, vera} {
			a.apiToken(acc, "menu bar") // the test moves the clock
			acc.Access = acc.Token
		}
		veraBefore := a.subscription(vera)

		// Mallory subscribes through a checkout her organisation opened.
		expect(t, a.call("POST", "/api/v1/billing/checkout", mallory.Access, map[string]string{"plan": "team"}), 200)
		own := a.lastCheckout(mallory.OrgID)
		at := a.clock.Now()
		expect(t, a.stripeEvent("evt_1", "checkout.session.completed", at, map[string]any{"id": own, "object": "checkout.session",
			"mode": "subscription", "payment_status": "paid", "client_reference_id": mallory.OrgID, "customer": "cus_m", "subscription": "sub_m",
			"metadata": map[string]any{"org_id": mallory.OrgID, "price_id": "price_team"}}), 200)
		a.wantSubscription(mallory, "team", perch.PlanActive)
		malloryBefore := a.subscription(mallory)

		// Her subscription's metadata now names Vera's organisation.
		moved := map[string]any{"id": "sub_m", "object": "subscription", "customer": "cus_m", "status": "active",
			"metadata": map[string]any{"org_id": vera.OrgID},
			"items":    map[string]any{"data": []any{map[string]any{"price": map[string]any{"id": "price_enterprise"}}}}}
		wantIgnored(t, a.stripeEvent("evt_2", "customer.subscription.updated", at.Add(time.Second), moved), "her subscription naming Vera")
		moved["status"] = "canceled"
		wantIgnored(t, a.stripeEvent("evt_3", "customer.subscription.deleted", at.Add(2*time.Second), moved), "its deletion naming Vera")
		// Her own checkout, completed naming Vera.
		wantIgnored(t, a.stripeEvent("evt_4", "checkout.session.completed", at.Add(3*time.Second), map[string]any{"id": own,
			"object": "checkout.session", "mode": "subscription", "payment_status": "paid", "client_reference_id": vera.OrgID,
			"customer": "cus_m2", "subscription": "sub_m2"}), "her checkout naming Vera")
		// A payment link's checkout, which Perch never opened, naming Vera.
		wantIgnored(t, a.stripeEvent("evt_5", "checkout.session.completed", at.Add(4*time.Second), map[string]any{"id": "cs_live_payment_link",
			"object": "checkout.session", "mode": "subscription", "payment_status": "paid", "client_reference_id": vera.OrgID,
			"customer": "cus_x", "subscription": "sub_x", "metadata": map[string]any{"price_id": "price_enterprise"}}), "a payment link naming Vera")
		// Stripe retries nothing, and a retry would change nothing either.
		if dup := expect(t, a.stripeEvent("evt_2", "customer.subscription.updated", at.Add(time.Second), moved), 200); dup.Body["duplicate"] != true {
			t.Fatalf("a redelivery: %s", dup.Raw)
		}

		a.unmoved(vera, veraBefore, "after the events naming Vera")
		if after := a.subscription(mallory); !sameJSON(after, malloryBefore) {
			t.Fatalf("the events naming Vera changed Mallory's subscription from %v to %v", malloryBefore, after)
		}
		logs := a.logs.String()
		if strings.Count(logs, "named another organisation than the one its subscription is linked to") != 3 ||
			!strings.Contains(logs, "named an organisation that no completed checkout is linked to") || !strings.Contains(logs, "named_org="+vera.OrgID) {
			t.Fatalf("the log says:\n%s", logs)
		}

		// Mallory's own events, which need not name her, still apply.
		expect(t, a.stripeEvent("evt_6", "invoice.payment_failed", at.Add(5*time.Second),
			map[string]any{"id": "in_1", "object": "invoice", "customer": "cus_m", "subscription": "sub_m"}), 200)
		a.wantSubscription(mallory, "team", perch.PlanPastDue)
	})
}

// TestPaddleEventsFollowTheLinkedOrganisation: the same for Paddle, whose
// custom_data anyone opening a checkout with Paddle.js may set.
func TestPaddleEventsFollowTheLinkedOrganisation(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		fake := paddlefake.Start(t, "pdl_test_key", "pri_solo", "pri_team", "pri_enterprise")
		a := newAPI(t, s, withBilling(billing.NewPaddle("pdl_test_key", fake.URL(), paddlePrices, nil)))
		mallory, vera := a.register("Mallory"), a.register("Vera Victim")
		veraBefore := a.subscription(vera)

		expect(t, a.call("POST", "/api/v1/billing/checkout", mallory.Access, map[string]string{"plan": "team"}), 200)
		txn := a.lastCheckout(mallory.OrgID)
		at := a.clock.Now()
		sub := func(orgID string) map[string]any {
			return map[string]any{"id": "sub_m", "status": "active", "customer_id": "ctm_m", "transaction_id": txn,
				"custom_data": map[string]any{"org_id": orgID}, "items": []any{map[string]any{"price": map[string]any{"id": "pri_team"}}}}
		}
		// The subscription her checkout made, its custom_data naming Vera.
		wantIgnored(t, a.paddleEvent("evt_01", "subscription.created", at, sub(vera.OrgID)), "her checkout's subscription naming Vera")
		// Created for her: hers.
		expect(t, a.paddleEvent("evt_02", "subscription.created", at.Add(time.Second), sub(mallory.OrgID)), 200)
		a.wantSubscription(mallory, "team", perch.PlanActive)
		// A renewal naming Vera, and a Paddle.js checkout Perch never opened.
		wantIgnored(t, a.paddleEvent("evt_03", "transaction.completed", at.Add(2*time.Second), map[string]any{"id": "txn_renewal",
			"subscription_id": "sub_m", "customer_id": "ctm_m", "custom_data": map[string]any{"org_id": vera.OrgID},
			"items": []any{map[string]any{"price": map[string]any{"id": "pri_enterprise"}}}}), "a renewal naming Vera")
		wantIgnored(t, a.paddleEvent("evt_04", "transaction.completed", at.Add(3*time.Second), map[string]any{"id": "txn_paddle_js",
			"subscription_id": "sub_x", "customer_id": "ctm_x", "custom_data": map[string]any{"org_id": vera.OrgID},
			"items": []any{map[string]any{"price": map[string]any{"id": "pri_enterprise"}}}}), "a Paddle.js checkout naming Vera")
		a.unmoved(vera, veraBefore, "after the events naming Vera")
		a.wantSubscription(mallory, "team", perch.PlanActive)
	})
}
