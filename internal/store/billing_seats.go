package store

import (
	"context"
	"database/sql"
	"slices"

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
// subscription (perch.LiveSubscription), unless one is queued and has not
// started (orgs.seat_job_at; it reads the count when it starts): so the
// update is queued with the change or not at all, and a burst of joins
// makes one. It does not compare the count with the seats billed: a job
// already started may be about to bill a count this change undoes.
//
// On PostgreSQL a billed organisation's row is locked first (in id order,
// so that two moves between the same organisations cannot deadlock), and
// the job takes the same lock as it starts (StartSeatJob): a change that
// found a job waiting is committed before that job reads the count, so no
// change is left out of the quantity.
func (s *Store) seatsChanged(ctx context.Context, tx *sql.Tx, orgIDs ...string) error {
	return s.queueSeatJobs(ctx, tx, false, orgIDs...)
}

// seatsChangedFor is seatsChanged for the organisation userID is in: for
// a change that is about an account (disabled, enabled) wherever it is.
func (s *Store) seatsChangedFor(ctx context.Context, tx *sql.Tx, userID string) error {
	var orgID string
	if err := tx.QueryRowContext(ctx, s.q(`SELECT org_id FROM users WHERE id = ?`), userID).Scan(&orgID); err != nil {
		return notFound(err, "User")
	}
	return s.seatsChanged(ctx, tx, orgID)
}

// staleSeatJob is how long a queued seat job may wait unstarted before a
// change queues another beside it: longer than the queue retries anything,
// so only a job that is gone (its row removed by hand) is ever doubled,
// and a second job is harmless (it sets the same count).
const staleSeatJob = perch.WorkflowRetryFor

// queueSeatJobs is seatsChanged; with onlyIfBilledDiffers (a provider's
// event that said what its subscription bills) it queues nothing for an
// organisation whose billed seats are its count.
func (s *Store) queueSeatJobs(ctx context.Context, tx *sql.Tx, onlyIfBilledDiffers bool, orgIDs ...string) error {
	now := ms(s.now())
	differs := ""
	if onlyIfBilledDiffers {
		differs = ` AND COALESCE(o.billing_seats, -1) <> ` + seatCount
	}
	ids := slices.Sorted(slices.Values(orgIDs))
	for _, orgID := range slices.Compact(ids) {
		if orgID == "" {
			continue
		}
		if s.dialect == Postgres {
			if _, err := tx.ExecContext(ctx, `SELECT 1 FROM orgs WHERE id = $1 AND billing_subscription_id <> '' FOR UPDATE`, orgID); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE orgs AS o SET seat_job_at = ?
			WHERE o.id = ? AND o.billing_provider <> '' AND o.billing_subscription_id <> '' AND o.plan_status IN (?, ?, ?)
				AND (o.seat_job_at IS NULL OR o.seat_job_at < ?)`+differs),
			now, orgID, perch.PlanTrialing, perch.PlanActive, perch.PlanPastDue, now-staleSeatJob.Milliseconds())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err != nil {
				return err
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO jobs (id, org_id, kind, payload, created_at, next_at) VALUES (?, ?, ?, 'null', ?, ?)`),
			newID(), orgID, JobBillingSeats, now, now); err != nil {
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
	return s.seats(ctx, s.r, orgID)
}

func (s *Store) seats(ctx context.Context, db querier, orgID string) (*SeatState, error) {
	var st SeatState
	var billed sql.NullInt64
	err := db.QueryRowContext(ctx, s.q(`SELECT o.billing_provider, o.billing_subscription_id, o.plan_status, o.billing_seats, `+seatCount+`
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

// StartSeatJob is how a JobBillingSeats starts: it marks the
// organisation's seat job started (a change of membership from now on
// queues another) and then reads its seat state, under the organisation's
// row lock on PostgreSQL, so that a change that found this job waiting is
// in the count (seatsChanged). ENOTFOUND for no such organisation.
func (s *Store) StartSeatJob(ctx context.Context, orgID string) (*SeatState, error) {
	var st *SeatState
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if s.dialect == Postgres {
			if _, err := tx.ExecContext(ctx, `SELECT 1 FROM orgs WHERE id = $1 FOR UPDATE`, orgID); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE orgs SET seat_job_at = NULL WHERE id = ?`), orgID); err != nil {
			return err
		}
		var err error
		st, err = s.seats(ctx, tx, orgID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// RecordSeats stores that the provider subscription subscriptionID of
// orgID bills seats (after the seat job set it, or read it unchanged). A
// subscription that is no longer the organisation's changes nothing.
func (s *Store) RecordSeats(ctx context.Context, orgID, subscriptionID string, seats int) error {
	_, err := s.w.ExecContext(ctx, s.q(`UPDATE orgs SET billing_seats = ? WHERE id = ? AND billing_subscription_id = ?`),
		seats, orgID, subscriptionID)
	return err
}
