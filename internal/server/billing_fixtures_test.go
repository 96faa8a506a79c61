package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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

// paymentFixture is a payload of ../shared/fixtures/webhooks/{stripe,paddle}
// as its provider delivers it: data_only files wrapped in the envelope.
func paymentFixture(t *testing.T, provider, file string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.FixturesDir(t), "webhooks", provider, file))
	if err != nil {
		t.Fatal(err)
	}
	typ, dataOnly := strings.CutSuffix(strings.TrimSuffix(file, ".json"), ".data_only")
	if !dataOnly {
		return raw
	}
	var data json.RawMessage = raw
	var env any
	switch provider {
	case "stripe":
		env = map[string]any{"id": "evt_fixture_" + typ, "object": "event", "type": typ, "created": time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), "data": data}
	default:
		env = map[string]any{"event_id": "evt_fixture_" + typ, "event_type": typ, "occurred_at": "2024-01-01T00:00:00Z", "notification_id": "ntf_fixture", "data": data}
	}
	body, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestFixturePayments delivers every payment payload of the shared
// fixtures, signed, to an organisation that the provider's customer
// belongs to: each changes the subscription as it says, or is ignored;
// none is an error.
func TestFixturePayments(t *testing.T) {
	t.Parallel()
	dir := testenv.FixturesDir(t)
	for _, provider := range []string{"stripe", "paddle"} {
		files, err := filepath.Glob(filepath.Join(dir, "webhooks", provider, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s fixtures: %v", provider, err)
		}
		for _, path := range files {
			file := filepath.Base(path)
			if strings.Contains(file, "signed_vector") {
				continue // a signature test vector (internal/billing/webhooks checks it)
			}
			// Each in a database of its own: fixtures share customer ids.
			t.Run(provider+"/"+file, func(t *testing.T) {
				t.Parallel()
				storetest.Run(t, func(t *testing.T, s *store.Store) {
					fake := paddlefake.Start(t, "pdl_test_key")
					a := newAPI(t, s, withBilling(billing.NewPaddle("pdl_test_key", fake.URL(), paddlePrices, nil)))
					deliverFixture(t, a, provider, file)
				})
			})
		}
	}
}

// deliverFixture links an organisation to the fixture's customer and
// subscription (by a checkout of its own) and delivers the fixture, signed; the subscription must then say what the
// event says.
func deliverFixture(t *testing.T, a *api, provider, file string) {
	body := paymentFixture(t, provider, file)
	parse := map[string]func([]byte) (perch.BillingEvent, bool, error){"stripe": webhooks.StripeEvent, "paddle": webhooks.PaddleEvent}[provider]
	ev, ok, err := parse(body)
	if err != nil {
		t.Fatalf("the fixture does not read: %v", err)
	}
	owner := a.register("Olive Owner")
	if ok {
		// The organisation completes a checkout of its own that made the
		// fixture's subscription: that binds it, as only that can.
		if err := a.store.RecordCheckout(t.Context(), ev.Provider, "checkout_link", owner.OrgID); err != nil {
			t.Fatal(err)
		}
		link := perch.BillingEvent{Provider: ev.Provider, ID: "link", OccurredAt: time.Unix(0, 0), CheckoutID: "checkout_link",
			CustomerID: ev.CustomerID, SubscriptionID: ev.SubscriptionID, Status: perch.PlanActive}
		if out, err := a.store.ApplyBillingEvent(t.Context(), link, ""); err != nil || out.OrgID != owner.OrgID {
			t.Fatalf("linking the fixture's subscription: %+v, %v", out, err)
		}
	}
	var res *response
	if provider == "stripe" {
		res = a.signedStripe(body, stripeTestSecret, a.clock.Now())
	} else {
		res = a.call("POST", "/webhooks/payments-b", "", string(body), "Paddle-Signature", webhooks.SignPaddle(paddleTestSecret, body, a.clock.Now()))
	}
	expect(t, res, 200)
	sub := a.subscription(owner)
	switch {
	case !ok:
		if res.Body["ignored"] == nil {
			t.Errorf("an event Perch does not act on was not ignored: %s", res.Raw)
		}
	case ev.Status != "" && sub["status"] != ev.Status:
		t.Errorf("status %v after %s, want %s: %s", sub["status"], ev.Type, ev.Status, res.Raw)
	case ev.Status == "" && sub["status"] != perch.PlanActive:
		t.Errorf("status %v after %s, which sets none", sub["status"], ev.Type)
	}
}
