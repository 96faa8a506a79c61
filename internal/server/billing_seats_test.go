package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/billing"
	"github.com/perch-dev/perch/internal/billing/paddlefake"
	"github.com/perch-dev/perch/internal/billing/webhooks"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

// billedSeats is GET /org's subscription.seats as acc sees it (-1: null).
func (a *api) billedSeats(acc *account) int {
	a.t.Helper()
	n, ok := a.subscription(acc)["seats"].(float64)
	if !ok {
		return -1
	}
	return int(n)
}

// seatAudits are orgID's billing.seats_updated entries, oldest first, as
// "from→to".
func (a *api) seatAudits(orgID string) []string {
	a.t.Helper()
	entries, _, err := a.store.AuditLog(a.t.Context(), perch.AuditFilter{Action: perch.AuditSeatsUpdated, OrgID: orgID, Page: perch.Page{Limit: 50}})
	if err != nil {
		a.t.Fatal(err)
	}
	var out []string
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Actor.Type != perch.ActorSystem {
			a.t.Errorf("a seat change audited as %+v, want the system", e.Actor)
		}
		seats, _ := e.Changes["seats"].([]any)
		if len(seats) != 2 {
			a.t.Fatalf("a seat change's entry without from and to: %v", e.Changes)
		}
		out = append(out, fmt.Sprintf("%v→%v", seats[0], seats[1]))
	}
	return out
}

// tick runs the worker once, as its poll would.
func (a *api) tick() {
	a.t.Helper()
	if err := a.worker.Tick(a.t.Context()); err != nil {
		a.t.Fatal(err)
	}
}

// TestPaddleSeatsFollowMembers: the checkout bills the members; after
// every join and departure the worker sets the Paddle subscription's
// quantity to the count (PATCH, prorated_immediately), once for a burst,
// not again when nothing changed, retried when Paddle fails; each change
// audited with its counts, and GET /org shows the seats billed.
func TestPaddleSeatsFollowMembers(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		fake := paddlefake.Start(t, "pdl_test_key", "pri_solo", "pri_team", "pri_enterprise")
		a := newAPI(t, s, withBilling(billing.NewPaddle("pdl_test_key", fake.URL(), paddlePrices, nil)))
		o := newBillingOrg(a, a.live())
		org := o.owner.OrgID
		if n := a.billedSeats(o.owner); n != -1 {
			t.Fatalf("seats billed on Perch's own trial: %d", n)
		}

		expect(t, a.call("POST", "/api/v1/billing/checkout", o.owner.Access, map[string]string{"plan": "team"}), 200)
		txn := fake.Transactions()[0]
		if q := txn.Items[0].Quantity; q != 3 {
			t.Fatalf("the checkout's quantity is %d, want the 3 members", q)
		}
		const customer = "ctm_01hv8x29kz0t586xy6zn1a62ny"
		subID := fake.AddSubscription("active", customer, paddlefake.Item{PriceID: "pri_team", Quantity: 3})
		now := a.clock.Now()
		expect(t, a.paddleEvent("evt_s1", "subscription.created", now, map[string]any{"id": subID, "status": "active", "customer_id": customer,
			"transaction_id": txn.ID, "custom_data": map[string]any{"org_id": org},
			"items": []any{map[string]any{"price": map[string]any{"id": "pri_team"}, "quantity": 3}}}), 200)
		a.tick()
		if n := a.billedSeats(o.owner); n != 3 || len(fake.SubscriptionUpdates()) != 0 {
			t.Fatalf("after the subscription came: %d seats billed, %d updates; want 3 and none", n, len(fake.SubscriptionUpdates()))
		}

		quantity := func() int {
			sub, _ := fake.Subscription(subID)
			return sub.Items[0].Quantity
		}
		// A join: one update to 4.
		dee := a.invite(o.owner, "Dee Doe", "member")
		a.tick()
		if q, n := quantity(), a.billedSeats(o.owner); q != 4 || n != 4 {
			t.Fatalf("after a join Paddle bills %d and GET /org says %d, want 4", q, n)
		}
		if u := fake.SubscriptionUpdates(); len(u) != 1 || u[0].ProrationBillingMode != "prorated_immediately" {
			t.Fatalf("updates %+v", u)
		}

		// Two leave: one update, to the final count.
		expect(t, a.call("DELETE", "/api/v1/org/members/"+dee.ID, o.owner.Access, nil), 204)
		expect(t, a.call("DELETE", "/api/v1/org/members/"+o.member.ID, o.owner.Access, nil), 204)
		a.tick()
		a.tick()
		if q, u := quantity(), fake.SubscriptionUpdates(); q != 2 || len(u) != 2 {
			t.Fatalf("after two left Paddle bills %d after %d updates, want 2 after 2", q, len(u))
		}

		// Paddle fails: the job is retried after its backoff.
		fake.FailNext(500, "internal_error", "Paddle is having a moment.")
		a.invite(o.owner, "Eve Eager", "member")
		a.tick()
		if q := quantity(); q != 2 {
			t.Fatalf("a failed update changed the quantity to %d", q)
		}
		a.clock.Advance(store.JobBackoff(1) + 3*time.Second) // past the first retry's wait, jitter or not
		a.tick()
		if q, n := quantity(), a.billedSeats(o.owner); q != 3 || n != 3 {
			t.Fatalf("after the retry Paddle bills %d and GET /org says %d, want 3", q, n)
		}
		// The identity provider's changes count as any other.
		idp := a.scimClient(o.owner, "okta", "example.com")
		fay := idp.do("POST", "/scim/v2/Users", newUser("fay@example.com")).want(t, 201)
		a.tick()
		if q := quantity(); q != 4 {
			t.Fatalf("after a SCIM user was made Paddle bills %d, want 4", q)
		}
		idp.do("PATCH", "/scim/v2/Users/"+fay.str("id"), map[string]any{"schemas": []string{"urn:ietf:params:scim:api:messages:2.0:PatchOp"},
			"Operations": []any{map[string]any{"op": "replace", "value": map[string]any{"active": false}}}}).want(t, 200)
		a.tick()
		if q, n := quantity(), a.billedSeats(o.owner); q != 3 || n != 3 {
			t.Fatalf("after a SCIM deactivation Paddle bills %d and GET /org says %d, want 3", q, n)
		}
		if got, want := strings.Join(a.seatAudits(org), " "), "3→4 4→2 2→3 3→4 4→3"; got != want {
			t.Errorf("seat changes audited %q, want %q", got, want)
		}
	})
}

// TestStripeSeatsAgainstStripeMock: a subscription bound without a
// quantity has its seats set by the worker through stripe-go: stripe-mock
// answers the subscription (one item of quantity 1) and takes the item's
// update.
func TestStripeSeatsAgainstStripeMock(t *testing.T) {
	t.Parallel()
	mock := testenv.StripeMock(t)
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, withBilling(billing.NewStripe("sk_test_perch", mock, stripePrices, nil)))
		o := newBillingOrg(a, a.live())
		org := o.owner.OrgID
		expect(t, a.call("POST", "/api/v1/billing/checkout", o.owner.Access, map[string]string{"plan": "team"}), 200)
		expect(t, a.stripeEvent("evt_1", "checkout.session.completed", a.clock.Now(), map[string]any{"id": a.lastCheckout(org),
			"object": "checkout.session", "mode": "subscription", "payment_status": "paid", "client_reference_id": org,
			"customer": "cus_perch", "subscription": "sub_perch", "metadata": map[string]any{"org_id": org, "price_id": "price_team"}}), 200)
		a.tick()
		if n := a.billedSeats(o.owner); n != 3 {
			t.Fatalf("seats billed %d, want 3", n)
		}
		if got := a.seatAudits(org); len(got) != 1 || got[0] != "1→3" {
			t.Fatalf("seat changes audited %q, want 1→3", got)
		}
		// The provider's own word on the quantity, older or newer, is shown;
		// one that differs from the members has the worker set it back.
		expect(t, a.stripeEvent("evt_2", "customer.subscription.updated", a.clock.Now(), map[string]any{"id": "sub_perch", "object": "subscription",
			"customer": "cus_perch", "status": "active", "items": map[string]any{"data": []any{map[string]any{"price": map[string]any{"id": "price_team"}, "quantity": 9}}}}), 200)
		if n := a.billedSeats(o.owner); n != 9 {
			t.Fatalf("after Stripe said 9: %d", n)
		}
		a.tick()
		if n := a.billedSeats(o.owner); n != 3 {
			t.Fatalf("after the worker: %d, want 3", n)
		}
	})
}

// checkoutRecorder is a payment provider that keeps what each checkout was
// asked for, and passes everything to a real provider (stripe-mock's).
type checkoutRecorder struct {
	billing.Provider
	mu       sync.Mutex
	requests []billing.CheckoutRequest
}

func (c *checkoutRecorder) Checkout(ctx context.Context, req billing.CheckoutRequest) (*billing.Checkout, error) {
	c.mu.Lock()
	c.requests = append(c.requests, req)
	c.mu.Unlock()
	return c.Provider.Checkout(ctx, req)
}

func (c *checkoutRecorder) last(tb testing.TB) billing.CheckoutRequest {
	tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.requests) == 0 {
		tb.Fatal("no checkout was opened")
	}
	return c.requests[len(c.requests)-1]
}

// TestCheckoutBillsSeatsAndTheRestOfTheTrial: the server asks the
// provider for the seat count and, during Perch's own trial, for its end;
// while a payment is past due checkout is 409 payment_past_due, pointing at
// the portal, which still opens; beside a live subscription it is 400
// already_subscribed, whatever the plan.
func TestCheckoutBillsSeatsAndTheRestOfTheTrial(t *testing.T) {
	t.Parallel()
	mock := testenv.StripeMock(t)
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		rec := &checkoutRecorder{Provider: billing.NewStripe("sk_test_perch", mock, stripePrices, nil)}
		a := newAPI(t, s, withBilling(rec))
		o := newBillingOrg(a, a.live())
		org := o.owner.OrgID
		trialEnds, err := time.Parse(time.RFC3339, a.subscription(o.owner)["trial_ends_at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		expect(t, a.call("POST", "/api/v1/billing/checkout", o.admin.Access, map[string]string{"plan": "team"}), 200)
		if got := rec.last(t); got.Seats != 3 || !got.TrialEnd.Equal(trialEnds) {
			t.Fatalf("checkout asked for %d seats, trial end %v; want 3 and %v", got.Seats, got.TrialEnd, trialEnds)
		}

		expect(t, a.stripeEvent("evt_1", "checkout.session.completed", a.clock.Now(), map[string]any{"id": a.lastCheckout(org),
			"object": "checkout.session", "mode": "subscription", "payment_status": "paid", "client_reference_id": org,
			"customer": "cus_perch", "subscription": "sub_perch", "metadata": map[string]any{"org_id": org, "price_id": "price_team"}}), 200)
		expect(t, a.stripeEvent("evt_2", "invoice.payment_failed", a.clock.Now().Add(time.Second),
			map[string]any{"id": "in_1", "object": "invoice", "customer": "cus_perch", "subscription": "sub_perch"}), 200)
		a.wantSubscription(o.owner, "team", perch.PlanPastDue)
		for _, plan := range []string{"team", "enterprise"} {
			res := expect(t, a.call("POST", "/api/v1/billing/checkout", o.owner.Access, map[string]string{"plan": plan}), 409)
			if res.ErrorCode() != perch.EPAYMENTPASTDUE || !strings.Contains(res.ErrorMessage(), "POST /api/v1/billing/portal") {
				t.Errorf("a checkout of %s while past due: %s", plan, res.Raw)
			}
		}
		expect(t, a.call("POST", "/api/v1/billing/portal", o.owner.Access, nil), 200)

		// Paid again, another plan is a change of the live subscription (in
		// the portal), not a second checkout beside it.
		expect(t, a.stripeEvent("evt_3", "invoice.paid", a.clock.Now().Add(2*time.Second),
			map[string]any{"id": "in_2", "object": "invoice", "customer": "cus_perch", "subscription": "sub_perch"}), 200)
		if res := expect(t, a.call("POST", "/api/v1/billing/checkout", o.owner.Access, map[string]string{"plan": "enterprise"}), 400); res.ErrorCode() != perch.EALREADYSUBSCRIBED {
			t.Errorf("a checkout beside the live subscription: %s", res.Raw)
		}
		// Canceled, a new checkout has no trial left to pass on.
		expect(t, a.stripeEvent("evt_4", "customer.subscription.deleted", a.clock.Now().Add(3*time.Second), map[string]any{"id": "sub_perch",
			"object": "subscription", "customer": "cus_perch", "status": "canceled", "cancel_at_period_end": false,
			"items": map[string]any{"data": []any{map[string]any{"price": map[string]any{"id": "price_team"}}}}}), 200)
		expect(t, a.call("POST", "/api/v1/billing/checkout", o.owner.Access, map[string]string{"plan": "enterprise"}), 200)
		if got := rec.last(t); !got.TrialEnd.IsZero() || got.Seats != 3 {
			t.Errorf("a former subscriber's checkout: %+v", got)
		}
	})
}

// TestTrialWillEndTellsTheOwners: Stripe's trial_will_end becomes one
// notification for each owner and admin, not the members, once however
// often it is delivered.
func TestTrialWillEndTellsTheOwners(t *testing.T) {
	t.Parallel()
	mock := testenv.StripeMock(t)
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, withBilling(billing.NewStripe("sk_test_perch", mock, stripePrices, nil)))
		o := newBillingOrg(a, a.live())
		org := o.owner.OrgID
		expect(t, a.call("POST", "/api/v1/billing/checkout", o.owner.Access, map[string]string{"plan": "team"}), 200)
		now := a.clock.Now()
		ends := now.Add(3 * 24 * time.Hour)
		expect(t, a.stripeEvent("evt_1", "checkout.session.completed", now, map[string]any{"id": a.lastCheckout(org),
			"object": "checkout.session", "mode": "subscription", "payment_status": "paid", "client_reference_id": org,
			"customer": "cus_perch", "subscription": "sub_perch", "metadata": map[string]any{"org_id": org, "price_id": "price_team"}}), 200)
		trialing := map[string]any{"id": "sub_perch", "object": "subscription", "customer": "cus_perch", "status": "trialing", "trial_end": ends.Unix(),
			"items": map[string]any{"data": []any{map[string]any{"price": map[string]any{"id": "price_team"}, "quantity": 3}}}}
		expect(t, a.stripeEvent("evt_2", "customer.subscription.trial_will_end", now, trialing), 200)
		a.wantSubscription(o.owner, "team", perch.PlanTrialing)
		owner, member := o.payments(a, "after trial_will_end")
		if len(owner) != 1 || owner[0] != "The trial ends in 3 days" || len(member) != 0 {
			t.Fatalf("the owner heard %q, the member %q", owner, member)
		}
		told := 0
		for _, n := range expect(t, a.call("GET", "/api/v1/notifications", o.admin.Access, nil), 200).List() {
			if n["title"] == "The trial ends in 3 days" && n["source"] == perch.SourcePaymentsA && n["tab"] == perch.TabPayments {
				told++
			}
		}
		if told != 1 {
			t.Errorf("the admin was told %d times", told)
		}
		if dup := expect(t, a.stripeEvent("evt_2", "customer.subscription.trial_will_end", now, trialing), 200); dup.Body["duplicate"] != true {
			t.Errorf("a redelivery: %s", dup.Raw)
		}
		if owner, _ := o.payments(a, "after the redelivery"); len(owner) != 0 {
			t.Errorf("a redelivery told the owner again: %q", owner)
		}
	})
}

// TestAnotherProvidersEventChangesNothing: an organisation billed through
// Stripe is Stripe's. A signed Paddle event naming it in custom_data, or
// completing a Paddle checkout it opened before, changes nothing: 200
// ignored (so Paddle stops retrying), logged as a warning and audited in
// the organisation's log as billing.event_refused.
func TestAnotherProvidersEventChangesNothing(t *testing.T) {
	t.Parallel()
	mock := testenv.StripeMock(t)
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, withBilling(billing.NewStripe("sk_test_perch", mock, stripePrices, nil)))
		o := newBillingOrg(a, a.live())
		org := o.owner.OrgID
		// An earlier Paddle checkout of the organisation's, never paid.
		if err := s.RecordCheckout(t.Context(), perch.BillingPaddle, "txn_01hv8wptq8987qeep44cyrewp9", org); err != nil {
			t.Fatal(err)
		}
		expect(t, a.call("POST", "/api/v1/billing/checkout", o.owner.Access, map[string]string{"plan": "team"}), 200)
		now := a.clock.Now()
		expect(t, a.stripeEvent("evt_1", "checkout.session.completed", now, map[string]any{"id": a.lastCheckout(org),
			"object": "checkout.session", "mode": "subscription", "payment_status": "paid", "client_reference_id": org,
			"customer": "cus_perch", "subscription": "sub_perch", "metadata": map[string]any{"org_id": org, "price_id": "price_team"}}), 200)
		a.wantSubscription(o.owner, "team", perch.PlanActive)
		before := a.subscription(o.owner)

		item := []any{map[string]any{"price": map[string]any{"id": "pri_enterprise"}, "quantity": 50}}
		for i, ev := range []struct {
			typ  string
			data map[string]any
		}{
			{"subscription.updated", map[string]any{"id": "sub_01hv8y5ehszzq0yv20ttx3166y", "status": "past_due", "customer_id": "ctm_01hv8x29kz0t586xy6zn1a62ny",
				"custom_data": map[string]any{"org_id": org}, "items": item}},
			{"transaction.completed", map[string]any{"id": "txn_01hv8wptq8987qeep44cyrewp9", "status": "completed", "customer_id": "ctm_01hv8x29kz0t586xy6zn1a62ny",
				"subscription_id": "sub_01hv8y5ehszzq0yv20ttx3166y", "items": item}},
		} {
			res := a.paddleEvent(fmt.Sprintf("evt_p%d", i), ev.typ, now.Add(time.Duration(i+1)*time.Second), ev.data)
			wantIgnored(t, res, ev.typ)
			if msg, _ := res.Body["ignored"].(string); !strings.Contains(msg, "billed through stripe") {
				t.Errorf("%s: ignored because %q", ev.typ, msg)
			}
			if after := a.subscription(o.owner); !sameJSON(after, before) {
				t.Fatalf("%s moved the subscription from %v to %v", ev.typ, before, after)
			}
		}
		entries, _, err := s.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditBillingRefused, OrgID: org, Page: perch.Page{Limit: 10}})
		if err != nil || len(entries) != 2 || entries[0].Actor.Type != perch.ActorProvider || entries[0].Actor.ID != perch.BillingPaddle ||
			entries[0].Changes["billed_through"] != perch.BillingStripe {
			t.Fatalf("refusals audited: %+v, %v", entries, err)
		}
		if logs := a.logs.String(); strings.Count(logs, "level=WARN msg=\"a payment event concerned an organisation billed through the other provider") != 2 {
			t.Errorf("the refusals were not logged as warnings:\n%s", logs)
		}
		if owner, _ := o.payments(a, "after Paddle's events"); len(owner) != 0 {
			t.Errorf("the owner was told %q", owner)
		}
	})
}

// TestSignatureTolerancePerProvider: a Stripe signature is good for 300
// seconds either way (stripe-go's tolerance), a Paddle one for 5 (Paddle's
// SDKs'); a second beyond is 400.
func TestSignatureTolerancePerProvider(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) {
		o.Billing.StripeWebhookSecret, o.Billing.PaddleWebhookSecret = stripeTestSecret, paddleTestSecret
	})
	stripeBody := fmt.Appendf(nil, `{"id":"evt_1","object":"event","type":"customer.created","created":%d,"data":{"object":{"id":"cus_1","object":"customer"}}}`,
		a.clock.Now().Unix())
	paddleBody := fmt.Appendf(nil, `{"event_id":"evt_1","event_type":"address.created","occurred_at":%q,"notification_id":"ntf_1","data":{"id":"add_1"}}`,
		a.clock.Now().Format(time.RFC3339))
	for _, c := range []struct {
		provider string
		skew     time.Duration
		status   int
	}{
		{"stripe", -300 * time.Second, 200}, {"stripe", -301 * time.Second, 400},
		{"stripe", 300 * time.Second, 200}, {"stripe", 301 * time.Second, 400},
		{"paddle", -5 * time.Second, 200}, {"paddle", -6 * time.Second, 400},
		{"paddle", 5 * time.Second, 200}, {"paddle", 6 * time.Second, 400},
	} {
		signedAt := a.clock.Now().Add(c.skew)
		var res *response
		if c.provider == "stripe" {
			res = a.signedStripe(stripeBody, stripeTestSecret, signedAt)
		} else {
			res = a.call("POST", "/webhooks/payments-b", "", string(paddleBody), "Paddle-Signature", webhooks.SignPaddle(paddleTestSecret, paddleBody, signedAt))
		}
		if expect(t, res, c.status); c.status == 400 && !strings.Contains(res.ErrorMessage(), "stale") {
			t.Errorf("%s signed %s from now: %s", c.provider, c.skew, res.Raw)
		}
	}
}
