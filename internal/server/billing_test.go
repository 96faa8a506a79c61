package server

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/billing"
	"github.com/perch-dev/perch/internal/billing/paddlefake"
	"github.com/perch-dev/perch/internal/billing/webhooks"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

const (
	stripeTestSecret = "whsec_perch_test_secret"
	paddleTestSecret = "pdl_ntfset_perch_test_secret"
)

// testPrices are the plans' prices at both providers in the tests.
var (
	stripePrices = billing.Prices{"solo": "price_solo", "team": "price_team", "enterprise": "price_enterprise"}
	paddlePrices = billing.Prices{"solo": "pri_solo", "team": "pri_team", "enterprise": "pri_enterprise"}
)

// withBilling turns billing on with provider, both receivers' secrets
// and every test price.
func withBilling(provider billing.Provider) func(*Options) {
	return func(o *Options) {
		o.Billing.Provider = provider
		o.Billing.StripeWebhookSecret, o.Billing.PaddleWebhookSecret = stripeTestSecret, paddleTestSecret
		o.Billing.PricePlans = map[string]string{}
		for _, prices := range []billing.Prices{stripePrices, paddlePrices} {
			for plan, price := range prices {
				o.Billing.PricePlans[price] = plan
			}
		}
	}
}

// stripeEvent delivers a Stripe event of type typ about object, signed by
// stripe-go's own test helper at the server's time (plus skew), and
// answers the receiver's response.
func (a *api) stripeEvent(id, typ string, at time.Time, object map[string]any) *response {
	a.t.Helper()
	body, err := json.Marshal(map[string]any{"id": id, "object": "event", "type": typ, "created": at.Unix(),
		"api_version": "2025-03-31.basil", "data": map[string]any{"object": object}})
	if err != nil {
		a.t.Fatal(err)
	}
	return a.signedStripe(body, stripeTestSecret, a.clock.Now())
}

// signedStripe posts body to the Stripe receiver signed with secret at ts.
func (a *api) signedStripe(body []byte, secret string, ts time.Time) *response {
	a.t.Helper()
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: ts})
	return a.call("POST", "/webhooks/payments-a", "", string(signed.Payload), "Stripe-Signature", signed.Header)
}

// paddleEvent delivers a Paddle notification of type typ about data,
// signed at the server's time.
func (a *api) paddleEvent(id, typ string, at time.Time, data map[string]any) *response {
	a.t.Helper()
	body, err := json.Marshal(map[string]any{"event_id": id, "event_type": typ, "occurred_at": at.UTC().Format(time.RFC3339Nano),
		"notification_id": "ntf_" + id, "data": data})
	if err != nil {
		a.t.Fatal(err)
	}
	return a.call("POST", "/webhooks/payments-b", "", string(body), "Paddle-Signature", webhooks.SignPaddle(paddleTestSecret, body, a.clock.Now()))
}

// lastCheckout is the provider's id of the checkout orgID opened last, as
// its audit entry says.
func (a *api) lastCheckout(orgID string) string {
	a.t.Helper()
	entries, _, err := a.store.AuditLog(a.t.Context(), perch.AuditFilter{Action: perch.AuditCheckoutStarted, OrgID: orgID, Page: perch.Page{Limit: 1}})
	if err != nil || len(entries) == 0 {
		a.t.Fatalf("no checkout of %s: %v", orgID, err)
	}
	id, _ := entries[0].Changes["checkout_id"].(string)
	if id == "" {
		a.t.Fatalf("the checkout's audit entry has no id: %v", entries[0].Changes)
	}
	return id
}

// subscription reads the organisation's subscription as acc sees it.
func (a *api) subscription(acc *account) map[string]any {
	a.t.Helper()
	sub, _ := expect(a.t, a.call("GET", "/api/v1/org", acc.Access, nil), 200).Data()["subscription"].(map[string]any)
	if sub == nil {
		a.t.Fatal("GET /org has no subscription")
	}
	return sub
}

// wantSubscription fails unless the subscription has plan and status.
func (a *api) wantSubscription(acc *account, plan, status string) {
	a.t.Helper()
	if sub := a.subscription(acc); sub["plan"] != plan || sub["status"] != status {
		a.t.Fatalf("subscription %v, want plan %s, status %s", sub, plan, status)
	}
}

// billingOrg is an organisation with an owner, an admin and a member, the
// owner's and the member's menu bars connected, and an organisation-wide
// webhook token to post sentinels with.
type billingOrg struct {
	owner, admin, member *account
	ownerWS, memberWS    *wsConn
	hook                 string
}

func newBillingOrg(a *api, ts *httptest.Server) *billingOrg {
	o := &billingOrg{owner: a.register("Olive Owner")}
	o.admin = a.invite(o.owner, "Adam Admin", "admin")
	o.member = a.invite(o.owner, "Mia Member", "member")
	o.hook = a.webhookToken(o.owner, "org", "")
	// API tokens, not sign-ins: tests move the clock by days.
	for _, acc := range []*account{o.owner, o.admin, o.member} {
		a.apiToken(acc, "menu bar")
		acc.Access = acc.Token
	}
	o.ownerWS, o.memberWS = dial(a.t, ts, o.owner.Access, ""), dial(a.t, ts, o.member.Access, "")
	o.ownerWS.ready()
	o.memberWS.ready()
	return o
}

// payments are the titles of the Payments notifications each socket got
// before a sentinel posted to the whole organisation now.
func (o *billingOrg) payments(a *api, sentinel string) (owner, member []string) {
	a.t.Helper()
	a.post(o.hook, sentinel)
	return o.ownerWS.until(sentinel), o.memberWS.until(sentinel)
}

// TestStripeBilling: checkout through Stripe (stripe-mock), the events of
// a subscription's life applied once and in order, the owners told of a
// failed payment while plain members are not, and signatures enforced.
func TestStripeBilling(t *testing.T) {
	t.Parallel()
	mock := testenv.StripeMock(t)
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, withBilling(billing.NewStripe("sk_test_perch", mock, stripePrices, nil)))
		o := newBillingOrg(a, a.live())
		org := o.owner.OrgID
		a.wantSubscription(o.owner, "team", perch.PlanTrialing)

		expect(t, a.call("POST", "/api/v1/billing/checkout", o.member.Access, map[string]string{"plan": "team"}), 403)
		bad := expect(t, a.call("POST", "/api/v1/billing/checkout", o.owner.Access, map[string]string{"plan": "platinum"}), 422)
		if bad.Fields()["plan"] == nil {
			t.Errorf("an unknown plan: %s", bad.Raw)
		}
		out := expect(t, a.call("POST", "/api/v1/billing/checkout", o.admin.Access, map[string]string{"plan": "team"}), 200).Data()
		if u, _ := out["checkout_url"].(string); !strings.HasPrefix(u, "https://") || out["provider"] != perch.BillingStripe {
			t.Fatalf("checkout: %v", out)
		}

		now := a.clock.Now()
		session := map[string]any{"id": a.lastCheckout(org), "object": "checkout.session", "mode": "subscription", "payment_status": "paid",
			"client_reference_id": org, "customer": "cus_perch", "subscription": "sub_perch",
			"metadata": map[string]any{"org_id": org, "plan": "team", "price_id": "price_team"}}
		expect(t, a.stripeEvent("evt_1", "checkout.session.completed", now, session), 200)
		a.wantSubscription(o.owner, "team", perch.PlanActive)
		if sub := a.subscription(o.owner); sub["provider"] != perch.BillingStripe {
			t.Errorf("provider %v", sub["provider"])
		}
		again := expect(t, a.call("POST", "/api/v1/billing/checkout", o.owner.Access, map[string]string{"plan": "team"}), 400)
		if again.ErrorCode() != perch.EALREADYSUBSCRIBED {
			t.Errorf("a second checkout of the plan: %s", again.Raw)
		}
		// Another plan is a change of the live subscription, in the portal,
		// not a second subscription beside it.
		other := expect(t, a.call("POST", "/api/v1/billing/checkout", o.owner.Access, map[string]string{"plan": "enterprise"}), 400)
		if other.ErrorCode() != perch.EALREADYSUBSCRIBED || !strings.Contains(other.ErrorMessage(), "billing portal") {
			t.Errorf("a checkout of another plan beside a live subscription: %s", other.Raw)
		}
		portal := expect(t, a.call("POST", "/api/v1/billing/portal", o.owner.Access, nil), 200).Data()
		if u, _ := portal["portal_url"].(string); !strings.HasPrefix(u, "https://") {
			t.Errorf("portal: %v", portal)
		}

		invoice := map[string]any{"id": "in_1", "object": "invoice", "customer": "cus_perch", "subscription": "sub_perch"}
		expect(t, a.stripeEvent("evt_2", "invoice.payment_failed", now.Add(time.Second), invoice), 200)
		a.wantSubscription(o.owner, "team", perch.PlanPastDue)
		owner, member := o.payments(a, "after the failed payment")
		if len(owner) != 1 || owner[0] != "A payment failed" || len(member) != 0 {
			t.Fatalf("the owner's menu bar got %q, the member's %q", owner, member)
		}
		told := false
		for _, n := range expect(t, a.call("GET", "/api/v1/notifications", o.admin.Access, nil), 200).List() {
			told = told || n["title"] == "A payment failed" && n["source"] == perch.SourcePaymentsA
		}
		if !told {
			t.Error("the admin has no Payments notification from payments-a")
		}

		// The same event again changes nothing and tells nobody again.
		if dup := expect(t, a.stripeEvent("evt_2", "invoice.payment_failed", now.Add(time.Second), invoice), 200); dup.Body["duplicate"] != true {
			t.Errorf("a redelivery: %s", dup.Raw)
		}
		if owner, _ := o.payments(a, "after the redelivery"); len(owner) != 0 {
			t.Errorf("a redelivery told the owner again: %q", owner)
		}

		deleted := map[string]any{"id": "sub_perch", "object": "subscription", "customer": "cus_perch", "status": "canceled",
			"cancel_at_period_end": false, "items": map[string]any{"data": []any{map[string]any{"price": map[string]any{"id": "price_team"}}}}}
		expect(t, a.stripeEvent("evt_3", "customer.subscription.deleted", now.Add(2*time.Second), deleted), 200)
		a.wantSubscription(o.owner, "team", perch.PlanCanceled)
		if owner, _ := o.payments(a, "after the cancellation"); len(owner) != 1 || owner[0] != "The subscription was canceled" {
			t.Errorf("the owner heard %q of the cancellation", owner)
		}

		// An older event after a newer one changes nothing.
		updated := map[string]any{"id": "sub_perch", "object": "subscription", "customer": "cus_perch", "status": "active",
			"items": map[string]any{"data": []any{map[string]any{"price": map[string]any{"id": "price_enterprise"}}}}}
		if stale := expect(t, a.stripeEvent("evt_4", "customer.subscription.updated", now.Add(time.Second), updated), 200); stale.Body["ignored"] == nil {
			t.Errorf("an older event: %s", stale.Raw)
		}
		a.wantSubscription(o.owner, "team", perch.PlanCanceled)

		// Signatures: wrong secret, none, stale, or a body changed after
		// signing: 400, and nothing changes.
		body, _ := json.Marshal(map[string]any{"id": "evt_5", "object": "event", "type": "customer.subscription.updated", "created": now.Add(3 * time.Second).Unix(),
			"data": map[string]any{"object": updated}})
		expect(t, a.signedStripe(body, "whsec_another", a.clock.Now()), 400)
		expect(t, a.signedStripe(body, stripeTestSecret, a.clock.Now().Add(-6*time.Minute)), 400)
		expect(t, a.call("POST", "/webhooks/stripe", "", string(body)), 400)
		signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: stripeTestSecret, Timestamp: a.clock.Now()})
		expect(t, a.call("POST", "/webhooks/stripe", "", strings.Replace(string(body), "active", "trialing", 1), "Stripe-Signature", signed.Header), 400)
		a.wantSubscription(o.owner, "team", perch.PlanCanceled)
		// The same body signed right, at the real name's path, applies.
		expect(t, a.call("POST", "/webhooks/stripe", "", string(body), "Stripe-Signature", signed.Header), 200)
		a.wantSubscription(o.owner, "enterprise", perch.PlanActive)

		entries, _, err := s.AuditLog(t.Context(), perch.AuditFilter{Action: "billing.", OrgID: org, Page: perch.Page{Limit: 50}})
		if err != nil || len(entries) != 5 { // the checkout; completed, failed, deleted, and the update signed right
			t.Errorf("%d billing audit entries, %v", len(entries), err)
		}
	})
}

// TestPaddleBilling: checkout through Paddle (the API fake), and its
// subscription events applied to the organisation named in custom_data.
func TestPaddleBilling(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		fake := paddlefake.Start(t, "pdl_test_key", "pri_solo", "pri_team", "pri_enterprise")
		a := newAPI(t, s, withBilling(billing.NewPaddle("pdl_test_key", fake.URL(), paddlePrices, nil)))
		o := newBillingOrg(a, a.live())
		org := o.owner.OrgID

		out := expect(t, a.call("POST", "/api/v1/billing/checkout", o.owner.Access, map[string]string{"plan": "enterprise"}), 200).Data()
		if u, _ := out["checkout_url"].(string); u == "" || out["provider"] != perch.BillingPaddle {
			t.Fatalf("checkout: %v", out)
		}
		if txs := fake.Transactions(); len(txs) != 1 || !strings.Contains(fmt.Sprint(txs[0]), org) {
			t.Fatalf("Paddle was sent %+v", txs)
		}

		now := a.clock.Now()
		if id := a.lastCheckout(org); id != fake.Transactions()[0].ID {
			t.Fatalf("the checkout recorded is %q, Paddle's transaction %q", id, fake.Transactions()[0].ID)
		}
		sub := map[string]any{"id": "sub_01hv8y5ehszzq0yv20ttx3166y", "status": "active", "customer_id": "ctm_01hv8x29kz0t586xy6zn1a62ny", "custom_data": map[string]any{"org_id": org},
			"transaction_id":         fake.Transactions()[0].ID,
			"items":                  []any{map[string]any{"price": map[string]any{"id": "pri_enterprise"}, "quantity": 1}},
			"current_billing_period": map[string]any{"starts_at": now.Format(time.RFC3339), "ends_at": now.AddDate(0, 1, 0).Format(time.RFC3339)}}
		expect(t, a.paddleEvent("evt_01", "subscription.created", now, sub), 200)
		a.wantSubscription(o.owner, "enterprise", perch.PlanActive)
		expect(t, a.call("POST", "/api/v1/billing/checkout", o.owner.Access, map[string]string{"plan": "enterprise"}), 400)
		expect(t, a.call("POST", "/api/v1/billing/portal", o.admin.Access, nil), 200)

		failed := map[string]any{"id": "txn_01hv8wptq8987qeep44cyrewp9", "status": "past_due", "customer_id": "ctm_01hv8x29kz0t586xy6zn1a62ny", "subscription_id": "sub_01hv8y5ehszzq0yv20ttx3166y",
			"items": []any{map[string]any{"price": map[string]any{"id": "pri_enterprise"}, "quantity": 1}}}
		expect(t, a.paddleEvent("evt_02", "transaction.payment_failed", now.Add(time.Second), failed), 200)
		a.wantSubscription(o.owner, "enterprise", perch.PlanPastDue)
		if owner, member := o.payments(a, "after the failed payment"); len(owner) != 1 || len(member) != 0 {
			t.Errorf("the owner's menu bar got %q, the member's %q", owner, member)
		}

		sub["status"] = "canceled"
		expect(t, a.paddleEvent("evt_03", "subscription.canceled", now.Add(2*time.Second), sub), 200)
		a.wantSubscription(o.owner, "enterprise", perch.PlanCanceled)
		expect(t, a.call("POST", "/webhooks/paddle", "", `{"event_id":"evt_04"}`, "Paddle-Signature", "ts=1;h1=00"), 400)
		a.wantSubscription(o.owner, "enterprise", perch.PlanCanceled)
	})
}

// TestBillingOff: with no provider, checkout and the portal are 503
// billing_unavailable; receivers without their secret take nothing.
func TestBillingOff(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	owner := a.register("Olive Owner")
	a.apiToken(owner, "outlives the clock")
	owner.Access = owner.Token // the test moves the clock past sign-ins
	for _, path := range []string{"/api/v1/billing/checkout", "/api/v1/billing/portal"} {
		if res := expect(t, a.call("POST", path, owner.Access, map[string]string{"plan": "team"}), 503); res.ErrorCode() != perch.EBILLINGUNAVAILABLE {
			t.Errorf("%s: %s", path, res.Raw)
		}
	}
	for _, path := range []string{"/webhooks/payments-a", "/webhooks/stripe", "/webhooks/payments-b", "/webhooks/paddle"} {
		expect(t, a.call("POST", path, "", `{"id":"evt_1","type":"invoice.paid"}`), 503)
	}
	// Trials never end with billing off.
	a.clock.Advance(30 * 24 * time.Hour)
	if err := a.srv.BillingJobs(t.Context()); err != nil {
		t.Fatal(err)
	}
	a.wantSubscription(owner, "team", perch.PlanTrialing)
}

// TestTrialsEnd: with billing on, the owners and admins hear three days
// before a trial ends, once; a trial that ends unpaid moves the
// organisation to solo with status none.
func TestTrialsEnd(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		fake := paddlefake.Start(t, "pdl_test_key")
		a := newAPI(t, s, withBilling(billing.NewPaddle("pdl_test_key", fake.URL(), paddlePrices, nil)))
		o := newBillingOrg(a, a.live())
		a.clock.Advance((perch.TrialDays - 2) * 24 * time.Hour)
		for range 2 {
			if err := a.srv.BillingJobs(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if owner, member := o.payments(a, "two days before the end"); len(owner) != 1 || owner[0] != "The trial ends soon" || len(member) != 0 {
			t.Fatalf("the owner heard %q, the member %q", owner, member)
		}
		a.wantSubscription(o.owner, "team", perch.PlanTrialing)

		a.clock.Advance(3 * 24 * time.Hour)
		if err := a.srv.BillingJobs(t.Context()); err != nil {
			t.Fatal(err)
		}
		a.wantSubscription(o.owner, "solo", perch.PlanNone)
		entries, _, err := s.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditTrialExpired, Page: perch.Page{Limit: 5}})
		if err != nil || len(entries) != 1 || entries[0].Actor.Type != perch.ActorSystem {
			t.Errorf("trial expiry entries %+v, %v", entries, err)
		}
		// A downgrade removes nobody but stops invitations.
		if org := expect(t, a.call("GET", "/api/v1/org", o.owner.Access, nil), 200).Data(); org["seat_count"] != 3.0 {
			t.Errorf("after the downgrade: %v", org)
		}
		expect(t, a.call("POST", "/api/v1/org/invitations", o.owner.Access, map[string]string{"email": "new@example.com"}), 409)
	})
}

// TestPaymentReceiversAreLimitedPerAddress: the payment receivers count
// every delivery per client address, in a bucket of their own shared by
// both providers' paths: past the allowance an address is answered 429
// with the rate-limit headers and Retry-After (the providers retry it),
// while other addresses, and the address's other buckets, go on.
func TestPaymentReceiversAreLimitedPerAddress(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) {
		o.Billing.StripeWebhookSecret, o.Billing.PaddleWebhookSecret = stripeTestSecret, paddleTestSecret
		o.Billing.PaymentLimit = perch.Limit{Count: 3, Period: time.Minute}
	})
	const flood, provider = "203.0.113.66:4000", "198.51.100.7:443"
	stripe := func(id, remote string) *response {
		body, _ := json.Marshal(map[string]any{"id": id, "object": "event", "type": "customer.created", "created": a.clock.Now().Unix(),
			"data": map[string]any{"object": map[string]any{"id": "cus_1", "object": "customer"}}})
		signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: stripeTestSecret, Timestamp: a.clock.Now()})
		return a.call("POST", "/webhooks/payments-a", "", string(body), "Stripe-Signature", signed.Header, "RemoteAddr", remote)
	}

	// Three from one address, signed or not, on any of the four paths.
	for i, res := range []*response{
		expect(t, stripe("evt_1", flood), 200),
		expect(t, a.call("POST", "/webhooks/stripe", "", `{"id":"evt_x"}`, "Stripe-Signature", "t=1,v1=00", "RemoteAddr", flood), 400),
		expect(t, a.call("POST", "/webhooks/paddle", "", `{"event_id":"evt_x"}`, "Paddle-Signature", "ts=1;h1=00", "RemoteAddr", flood), 400),
	} {
		if res.Header.Get("X-RateLimit-Limit") != "3" || res.Header.Get("X-RateLimit-Remaining") != fmt.Sprint(2-i) || res.Header.Get("X-RateLimit-Reset") == "" {
			t.Fatalf("answer %d: headers %v", i, res.Header)
		}
	}
	for _, path := range []string{"/webhooks/payments-a", "/webhooks/stripe", "/webhooks/payments-b", "/webhooks/paddle"} {
		res := expect(t, a.call("POST", path, "", `{}`, "RemoteAddr", flood), 429)
		if res.Header.Get("Retry-After") != "20" || res.Header.Get("X-RateLimit-Remaining") != "0" || res.Header.Get("X-RateLimit-Limit") != "3" ||
			res.Header.Get("X-RateLimit-Reset") == "" {
			t.Fatalf("%s over the limit: headers %v", path, res.Header)
		}
	}
	if res := expect(t, stripe("evt_2", flood), 429); res.Body["received"] != nil {
		t.Fatalf("a limited delivery was taken: %s", res.Raw)
	}

	// Another address is not held up, nor are the address's other buckets.
	expect(t, stripe("evt_2", provider), 200)
	expect(t, a.call("POST", "/webhooks/inbound", "", map[string]string{"title": "still here"}, "RemoteAddr", flood), 200)
	expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": "x@example.com", "password": "wrong password"}, "RemoteAddr", flood), 401)

	// The allowance comes back.
	a.clock.Advance(time.Minute)
	expect(t, stripe("evt_3", flood), 200)
}
