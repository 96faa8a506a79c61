package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestApplyBillingEventFollowsTheBinding: once a subscription or customer
// is bound to an organisation (by the completion of a checkout that
// organisation opened), an event naming another organisation for it, in
// its metadata or by another's checkout, changes nothing for either and
// says why; an organisation named by an event that completes no checkout
// it opened is not bound to anything. Paddle's custom_data the same.
func TestApplyBillingEventFollowsTheBinding(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")
		next := func(id string) perch.BillingEvent {
			clock.Advance(time.Minute)
			return stripeEvent(id, clock.Now())
		}
		bind := checkoutEvent(t, s, ada.OrgID, "cs_ada", "evt_ada", clock.Now())
		bind.CustomerID, bind.SubscriptionID, bind.Status = "cus_ada", "sub_ada", perch.PlanActive
		wantOutcome(t, mustApply(t, s, bind, "team"), ada.OrgID, false, false)
		adaBefore, bobBefore := mustSubscription(t, s, ada.OrgID), mustSubscription(t, s, bob.OrgID)
		unchanged := func(what string) {
			t.Helper()
			wantSubscription(t, what+": Ada's", mustSubscription(t, s, ada.OrgID), adaBefore)
			wantSubscription(t, what+": Bob's", mustSubscription(t, s, bob.OrgID), bobBefore)
		}
		ignored := func(what string, ev perch.BillingEvent, bound string) {
			t.Helper()
			out := mustApply(t, s, ev, "enterprise")
			wantOutcome(t, out, "", false, false)
			if out.Ignored == "" || out.Bound != bound {
				t.Fatalf("%s: ignored %q, bound %q; want a reason, bound %q", what, out.Ignored, out.Bound, bound)
			}
			unchanged(what)
			// Recorded all the same: the provider's retry is a duplicate.
			if again := mustApply(t, s, ev, "enterprise"); !again.Duplicate {
				t.Fatalf("%s: a redelivery is not a duplicate", what)
			}
		}

		ev := next("evt_1")
		ev.SubscriptionID, ev.CustomerID, ev.OrgID, ev.Status = "sub_ada", "cus_ada", bob.OrgID, perch.PlanCanceled
		ignored("Ada's subscription, its metadata naming Bob", ev, ada.OrgID)

		ev = next("evt_2")
		ev.CustomerID, ev.SubscriptionID, ev.OrgID, ev.Status = "cus_ada", "sub_new", bob.OrgID, perch.PlanActive
		ignored("Ada's customer with a new subscription, naming Bob", ev, ada.OrgID)

		if err := s.RecordCheckout(ctx, perch.BillingStripe, "cs_bob", bob.OrgID); err != nil {
			t.Fatal(err)
		}
		ev = next("evt_3")
		ev.Type, ev.CheckoutID, ev.SubscriptionID, ev.CustomerID = "checkout.session.completed", "cs_bob", "sub_ada", "cus_ada"
		ignored("Bob's checkout, completed with Ada's subscription", ev, ada.OrgID)

		ev = next("evt_4")
		ev.Type, ev.CheckoutID, ev.OrgID, ev.SubscriptionID = "checkout.session.completed", "cs_ada", bob.OrgID, "sub_other"
		ignored("Ada's checkout, its client reference naming Bob", ev, ada.OrgID)

		ev = next("evt_5")
		ev.Type, ev.CheckoutID, ev.OrgID = "checkout.session.completed", "cs_payment_link", bob.OrgID
		ev.CustomerID, ev.SubscriptionID, ev.Status = "cus_x", "sub_x", perch.PlanActive
		ignored("a checkout Perch never opened, naming Bob", ev, "")

		// A new subscription's own events, before its checkout completes,
		// bind nothing either; the completion does.
		ev = next("evt_6")
		ev.Type, ev.OrgID, ev.CustomerID, ev.SubscriptionID, ev.Status = "customer.subscription.created", bob.OrgID, "cus_bob", "sub_bob", perch.PlanTrialing
		ignored("Bob's subscription created before his checkout completed", ev, "")
		ev = next("evt_7")
		ev.Type, ev.CheckoutID, ev.OrgID, ev.CustomerID, ev.SubscriptionID, ev.Status = "checkout.session.completed", "cs_bob", bob.OrgID, "cus_bob", "sub_bob", perch.PlanActive
		wantOutcome(t, mustApply(t, s, ev, "solo"), bob.OrgID, false, false)
		if sub := mustSubscription(t, s, bob.OrgID); sub.SubscriptionID != "sub_bob" || sub.Plan != "solo" || sub.Status != perch.PlanActive {
			t.Fatalf("Bob's subscription after his checkout: %s", describe(sub))
		}
		// From now on Bob's events need not name him; Ada's still apply.
		ev = next("evt_8")
		ev.SubscriptionID, ev.Status = "sub_bob", perch.PlanPastDue
		wantOutcome(t, mustApply(t, s, ev, ""), bob.OrgID, false, false)
		ev = next("evt_9")
		ev.SubscriptionID, ev.OrgID, ev.Status = "sub_ada", ada.OrgID, perch.PlanPastDue
		wantOutcome(t, mustApply(t, s, ev, ""), ada.OrgID, false, false)

		// Paddle: custom_data.org_id is a claim like Stripe's metadata. Ada
		// moves to Paddle once her Stripe subscription has ended: while it
		// is live, Paddle's events about her are refused
		// (TestOneProviderPerOrganisation).
		ev = next("evt_10")
		ev.SubscriptionID, ev.Status = "sub_ada", perch.PlanCanceled
		wantOutcome(t, mustApply(t, s, ev, ""), ada.OrgID, false, false)
		if err := s.RecordCheckout(ctx, perch.BillingPaddle, "txn_ada", ada.OrgID); err != nil {
			t.Fatal(err)
		}
		paddle := func(id, typ string) perch.BillingEvent {
			clock.Advance(time.Minute)
			return perch.BillingEvent{Provider: perch.BillingPaddle, ID: id, Type: typ, OccurredAt: clock.Now()}
		}
		ev = paddle("evt_p1", "subscription.created")
		ev.CheckoutID, ev.OrgID, ev.CustomerID, ev.SubscriptionID, ev.Status = "txn_ada", bob.OrgID, "ctm_ada", "sub_p_ada", perch.PlanActive
		adaBefore, bobBefore = mustSubscription(t, s, ada.OrgID), mustSubscription(t, s, bob.OrgID)
		ignored("Paddle: Ada's checkout transaction, its custom_data naming Bob", ev, ada.OrgID)
		ev = paddle("evt_p2", "subscription.created")
		ev.CheckoutID, ev.OrgID, ev.CustomerID, ev.SubscriptionID, ev.Status = "txn_ada", ada.OrgID, "ctm_ada", "sub_p_ada", perch.PlanActive
		wantOutcome(t, mustApply(t, s, ev, "team"), ada.OrgID, false, false)
		adaBefore = mustSubscription(t, s, ada.OrgID)
		ev = paddle("evt_p3", "transaction.completed")
		ev.CheckoutID, ev.OrgID, ev.SubscriptionID, ev.Status = "txn_renewal", bob.OrgID, "sub_p_ada", perch.PlanActive
		ignored("Paddle: Ada's renewal, its custom_data naming Bob", ev, ada.OrgID)
	})
}
