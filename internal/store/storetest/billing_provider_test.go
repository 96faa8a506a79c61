package storetest_test

import (
	"context"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestOneProviderPerOrganisation: while an organisation's subscription at
// one provider is live, an event of the other provider about it (naming it
// in its metadata, or completing a checkout it opened there) is Ignored
// with OtherProvider and changes nothing; once that subscription is
// canceled, the other provider's checkout binds it.
func TestOneProviderPerOrganisation(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		org := ada.OrgID
		ev := checkoutEvent(t, s, org, "cs_1", "evt_1", clock.Now())
		ev.CustomerID, ev.SubscriptionID, ev.Status = "cus_1", "sub_1", perch.PlanActive
		mustApply(t, s, ev, "team")
		before := mustSubscription(t, s, org)

		if err := s.RecordCheckout(ctx, perch.BillingPaddle, "txn_01", org); err != nil {
			t.Fatal(err)
		}
		for _, ev := range []perch.BillingEvent{
			{Provider: perch.BillingPaddle, ID: "evt_p1", Type: "subscription.updated", OccurredAt: clock.Now(), OrgID: org,
				SubscriptionID: "sub_01paddle", CustomerID: "ctm_01paddle", Status: perch.PlanPastDue},
			{Provider: perch.BillingPaddle, ID: "evt_p2", Type: "transaction.completed", OccurredAt: clock.Now(), CheckoutID: "txn_01",
				SubscriptionID: "sub_01paddle", CustomerID: "ctm_01paddle", Status: perch.PlanActive},
		} {
			out := mustApply(t, s, ev, "enterprise")
			if out.OrgID != "" || out.Ignored == "" || out.Bound != org || out.OtherProvider != perch.BillingStripe {
				t.Fatalf("%s: outcome %+v, want it ignored as the other provider's", ev.ID, out)
			}
			wantSubscription(t, ev.ID, mustSubscription(t, s, org), before)
		}

		// Canceled at Stripe, the organisation may move to Paddle.
		canceled := stripeEvent("evt_2", clock.Now())
		canceled.SubscriptionID, canceled.Status = "sub_1", perch.PlanCanceled
		mustApply(t, s, canceled, "")
		if err := s.RecordCheckout(ctx, perch.BillingPaddle, "txn_02", org); err != nil {
			t.Fatal(err)
		}
		moved := perch.BillingEvent{Provider: perch.BillingPaddle, ID: "evt_p3", Type: "transaction.completed", OccurredAt: clock.Now(),
			CheckoutID: "txn_02", SubscriptionID: "sub_01paddle", CustomerID: "ctm_01paddle", Status: perch.PlanActive}
		if out := mustApply(t, s, moved, "enterprise"); out.OrgID != org || out.Ignored != "" {
			t.Fatalf("a Paddle checkout after the Stripe cancellation: %+v", out)
		}
		if sub := mustSubscription(t, s, org); sub.Provider != perch.BillingPaddle || sub.Plan != "enterprise" || sub.Status != perch.PlanActive {
			t.Fatalf("after the move: %s", describe(sub))
		}
	})
}
