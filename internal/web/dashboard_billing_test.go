package web_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/billing"
	"github.com/perch-dev/perch/internal/billing/paddlefake"
	"github.com/perch-dev/perch/internal/samltest"
	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestDashboardBilling: the billing page shows the plan, status, trial
// days and seats; an owner goes on to the provider's checkout and portal
// (through a page that follows the link); the pages warn of a trial ending
// within a week and of a failed payment.
func TestDashboardBilling(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		fake := paddlefake.Start(t, "pdl_test_key", "pri_team")
		ln := listen(t)
		base := "http://" + ln.Addr().String()
		e := newSiteOn(t, ln, s, func(o *server.Options) {
			o.BaseURL = base
			o.Billing.Provider = billing.NewPaddle("pdl_test_key", fake.URL(), billing.Prices{"team": "pri_team"}, nil)
			o.Billing.PaddleWebhookSecret = "pdl_ntfset_test"
			o.Billing.PricePlans = map[string]string{"pri_team": "team"}
		})
		e.clock.Advance(time.Since(e.clock.Now())) // the browser's cookie jar keeps the real time
		owner := samltest.NewBrowser(t)
		p := owner.Submit(samltest.Form{Action: base + "/signup", Values: url.Values{"name": {"Olive Owner"}, "email": {"olive@example.com"}, "password": {goodPassword}}})
		if p.Status != 303 {
			t.Fatalf("sign-up: %d %.300s", p.Status, p.Body)
		}
		page := owner.Get(base + "/org/billing")
		has(t, page, 200, "<h1>Billing</h1>", `id="billing-status">trialing`, `id="trial-left">14 days left`, `id="seats">1 of 25 used`, `id="checkout-team"`)
		if strings.Contains(page.Body, `id="seats-billed"`) || strings.Contains(page.Body, `id="past-due"`) {
			t.Error("Perch's own trial shows seats billed, or a payment past due")
		}
		if strings.Contains(page.Body, `id="billing-banner"`) {
			t.Error("a banner two weeks before the trial ends")
		}
		if p := owner.Get(base + "/plans"); p.Status != 301 || p.Location != "/org/billing" {
			t.Errorf("/plans: %d %q", p.Status, p.Location)
		}

		// Checkout: the page hands the browser on to Paddle's checkout.
		went := owner.Submit(samltest.Form{Action: base + "/org/billing/checkout", Values: url.Values{"plan": {"team"}}})
		has(t, went, 200, `id="billing-go"`, "data-follow", "_ptxn=")
		if len(fake.Transactions()) != 1 {
			t.Fatalf("Paddle got %d transactions", len(fake.Transactions()))
		}
		// The portal before any payment: refused with the API's reason.
		has(t, owner.Submit(samltest.Form{Action: base + "/org/billing/portal"}), 409, "no subscription at the payment provider yet")

		// Within a week of the end, every page warns; a failed payment too.
		olive, _, err := s.UserCredentials(t.Context(), "olive@example.com")
		if err != nil {
			t.Fatal(err)
		}
		ends := e.clock.Now().Add(6*24*time.Hour - time.Hour)
		if _, _, err := s.UpdateOrgAsAdmin(t.Context(), olive.OrgID, perch.AdminOrgUpdate{SetTrialEndsAt: true, TrialEndsAt: &ends}); err != nil {
			t.Fatal(err)
		}
		has(t, owner.Get(base+"/notifications"), 200, `id="billing-banner"`, "The trial ends in 6 days")
		// The checkout's transaction completes (binding the subscription to
		// the organisation), with a failed payment.
		if out, err := s.ApplyBillingEvent(t.Context(), perch.BillingEvent{Provider: perch.BillingPaddle, ID: "evt_1", OccurredAt: e.clock.Now(),
			OrgID: olive.OrgID, CheckoutID: fake.Transactions()[0].ID, CustomerID: "ctm_01hv8x29kz0t586xy6zn1a62ny",
			SubscriptionID: "sub_01hv8y5ehszzq0yv20ttx3166y", Status: perch.PlanPastDue, Seats: new(1)}, "team"); err != nil || out.OrgID != olive.OrgID {
			t.Fatalf("the failed payment: %+v, %v", out, err)
		}
		has(t, owner.Get(base+"/org"), 200, `id="billing-banner"`, "The last payment failed")
		// Past due: the seats billed, the portal, and no checkout (the API
		// refuses one until the payment is settled).
		page = owner.Get(base + "/org/billing")
		has(t, page, 200, `id="portal"`, `id="seats-billed">1 seat:`, `id="past-due"`)
		if strings.Contains(page.Body, `id="checkout-`) {
			t.Error("the page offers a checkout while a payment is past due")
		}
		has(t, owner.Submit(samltest.Form{Action: base + "/org/billing/portal"}), 200, `id="billing-go"`, "the billing portal")
		// Paid: the plan changes in the portal, never by a second checkout
		// beside the live subscription.
		if _, err := s.ApplyBillingEvent(t.Context(), perch.BillingEvent{Provider: perch.BillingPaddle, ID: "evt_2", OccurredAt: e.clock.Now().Add(time.Second),
			OrgID: olive.OrgID, CustomerID: "ctm_01hv8x29kz0t586xy6zn1a62ny", SubscriptionID: "sub_01hv8y5ehszzq0yv20ttx3166y",
			Status: perch.PlanActive, Seats: new(1)}, "team"); err != nil {
			t.Fatalf("the payment: %v", err)
		}
		page = owner.Get(base + "/org/billing")
		has(t, page, 200, `id="portal"`, `id="change-plan"`)
		if strings.Contains(page.Body, `id="checkout-`) {
			t.Error("the page offers a checkout beside a live subscription")
		}
	})
}

// TestDashboardBillingOff: without a provider the page says that a
// platform admin sets plans, offers no checkout, and no banner shows.
func TestDashboardBillingOff(t *testing.T) {
	t.Parallel()
	ln := listen(t)
	base := "http://" + ln.Addr().String()
	s := storetest.New(t, store.SQLite)
	e := newSiteOn(t, ln, s, func(o *server.Options) { o.BaseURL = base })
	e.clock.Advance(time.Since(e.clock.Now())) // the browser's cookie jar keeps the real time
	b := samltest.NewBrowser(t)
	b.Submit(samltest.Form{Action: base + "/signup", Values: url.Values{"name": {"Olive Owner"}, "email": {"olive@example.com"}, "password": {goodPassword}}})
	olive, _, err := s.UserCredentials(t.Context(), "olive@example.com")
	if err != nil {
		t.Fatal(err)
	}
	ends := e.clock.Now().Add(24 * time.Hour)
	if _, _, err := s.UpdateOrgAsAdmin(t.Context(), olive.OrgID, perch.AdminOrgUpdate{SetTrialEndsAt: true, TrialEndsAt: &ends}); err != nil {
		t.Fatal(err)
	}
	p := b.Get(base + "/org/billing")
	has(t, p, 200, `id="billing-off"`)
	if strings.Contains(p.Body, `id="checkout-team"`) || strings.Contains(p.Body, `id="billing-banner"`) {
		t.Errorf("billing off offers checkout or warns: %.2000s", p.Body)
	}
}
