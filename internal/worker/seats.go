package worker

import (
	"context"
	"fmt"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// syncSeats carries out a store.JobBillingSeats: the organisation's
// provider subscription is set to bill its seat count (its enabled
// members, read now, so the job is idempotent and one run covers every
// change queued before it), prorated by the provider, and the change is
// audited. An organisation gone, or no longer with a live subscription, has
// nothing to set. A provider that fails, or one this server is not
// configured for, fails the job, which the queue retries with backoff.
func (wk *Worker) syncSeats(ctx context.Context, j store.Job) error {
	st, err := wk.store.StartSeatJob(ctx, j.OrgID)
	if perch.ErrorCode(err) == perch.ENOTFOUND {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the organisation's seats: %w", err)
	}
	if !st.Live() {
		return nil
	}
	p := wk.opts.Billing
	if p == nil || p.Name() != st.Provider {
		return fmt.Errorf("the organisation is billed through %s, and this server's payment provider (PERCH_BILLING_PROVIDER) is not %s: its seats cannot be set",
			st.Provider, st.Provider)
	}
	seats := max(st.Seats, 1) // a subscription bills at least one
	before, err := p.SetSeats(ctx, st.SubscriptionID, seats)
	if err != nil {
		return err
	}
	if err := wk.store.RecordSeats(ctx, j.OrgID, st.SubscriptionID, seats); err != nil {
		return fmt.Errorf("recording the seats billed: %w", err)
	}
	if before == seats {
		return nil
	}
	entry := &perch.AuditEntry{Action: perch.AuditSeatsUpdated, Actor: perch.AuditActor{Type: perch.ActorSystem},
		Target: perch.AuditTarget{Type: "org", ID: j.OrgID}, OrgID: j.OrgID, At: wk.now(),
		Changes: map[string]any{"seats": []int{before, seats}, "provider": st.Provider, "proration": prorationOf(st.Provider)}}
	if err := wk.store.AppendAudit(ctx, entry); err != nil {
		// The provider bills the right count; only the record of it is lost.
		wk.log.Error("writing the audit entry of a seat change failed", "org", j.OrgID, "seats", seats, "err", err)
	}
	wk.log.Info("the organisation's subscription now bills its seat count", "org", j.OrgID, "provider", st.Provider, "from", before, "to", seats)
	return nil
}

// prorationOf names how the provider bills a seat change, for the audit
// entry (internal/billing: Stripe's create_prorations, Paddle's
// prorated_immediately).
func prorationOf(provider string) string {
	if provider == perch.BillingPaddle {
		return "prorated_immediately"
	}
	return "create_prorations"
}
