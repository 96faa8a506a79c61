package storetest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

const day = 24 * time.Hour

// stripeEvent is a Stripe event with id that happened at at and speaks of
// nothing yet.
func stripeEvent(id string, at time.Time) perch.BillingEvent {
	return perch.BillingEvent{Provider: perch.BillingStripe, ID: id, Type: "customer.subscription.updated", OccurredAt: at}
}

// checkoutEvent has orgID open the checkout checkoutID at Stripe and
// answers the event (id, at at) that completes it: the only kind of event
// that binds a subscription and customer to an organisation.
func checkoutEvent(tb testing.TB, s *store.Store, orgID, checkoutID, id string, at time.Time) perch.BillingEvent {
	tb.Helper()
	if err := s.RecordCheckout(context.Background(), perch.BillingStripe, checkoutID, orgID); err != nil {
		tb.Fatalf("RecordCheckout(%s): %v", checkoutID, err)
	}
	return perch.BillingEvent{Provider: perch.BillingStripe, ID: id, Type: "checkout.session.completed", OccurredAt: at,
		OrgID: orgID, CheckoutID: checkoutID}
}

func mustApply(tb testing.TB, s *store.Store, ev perch.BillingEvent, plan string) *store.BillingOutcome {
	tb.Helper()
	out, err := s.ApplyBillingEvent(context.Background(), ev, plan)
	if err != nil {
		tb.Fatalf("ApplyBillingEvent(%s): %v", ev.ID, err)
	}
	return out
}

func mustSubscription(tb testing.TB, s *store.Store, orgID string) *perch.Subscription {
	tb.Helper()
	sub, err := s.Subscription(context.Background(), orgID)
	if err != nil {
		tb.Fatalf("Subscription(%q): %v", orgID, err)
	}
	return sub
}

// describe writes every field of a subscription, for comparisons whose
// failures read well.
func describe(sub *perch.Subscription) string {
	if sub == nil {
		return "<nil>"
	}
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	last := "-"
	if !sub.LastEventAt.IsZero() {
		last = sub.LastEventAt.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("plan=%s status=%s trial=%s period=%s cancel=%t provider=%q customer=%q subscription=%q last=%s",
		sub.Plan, sub.Status, at(sub.TrialEndsAt), at(sub.CurrentPeriodEnd), sub.CancelAtPeriodEnd,
		sub.Provider, sub.CustomerID, sub.SubscriptionID, last)
}

func wantSubscription(tb testing.TB, what string, got, want *perch.Subscription) {
	tb.Helper()
	if g, w := describe(got), describe(want); g != w {
		tb.Fatalf("%s:\n got  %s\n want %s", what, g, w)
	}
}

func wantOutcome(tb testing.TB, out *store.BillingOutcome, orgID string, duplicate, stale bool) {
	tb.Helper()
	if out.OrgID != orgID || out.Duplicate != duplicate || out.Stale != stale {
		tb.Fatalf("outcome = {OrgID:%q Duplicate:%t Stale:%t}, want {OrgID:%q Duplicate:%t Stale:%t}",
			out.OrgID, out.Duplicate, out.Stale, orgID, duplicate, stale)
	}
}

// TestApplyBillingEventToTheCheckoutsOrg: the completion of a checkout
// the organisation opened binds the subscription and customer to it.
func TestApplyBillingEventToTheCheckoutsOrg(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		trialEnds := clock.Now().Add(perch.TrialDays * day)
		periodEnd := clock.Now().Add(30 * day)

		ev := checkoutEvent(t, s, ada.OrgID, "cs_1", "evt_1", clock.Now())
		ev.CustomerID, ev.SubscriptionID = "cus_1", "sub_1"
		ev.Status, ev.PeriodEnd, ev.CancelAtPeriodEnd = perch.PlanActive, &periodEnd, new(true)
		out := mustApply(t, s, ev, "enterprise")

		wantOutcome(t, out, ada.OrgID, false, false)
		wantSubscription(t, "before", out.Before, &perch.Subscription{Plan: "team", Status: perch.PlanTrialing, TrialEndsAt: &trialEnds})
		want := &perch.Subscription{Plan: "enterprise", Status: perch.PlanActive, TrialEndsAt: &trialEnds, CurrentPeriodEnd: &periodEnd,
			CancelAtPeriodEnd: true, Provider: perch.BillingStripe, CustomerID: "cus_1", SubscriptionID: "sub_1", LastEventAt: clock.Now()}
		wantSubscription(t, "after", out.After, want)
		wantSubscription(t, "Subscription", mustSubscription(t, s, ada.OrgID), want)
		org := mustOrg(t, s, ada.OrgID)
		wantSubscription(t, "Org(...).Subscription", org.Subscription, want)
		if org.Plan != "enterprise" || org.PlanStatus != perch.PlanActive || org.MaxSeats != 1000 {
			t.Fatalf("org = %+v: its own fields must agree with the subscription", org)
		}
	})
}

func TestApplyBillingEventFindsTheOrgBySubscriptionThenCustomer(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		mustCreateUser(t, s, "Bob", "bob@example.com") // an organisation that must stay untouched

		first := checkoutEvent(t, s, ada.OrgID, "cs_1", "evt_1", clock.Now())
		first.CustomerID, first.SubscriptionID, first.Status = "cus_1", "sub_1", perch.PlanActive
		mustApply(t, s, first, "team")

		clock.Advance(time.Hour)
		bySubscription := stripeEvent("evt_2", clock.Now())
		bySubscription.Type, bySubscription.SubscriptionID, bySubscription.Status = "invoice.payment_failed", "sub_1", perch.PlanPastDue
		out := mustApply(t, s, bySubscription, "")
		wantOutcome(t, out, ada.OrgID, false, false)
		if out.Before.Status != perch.PlanActive || out.After.Status != perch.PlanPastDue || out.After.Plan != "team" {
			t.Fatalf("by subscription: before %s, after %s", describe(out.Before), describe(out.After))
		}

		clock.Advance(time.Hour)
		byCustomer := stripeEvent("evt_3", clock.Now())
		byCustomer.CustomerID, byCustomer.SubscriptionID, byCustomer.Status = "cus_1", "sub_2", perch.PlanActive
		out = mustApply(t, s, byCustomer, "solo")
		wantOutcome(t, out, ada.OrgID, false, false)
		if a := out.After; a.SubscriptionID != "sub_2" || a.CustomerID != "cus_1" || a.Plan != "solo" || a.Status != perch.PlanActive {
			t.Fatalf("by customer: after %s", describe(a))
		}

		// An organisation id other than the bound one, even one of no
		// organisation, is not followed, nor is the binding: the event
		// changes nothing (TestApplyBillingEventFollowsTheBinding).
		clock.Advance(time.Hour)
		misnamed := stripeEvent("evt_4", clock.Now())
		misnamed.OrgID, misnamed.SubscriptionID, misnamed.CancelAtPeriodEnd = "no-such-org", "sub_2", new(true)
		out = mustApply(t, s, misnamed, "")
		wantOutcome(t, out, "", false, false)
		if out.Ignored == "" || out.Bound != ada.OrgID || mustSubscription(t, s, ada.OrgID).CancelAtPeriodEnd {
			t.Fatalf("misnamed: ignored %q, bound %q; the subscription %s", out.Ignored, out.Bound, describe(mustSubscription(t, s, ada.OrgID)))
		}

		// The same ids at the other provider are another subscription.
		other := stripeEvent("evt_5", clock.Now())
		other.Provider, other.SubscriptionID, other.CustomerID = perch.BillingPaddle, "sub_2", "cus_1"
		wantOutcome(t, mustApply(t, s, other, ""), "", false, false)
	})
}

func TestApplyBillingEventTwiceIsADuplicate(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		ev := checkoutEvent(t, s, ada.OrgID, "cs_1", "evt_1", clock.Now())
		ev.SubscriptionID, ev.Status = "sub_1", perch.PlanActive
		applied := mustApply(t, s, ev, "team")

		// A redelivery, even one that reads differently, changes nothing.
		clock.Advance(time.Minute)
		again := ev
		again.Status, again.OccurredAt = perch.PlanCanceled, clock.Now()
		out := mustApply(t, s, again, "solo")
		wantOutcome(t, out, ada.OrgID, true, false)
		if out.Before != nil || out.After != nil {
			t.Fatalf("a duplicate answers no subscription: before %s, after %s", describe(out.Before), describe(out.After))
		}
		wantSubscription(t, "after the redelivery", mustSubscription(t, s, ada.OrgID), applied.After)

		// The same id from the other provider is another event (which
		// binds nothing there: no checkout of Paddle's was opened).
		paddle := again
		paddle.Provider = perch.BillingPaddle
		if out := mustApply(t, s, paddle, ""); out.Duplicate || out.Ignored == "" {
			t.Fatalf("the same id from Paddle: duplicate %v, ignored %q", out.Duplicate, out.Ignored)
		}
	})
}

func TestApplyBillingEventInOrder(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		t0 := clock.Now()

		newer := checkoutEvent(t, s, ada.OrgID, "cs_1", "evt_newer", t0.Add(time.Minute))
		newer.SubscriptionID, newer.Status = "sub_1", perch.PlanPastDue
		applied := mustApply(t, s, newer, "")

		older := stripeEvent("evt_older", t0)
		older.SubscriptionID, older.Status, older.CancelAtPeriodEnd = "sub_1", perch.PlanActive, new(true)
		out := mustApply(t, s, older, "enterprise")
		wantOutcome(t, out, ada.OrgID, false, true)
		wantSubscription(t, "stale before", out.Before, applied.After)
		wantSubscription(t, "stale after", out.After, applied.After)
		wantSubscription(t, "stored after a stale event", mustSubscription(t, s, ada.OrgID), applied.After)
		// A stale event is recorded all the same: its redelivery is a duplicate.
		wantOutcome(t, mustApply(t, s, older, ""), ada.OrgID, true, false)

		// Stripe's times have second resolution: two events of the same
		// second both apply, in the order they come.
		same := stripeEvent("evt_same_second", newer.OccurredAt)
		same.SubscriptionID, same.Status = "sub_1", perch.PlanActive
		out = mustApply(t, s, same, "")
		wantOutcome(t, out, ada.OrgID, false, false)
		if out.After.Status != perch.PlanActive {
			t.Fatalf("equal times: after %s", describe(out.After))
		}
	})
}

func TestApplyBillingEventForNoKnownOrg(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		before := mustSubscription(t, s, ada.OrgID)

		ev := stripeEvent("evt_1", clock.Now())
		ev.OrgID, ev.CustomerID, ev.SubscriptionID, ev.Status = "no-such-org", "cus_x", "sub_x", perch.PlanActive
		out := mustApply(t, s, ev, "team")
		wantOutcome(t, out, "", false, false)
		if out.Before != nil || out.After != nil {
			t.Fatalf("no organisation: before %s, after %s", describe(out.Before), describe(out.After))
		}
		wantOutcome(t, mustApply(t, s, ev, "team"), "", true, false)
		wantSubscription(t, "an unrelated organisation", mustSubscription(t, s, ada.OrgID), before)
	})
}

func TestApplyBillingEventRefusesWhatItCannotApply(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		good := checkoutEvent(t, s, ada.OrgID, "cs_1", "evt_1", clock.Now())
		good.Status = perch.PlanActive
		for _, tc := range []struct {
			name string
			edit func(*perch.BillingEvent)
			plan string
		}{
			{"no provider", func(ev *perch.BillingEvent) { ev.Provider = "" }, ""},
			{"unknown provider", func(ev *perch.BillingEvent) { ev.Provider = "paypal" }, ""},
			{"no id", func(ev *perch.BillingEvent) { ev.ID = "" }, ""},
			{"no time", func(ev *perch.BillingEvent) { ev.OccurredAt = time.Time{} }, ""},
			{"unknown status", func(ev *perch.BillingEvent) { ev.Status = "incomplete" }, ""},
			{"overlong subscription id", func(ev *perch.BillingEvent) { ev.SubscriptionID = strings.Repeat("x", 256) }, ""},
			{"overlong checkout id", func(ev *perch.BillingEvent) { ev.CheckoutID = strings.Repeat("x", 256) }, ""},
			{"unknown plan", func(*perch.BillingEvent) {}, "platinum"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ev := good
				tc.edit(&ev)
				_, err := s.ApplyBillingEvent(context.Background(), ev, tc.plan)
				wantCode(t, err, perch.EBADREQUEST)
			})
		}
		// Nothing was recorded: the event applies once it can.
		wantOutcome(t, mustApply(t, s, good, "team"), ada.OrgID, false, false)
		if _, err := s.Subscription(context.Background(), "no-such-org"); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Fatalf("Subscription of no organisation: %v, want %s", err, perch.ENOTFOUND)
		}
	})
}

// atOnce calls fn from n goroutines together, as n instances would, and
// answers their results; any error fails tb.
func atOnce[T any](tb testing.TB, n int, fn func() (T, error)) []T {
	tb.Helper()
	results, errs := make([]T, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = fn() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("call %d of %d: %v", i, n, err)
		}
	}
	return results
}

// TestApplyBillingEventOnceAtOnce: instances that receive the same event at
// the same moment apply it once between them.
func TestApplyBillingEventOnceAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		ev := checkoutEvent(t, s, ada.OrgID, "cs_1", "evt_1", s.Now())
		ev.SubscriptionID, ev.Status = "sub_1", perch.PlanActive
		applied := 0
		for _, out := range atOnce(t, 8, func() (*store.BillingOutcome, error) { return s.ApplyBillingEvent(context.Background(), ev, "team") }) {
			if !out.Duplicate {
				applied++
			}
		}
		if applied != 1 {
			t.Fatalf("applied %d times, want once", applied)
		}
	})
}

// trialOrg creates an account whose organisation is on its trial, and
// answers the organisation's id.
func trialOrg(tb testing.TB, s *store.Store, name string) string {
	tb.Helper()
	return mustCreateUser(tb, s, name, name+"@example.com").OrgID
}

func expiredIDs(list []store.ExpiredTrial) []string {
	ids := []string{}
	for _, e := range list {
		ids = append(ids, e.OrgID)
	}
	return ids
}

func TestExpireTrialsMovesUnpaidEndedTrialsToSolo(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		t0 := clock.Now()
		unpaid := trialOrg(t, s, "unpaid")
		onEnterprise := trialOrg(t, s, "enterprise")
		if _, _, err := s.UpdateOrgAsAdmin(ctx, onEnterprise, perch.AdminOrgUpdate{Plan: new("enterprise")}); err != nil {
			t.Fatal(err)
		}
		subscribed := trialOrg(t, s, "subscribed") // a provider's trial: a subscription, still trialing
		ev := checkoutEvent(t, s, subscribed, "cs_1", "evt_subscribed", t0)
		ev.SubscriptionID, ev.Status = "sub_1", perch.PlanTrialing
		mustApply(t, s, ev, "")
		active := trialOrg(t, s, "active") // paid, no subscription id known
		ev = checkoutEvent(t, s, active, "cs_2", "evt_active", t0)
		ev.CustomerID, ev.Status = "cus_1", perch.PlanActive
		mustApply(t, s, ev, "")
		clock.Advance(5 * day)
		future := trialOrg(t, s, "future")

		// At the very end of the trials nothing has ended yet.
		got, err := s.ExpireTrials(ctx, t0.Add(perch.TrialDays*day))
		if err != nil || len(got) != 0 {
			t.Fatalf("ExpireTrials at the end = %v, %v; want none", got, err)
		}

		now := t0.Add(perch.TrialDays*day + time.Second)
		got, err = s.ExpireTrials(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.ExpiredTrial{{OrgID: unpaid, Plan: "team"}, {OrgID: onEnterprise, Plan: "enterprise"}}
		slices.SortFunc(want, func(a, b store.ExpiredTrial) int { return strings.Compare(a.OrgID, b.OrgID) })
		if !slices.Equal(got, want) {
			t.Fatalf("ExpireTrials = %v, want %v", got, want)
		}
		for _, id := range []string{unpaid, onEnterprise} {
			o := mustOrg(t, s, id)
			if o.Plan != "solo" || o.PlanStatus != perch.PlanNone || o.TrialEndsAt == nil || o.Subscription.Status != perch.PlanNone {
				t.Fatalf("expired org = %+v (subscription %s)", o, describe(o.Subscription))
			}
		}
		for id, status := range map[string]string{subscribed: perch.PlanTrialing, active: perch.PlanActive, future: perch.PlanTrialing} {
			if o := mustOrg(t, s, id); o.Plan != "team" || o.PlanStatus != status {
				t.Fatalf("org %s = %s/%s, want team/%s", id, o.Plan, o.PlanStatus, status)
			}
		}
		if got, err := s.ExpireTrials(ctx, now); err != nil || len(got) != 0 {
			t.Fatalf("ExpireTrials again = %v, %v; want none", got, err)
		}
	})
}

// TestExpireTrialsOnceAtOnce: instances running the job together move each
// organisation once between them.
func TestExpireTrialsOnceAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		var orgs []string
		for i := range 5 {
			orgs = append(orgs, trialOrg(t, s, fmt.Sprintf("org%d", i)))
		}
		now := clock.Now().Add(perch.TrialDays*day + time.Second)
		var moved []string
		for _, list := range atOnce(t, 4, func() ([]store.ExpiredTrial, error) { return s.ExpireTrials(context.Background(), now) }) {
			moved = append(moved, expiredIDs(list)...)
		}
		slices.Sort(moved)
		slices.Sort(orgs)
		if !slices.Equal(moved, orgs) {
			t.Fatalf("moved %v, want each of %v once", moved, orgs)
		}
	})
}

func TestTrialsEndingSoonClaimsEachOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		t0 := clock.Now()
		const within = 3 * day
		soon := trialOrg(t, s, "soon")
		subscribed := trialOrg(t, s, "subscribed")
		ev := checkoutEvent(t, s, subscribed, "cs_1", "evt_subscribed", t0)
		ev.SubscriptionID, ev.Status = "sub_1", perch.PlanTrialing
		mustApply(t, s, ev, "")
		past := trialOrg(t, s, "past")
		if _, _, err := s.UpdateOrgAsAdmin(ctx, past, perch.AdminOrgUpdate{SetTrialEndsAt: true, TrialEndsAt: new(t0.Add(11*day - time.Hour))}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(day)
		later := trialOrg(t, s, "later") // its trial ends a day after the others'

		now := t0.Add(11*day + time.Minute)
		got, err := s.TrialsEndingSoon(ctx, now, within)
		if err != nil {
			t.Fatal(err)
		}
		if want := []store.TrialEnding{{OrgID: soon, EndsAt: t0.Add(perch.TrialDays * day)}}; !slices.Equal(got, want) {
			t.Fatalf("TrialsEndingSoon = %v, want %v", got, want)
		}
		if got, err := s.TrialsEndingSoon(ctx, now.Add(time.Minute), within); err != nil || len(got) != 0 {
			t.Fatalf("TrialsEndingSoon again = %v, %v; want none", got, err)
		}
		got, err = s.TrialsEndingSoon(ctx, now.Add(day), within)
		if err != nil || len(got) != 1 || got[0].OrgID != later {
			t.Fatalf("TrialsEndingSoon a day on = %v, %v; want only %s", got, err, later)
		}

		// A trial extended past the notice is told again as its new end nears.
		if _, _, err := s.UpdateOrgAsAdmin(ctx, soon, perch.AdminOrgUpdate{SetTrialEndsAt: true, TrialEndsAt: new(t0.Add(30 * day))}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.TrialsEndingSoon(ctx, t0.Add(20*day), within); err != nil || len(got) != 0 {
			t.Fatalf("TrialsEndingSoon before the new end nears = %v, %v; want none", got, err)
		}
		got, err = s.TrialsEndingSoon(ctx, t0.Add(27*day+time.Minute), within)
		if err != nil || len(got) != 1 || got[0].OrgID != soon || !got[0].EndsAt.Equal(t0.Add(30*day)) {
			t.Fatalf("TrialsEndingSoon near the new end = %v, %v; want %s", got, err, soon)
		}
	})
}

// TestTrialsEndingSoonAfterAPayment: a payment ends the notice cycle, so
// that a trial given again later is told about again.
func TestTrialsEndingSoonAfterAPayment(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		t0 := clock.Now()
		org := trialOrg(t, s, "org")
		if got, err := s.TrialsEndingSoon(ctx, t0.Add(12*day), 3*day); err != nil || len(got) != 1 {
			t.Fatalf("TrialsEndingSoon = %v, %v; want one", got, err)
		}
		ev := checkoutEvent(t, s, org, "cs_1", "evt_paid", t0.Add(12*day))
		ev.CustomerID, ev.Status = "cus_1", perch.PlanActive
		mustApply(t, s, ev, "")
		if got, err := s.TrialsEndingSoon(ctx, t0.Add(12*day+time.Hour), 3*day); err != nil || len(got) != 0 {
			t.Fatalf("TrialsEndingSoon of a paying org = %v, %v; want none", got, err)
		}
		if _, _, err := s.UpdateOrgAsAdmin(ctx, org, perch.AdminOrgUpdate{Status: new(perch.PlanTrialing)}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.TrialsEndingSoon(ctx, t0.Add(12*day+2*time.Hour), 3*day); err != nil || len(got) != 1 || got[0].OrgID != org {
			t.Fatalf("TrialsEndingSoon of a trial given again = %v, %v; want %s", got, err, org)
		}
	})
}

// TestTrialsEndingSoonOnceAtOnce: instances running the notice job together
// claim each organisation once between them.
func TestTrialsEndingSoonOnceAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		var orgs []string
		for i := range 5 {
			orgs = append(orgs, trialOrg(t, s, fmt.Sprintf("org%d", i)))
		}
		now := clock.Now().Add(12 * day)
		var claimed []string
		for _, list := range atOnce(t, 4, func() ([]store.TrialEnding, error) { return s.TrialsEndingSoon(context.Background(), now, 3*day) }) {
			for _, e := range list {
				claimed = append(claimed, e.OrgID)
			}
		}
		slices.Sort(claimed)
		slices.Sort(orgs)
		if !slices.Equal(claimed, orgs) {
			t.Fatalf("claimed %v, want each of %v once", claimed, orgs)
		}
	})
}

func TestOrgOwnersAndAdminsForBillingNotices(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		owner := mustCreateUser(t, s, "Owner", "owner@example.com")
		clock.Advance(time.Minute)
		admin := join(t, s, owner, "Admin", "admin@example.com", perch.RoleAdmin)
		clock.Advance(time.Minute)
		join(t, s, owner, "Member", "member@example.com", perch.RoleMember)
		disabled := join(t, s, owner, "Gone", "gone@example.com", perch.RoleAdmin)
		if _, err := s.UpdateUserAsAdmin(ctx, disabled.ID, perch.AdminUserUpdate{Disabled: new(true)}, nil); err != nil {
			t.Fatal(err)
		}
		mustCreateUser(t, s, "Elsewhere", "elsewhere@example.com")

		got, err := s.OrgOwnersAndAdmins(ctx, owner.OrgID)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{owner.ID, admin.ID}; !slices.Equal(got, want) {
			t.Fatalf("OrgOwnersAndAdmins = %v, want %v", got, want)
		}
		if got, err := s.OrgOwnersAndAdmins(ctx, "no-such-org"); err != nil || got == nil || len(got) != 0 {
			t.Fatalf("OrgOwnersAndAdmins of no organisation = %#v, %v; want an empty list", got, err)
		}
	})
}

func TestPruneBillingEventsForgetsOldEvents(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		old := checkoutEvent(t, s, ada.OrgID, "cs_old", "evt_old", clock.Now())
		old.CustomerID = "cus_1"
		mustApply(t, s, old, "")
		clock.Advance(60 * day)
		recent := stripeEvent("evt_recent", clock.Now())
		recent.CustomerID = "cus_1"
		mustApply(t, s, recent, "")
		clock.Advance(31 * day)

		n, err := s.PruneBillingEvents(ctx, clock.Now().Add(-90*day))
		if err != nil || n != 1 {
			t.Fatalf("PruneBillingEvents = %d, %v; want 1", n, err)
		}
		if n, err := s.PruneBillingEvents(ctx, clock.Now().Add(-90*day)); err != nil || n != 0 {
			t.Fatalf("PruneBillingEvents again = %d, %v; want 0", n, err)
		}
		wantOutcome(t, mustApply(t, s, recent, ""), ada.OrgID, true, false)
		// The pruned event is forgotten: were it sent again, it would be
		// recorded anew (and, being older than the last applied, stale).
		wantOutcome(t, mustApply(t, s, old, ""), ada.OrgID, false, true)
		// So is the checkout: a completion of it now binds nothing.
		late := stripeEvent("evt_late", clock.Now())
		late.Type, late.CheckoutID, late.CustomerID, late.SubscriptionID = "checkout.session.completed", "cs_old", "cus_9", "sub_9"
		wantOutcome(t, mustApply(t, s, late, ""), "", false, false)
	})
}
