package store

import (
	"context"
	"database/sql"

	"github.com/perch-dev/perch"
)

// JobBillingSeats is the kind of the job that sets an organisation's
// provider subscription quantity to its seat count (internal/worker). It
// carries no payload: it reads the count when it runs, so it is idempotent
// and any number of membership changes before it runs make one update.
const JobBillingSeats = "billing.seats"

// seatCount is the SQL of an organisation's (o) seats billed: its enabled
// members. A member an identity provider or a platform admin disabled
// holds no seat at the provider, though the plan's seat cap (seatFree)
// still counts them until they leave.
const seatCount = `(SELECT COUNT(*) FROM users u WHERE u.org_id = o.id AND u.disabled_at IS NULL)`

// seatsChanged is the one hook of every change of membership: a member
// added (an invitation accepted, an invited account made, SCIM or SAML
// provisioning), removed or leaving (moveUser: removal, SCIM delete, an
// invitation taking them elsewhere), disabled or enabled again (SCIM
// active, a platform admin). Called in the change's own transaction, it
// queues a JobBillingSeats for each organisation that has a live provider
// subscription (perch.LiveSubscription) whose billed seats differ from its
// seat count, unless one is already waiting to be claimed (which will read
// the count when it runs): so the update is queued with the change or not
// at all, and a burst of joins makes one.
func (s *Store) seatsChanged(ctx context.Context, tx *sql.Tx, orgIDs ...string) error {
	now := ms(s.now())
	for _, orgID := range orgIDs {
		if orgID == "" {
			continue
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO jobs (id, org_id, kind, payload, created_at, next_at)
			SELECT ?, o.id, ?, 'null', ?, ? FROM orgs o
			WHERE o.id = ? AND o.billing_provider <> '' AND o.billing_subscription_id <> '' AND o.plan_status IN (?, ?, ?)
				AND COALESCE(o.billing_seats, -1) <> `+seatCount+`
				AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.org_id = o.id AND j.kind = ?
					AND j.failed_at IS NULL AND j.claimed_at IS NULL)`),
			newID(), JobBillingSeats, now, now, orgID, perch.PlanTrialing, perch.PlanActive, perch.PlanPastDue, JobBillingSeats)
		if err != nil {
			return err
		}
	}
	return nil
}

// SeatState is what the seat job needs of an organisation.
type SeatState struct {
	Provider       string // perch.BillingStripe, perch.BillingPaddle or ""
	SubscriptionID string // "" without one
	Status         string
	Seats          int  // enabled members: what the subscription should bill
	Billed         *int // what it bills, as last known (nil: not known)
}

// Live reports whether the organisation has a provider subscription whose
// quantity Perch keeps in step (perch.LiveSubscription).
func (st *SeatState) Live() bool {
	return st.Provider != "" && st.SubscriptionID != "" && perch.LiveSubscription(st.Status)
}

// Seats answers the organisation's seat state (ENOTFOUND for none).
func (s *Store) Seats(ctx context.Context, orgID string) (*SeatState, error) {
	var st SeatState
	var billed sql.NullInt64
	err := s.r.QueryRowContext(ctx, s.q(`SELECT o.billing_provider, o.billing_subscription_id, o.plan_status, o.billing_seats, `+seatCount+`
		FROM orgs o WHERE o.id = ?`), orgID).Scan(&st.Provider, &st.SubscriptionID, &st.Status, &billed, &st.Seats)
	if err != nil {
		return nil, notFound(err, "Organisation")
	}
	if billed.Valid {
		n := int(billed.Int64)
		st.Billed = &n
	}
	return &st, nil
}

// RecordSeats stores that the provider subscription subscriptionID of
// orgID bills seats (after the seat job set it, or read it unchanged). A
// subscription that is no longer the organisation's changes nothing.
func (s *Store) RecordSeats(ctx context.Context, orgID, subscriptionID string, seats int) error {
	_, err := s.w.ExecContext(ctx, s.q(`UPDATE orgs SET billing_seats = ? WHERE id = ? AND billing_subscription_id = ?`),
		seats, orgID, subscriptionID)
	return err
}
