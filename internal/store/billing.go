package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// subscriptionColumns are the columns of an organisation (aliased o) that
// make its perch.Subscription, read by subscriptionRow.
const subscriptionColumns = `o.plan, o.plan_status, o.trial_ends_at, o.current_period_end, o.cancel_at_period_end,
	o.billing_provider, o.billing_customer_id, o.billing_subscription_id, o.billing_event_at, o.billing_seats`

// subscriptionRow receives subscriptionColumns: the Org read scans them
// beside its own columns, in one query.
type subscriptionRow struct {
	sub                              perch.Subscription
	trial, periodEnd, eventAt, seats sql.NullInt64
}

// dest answers where Scan puts subscriptionColumns, in their order.
func (r *subscriptionRow) dest() []any {
	return []any{&r.sub.Plan, &r.sub.Status, &r.trial, &r.periodEnd, &r.sub.CancelAtPeriodEnd,
		&r.sub.Provider, &r.sub.CustomerID, &r.sub.SubscriptionID, &r.eventAt, &r.seats}
}

// subscription answers the scanned subscription, its times converted.
func (r *subscriptionRow) subscription() *perch.Subscription {
	sub := r.sub
	sub.TrialEndsAt, sub.CurrentPeriodEnd = fromNullMS(r.trial), fromNullMS(r.periodEnd)
	if r.eventAt.Valid {
		sub.LastEventAt = fromMS(r.eventAt.Int64)
	}
	// Seats are shown while a provider subscription bills them.
	if r.seats.Valid && sub.SubscriptionID != "" && perch.LiveSubscription(sub.Status) {
		n := int(r.seats.Int64)
		sub.Seats = &n
	}
	return &sub
}

// Subscription answers the organisation's billing state (ENOTFOUND for no
// such organisation).
func (s *Store) Subscription(ctx context.Context, orgID string) (*perch.Subscription, error) {
	return s.subscription(ctx, s.r, orgID)
}

func (s *Store) subscription(ctx context.Context, db querier, orgID string) (*perch.Subscription, error) {
	var r subscriptionRow
	if err := db.QueryRowContext(ctx, s.q(`SELECT `+subscriptionColumns+` FROM orgs o WHERE o.id = ?`), orgID).Scan(r.dest()...); err != nil {
		return nil, notFound(err, "Organisation")
	}
	return r.subscription(), nil
}

// BillingOutcome is what applying a provider event did.
type BillingOutcome struct {
	OrgID     string              // the organisation it concerns ("" when none was found, or it was Ignored)
	Duplicate bool                // the event (provider, id) was received before: nothing done
	Stale     bool                // older than the last event applied to the organisation: recorded, nothing changed
	Before    *perch.Subscription // nil when no organisation was found
	After     *perch.Subscription
	// Ignored, when not "", says why an event that names an organisation
	// (in its metadata, or by a checkout Perch opened) changed nothing:
	// it names another than the one its subscription, customer or
	// checkout is bound to, or it would bind an organisation without
	// completing a checkout that organisation opened. Recorded, nothing
	// changed; the caller logs it.
	Ignored string
	// Bound is the organisation the event's subscription, customer or
	// checkout is bound to, when it was Ignored for naming another ("" if
	// none is).
	Bound string
	// OtherProvider, with Ignored and Bound, says the organisation is
	// billed by another provider (this one): an organisation has one
	// provider while its subscription there is live, and an event of the
	// other is never applied to it.
	OtherProvider string
}

// maxBillingField bounds the provider's ids and event type as stored: the
// providers' own are a few dozen characters.
const maxBillingField = 255

// checkBillingEvent refuses an event that cannot be recorded or applied,
// naming every problem at once (EBADREQUEST).
func checkBillingEvent(ev perch.BillingEvent) error {
	var problems []string
	if ev.Provider != perch.BillingStripe && ev.Provider != perch.BillingPaddle {
		problems = append(problems, "its provider is neither stripe nor paddle")
	}
	if ev.ID == "" {
		problems = append(problems, "it has no id")
	}
	if ev.OccurredAt.IsZero() {
		problems = append(problems, "it does not say when it happened")
	}
	if ev.Status != "" && !perch.ValidPlanStatus(ev.Status) {
		problems = append(problems, "its status is not a plan status")
	}
	for _, f := range []struct{ name, v string }{
		{"id", ev.ID}, {"type", ev.Type}, {"organisation id", ev.OrgID}, {"checkout id", ev.CheckoutID},
		{"customer id", ev.CustomerID}, {"subscription id", ev.SubscriptionID},
	} {
		if len(f.v) > maxBillingField {
			problems = append(problems, "its "+f.name+" is longer than 255 bytes")
		}
	}
	if len(problems) > 0 {
		return perch.Errorf(perch.EBADREQUEST, "The billing event cannot be applied: %s.", strings.Join(problems, "; "))
	}
	return nil
}

// RecordCheckout remembers that the provider opened the checkout
// checkoutID (billing.Checkout.ID) for orgID: the event that completes it
// may bind the subscription and customer it makes to orgID, and nothing
// else may (ApplyBillingEvent). Recording the same checkout again changes
// nothing; an empty id or one longer than 255 bytes is EBADREQUEST.
func (s *Store) RecordCheckout(ctx context.Context, provider, checkoutID, orgID string) error {
	if checkoutID == "" || len(checkoutID) > maxBillingField {
		return perch.Errorf(perch.EBADREQUEST, "A checkout id is 1 to 255 bytes.")
	}
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO billing_checkouts (provider, checkout_id, org_id, created_at)
		VALUES (?, ?, ?, ?) ON CONFLICT (provider, checkout_id) DO NOTHING`), provider, checkoutID, orgID, ms(s.now()))
	return err
}

// ApplyBillingEvent records ev and applies it to its organisation in one
// transaction:
//   - (provider, id) recorded already → Duplicate (OrgID is the organisation
//     it was recorded for), nothing else. The insert into billing_events is
//     what detects it, so that two instances receiving the same event at
//     once apply it once.
//   - the organisation follows what is bound, never what the event says
//     alone (billingTarget): the one bound to ev's subscription, else to its
//     customer (orgs.billing_subscription_id, billing_customer_id); with
//     neither bound, the one that opened the checkout ev completes
//     (ev.CheckoutID, as RecordCheckout recorded it), which this event
//     binds. An event whose ev.OrgID (or checkout) names another
//     organisation than the bound one, or that names an organisation but
//     nothing binds, is Ignored (recorded, nothing changed, Bound saying
//     which organisation is bound); one that names nothing bound → OrgID ""
//     (recorded, nothing changed). Neither is an error.
//   - ev.OccurredAt before the organisation's last applied event → Stale
//     (recorded, nothing changed). Equal times apply: Stripe's have second
//     resolution.
//   - otherwise it sets the provider; the customer and subscription ids
//     when ev has them; the plan to plan when plan is not "" (the caller
//     maps ev.PriceID to a plan); the status when ev has one; the period
//     end, trial end and cancel flag when ev's pointers are set; and the
//     time of the last applied event. A status of active, past_due or
//     canceled ends the trial-notice cycle (trial_notice_at is cleared, so
//     a later trial is told afresh); the trial end stays as it is.
//
// The organisation's row is held (FOR UPDATE on PostgreSQL; SQLite has one
// writer) while deciding. An event that cannot be stored or applied, or a
// plan that does not exist, is EBADREQUEST and records nothing.
func (s *Store) ApplyBillingEvent(ctx context.Context, ev perch.BillingEvent, plan string) (*BillingOutcome, error) {
	if err := checkBillingEvent(ev); err != nil {
		return nil, err
	}
	var out *BillingOutcome
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = &BillingOutcome{}
		if plan != "" {
			var n int
			if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM plans WHERE slug = ?`), plan).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return perch.Errorf(perch.EBADREQUEST, "The billing event cannot be applied: there is no plan %q.", plan)
			}
		}
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO billing_events (provider, event_id, org_id, type, received_at)
			VALUES (?, ?, '', ?, ?) ON CONFLICT (provider, event_id) DO NOTHING`), ev.Provider, ev.ID, ev.Type, ms(s.now()))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			out.Duplicate = true
			return tx.QueryRowContext(ctx, s.q(`SELECT org_id FROM billing_events WHERE provider = ? AND event_id = ?`),
				ev.Provider, ev.ID).Scan(&out.OrgID)
		}
		target, err := s.billingTarget(ctx, tx, ev)
		if err != nil || target.orgID == "" {
			out.Ignored, out.Bound, out.OtherProvider = target.ignored, target.bound, target.otherProvider
			return err
		}
		out.OrgID = target.orgID
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE billing_events SET org_id = ? WHERE provider = ? AND event_id = ?`),
			out.OrgID, ev.Provider, ev.ID); err != nil {
			return err
		}
		if out.Before, err = s.subscription(ctx, tx, out.OrgID); err != nil {
			return err
		}
		if !out.Before.LastEventAt.IsZero() && ms(ev.OccurredAt) < ms(out.Before.LastEventAt) {
			out.Stale = true
			after := *out.Before
			out.After = &after
			return nil
		}
		sets, args := billingSets(ev, plan)
		res, err = tx.ExecContext(ctx, s.q(`UPDATE orgs SET `+strings.Join(sets, `, `)+` WHERE id = ?`), append(args, out.OrgID)...)
		if err := expectOne(res, err, "Organisation"); err != nil {
			return err
		}
		if out.After, err = s.subscription(ctx, tx, out.OrgID); err != nil {
			return err
		}
		// A new or changed subscription bills what it bills: when that is
		// not the seat count, the seat job sets it.
		return s.queueSeatJobs(ctx, tx, true, out.OrgID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// billingSets answers the assignments (with their arguments) that apply ev
// to an organisation: what ev speaks of, and nothing else.
func billingSets(ev perch.BillingEvent, plan string) ([]string, []any) {
	sets := []string{`billing_provider = ?`, `billing_event_at = ?`}
	args := []any{ev.Provider, ms(ev.OccurredAt)}
	set := func(assign string, v any) { sets, args = append(sets, assign), append(args, v) }
	if ev.CustomerID != "" {
		set(`billing_customer_id = ?`, ev.CustomerID)
	}
	if ev.SubscriptionID != "" {
		set(`billing_subscription_id = ?`, ev.SubscriptionID)
	}
	if plan != "" {
		set(`plan = ?`, plan)
	}
	if ev.Status != "" {
		set(`plan_status = ?`, ev.Status)
		switch ev.Status {
		case perch.PlanActive, perch.PlanPastDue, perch.PlanCanceled:
			sets = append(sets, `trial_notice_at = NULL`)
		}
	}
	if ev.PeriodEnd != nil {
		set(`current_period_end = ?`, ms(*ev.PeriodEnd))
	}
	if ev.TrialEndsAt != nil {
		set(`trial_ends_at = ?`, ms(*ev.TrialEndsAt))
	}
	if ev.CancelAtPeriodEnd != nil {
		set(`cancel_at_period_end = ?`, *ev.CancelAtPeriodEnd)
	}
	if ev.Seats != nil {
		set(`billing_seats = ?`, *ev.Seats)
	}
	return sets, args
}

// eventTarget is the organisation an event may change: orgID, or "" with
// why not (ignored; "" when the event names nothing of this server's) and
// the organisation bound to what it names.
type eventTarget struct {
	orgID, ignored, bound, otherProvider string
}

// billingTarget finds the organisation ev may change and holds its row
// until tx ends (on PostgreSQL; SQLite's single writer holds everything).
//
// A provider's subscription and customer are bound to the organisation
// whose row holds their ids; an event about them changes that one, and
// only when neither ev.OrgID nor the checkout ev completes names another.
// Unbound, they are bound by the event that completes a checkout Perch
// opened (ev.CheckoutID, recorded by RecordCheckout) to the organisation
// that opened it: the only first binding there is. What an event says in
// its metadata (ev.OrgID) is a claim anyone able to pay the provider can
// make (Stripe's payment links take a client_reference_id from the URL;
// Paddle.js takes customData from the page), so it is never followed
// alone. Should two organisations share a provider's id, the oldest is
// taken, the same every time.
func (s *Store) billingTarget(ctx context.Context, tx *sql.Tx, ev perch.BillingEvent) (eventTarget, error) {
	lock := ""
	if s.dialect == Postgres {
		lock = ` FOR UPDATE`
	}
	lookup := func(query string, args ...any) (string, error) {
		var id string
		err := tx.QueryRowContext(ctx, s.q(query+lock), args...).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return "", nil
		}
		return id, err
	}
	var bound, opened string
	var err error
	if ev.SubscriptionID != "" {
		if bound, err = lookup(`SELECT id FROM orgs WHERE billing_provider = ? AND billing_subscription_id = ?
			ORDER BY created_at, id LIMIT 1`, ev.Provider, ev.SubscriptionID); err != nil {
			return eventTarget{}, err
		}
	}
	if bound == "" && ev.CustomerID != "" {
		if bound, err = lookup(`SELECT id FROM orgs WHERE billing_provider = ? AND billing_customer_id = ?
			ORDER BY created_at, id LIMIT 1`, ev.Provider, ev.CustomerID); err != nil {
			return eventTarget{}, err
		}
	}
	if ev.CheckoutID != "" {
		// The organisation's row is what is held; the checkout is read plainly.
		err := tx.QueryRowContext(ctx, s.q(`SELECT org_id FROM billing_checkouts WHERE provider = ? AND checkout_id = ?`),
			ev.Provider, ev.CheckoutID).Scan(&opened)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return eventTarget{}, err
		}
	}
	// Whoever is bound decides; else the checkout's organisation binds.
	target := cmp.Or(bound, opened)
	// One provider per organisation: whatever the event names, or
	// completes, an organisation with a live subscription at the other
	// provider is that provider's.
	if named := cmp.Or(target, ev.OrgID); named != "" {
		other, err := s.otherProvider(ctx, tx, named, ev.Provider)
		if err != nil || other != "" {
			return eventTarget{ignored: "The organisation it concerns is billed through " + other + ", not " + ev.Provider +
				": an organisation has one payment provider while its subscription there is live.", bound: named, otherProvider: other}, err
		}
	}
	switch {
	case target == "" && ev.OrgID == "":
		return eventTarget{}, nil
	case target == "":
		return eventTarget{ignored: "It names an organisation, but neither its subscription nor its customer is linked to one, " +
			"and it completes no checkout Perch opened: only such a checkout links them."}, nil
	case ev.OrgID != "" && ev.OrgID != target, opened != "" && opened != target:
		return eventTarget{ignored: "It names another organisation than the one its subscription, customer or checkout is linked to.",
			bound: target}, nil
	}
	// Held (the bound one is already); gone with its checkouts, were it deleted.
	id, err := lookup(`SELECT id FROM orgs WHERE id = ?`, target)
	return eventTarget{orgID: id}, err
}

// otherProvider answers the provider, other than provider, through which
// orgID has a live subscription (perch.LiveSubscription), or "".
func (s *Store) otherProvider(ctx context.Context, tx *sql.Tx, orgID, provider string) (string, error) {
	var bound, subscription, status string
	err := tx.QueryRowContext(ctx, s.q(`SELECT billing_provider, billing_subscription_id, plan_status FROM orgs WHERE id = ?`), orgID).
		Scan(&bound, &subscription, &status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", err
	case bound != "" && bound != provider && subscription != "" && perch.LiveSubscription(status):
		return bound, nil
	}
	return "", nil
}

// ExpiredTrial is an organisation ExpireTrials moved to solo, with the plan
// it was on.
type ExpiredTrial struct{ OrgID, Plan string }

// ExpireTrials moves every organisation whose trial ended before now
// without a subscription (status trialing, trial_ends_at < now, no
// billing_subscription_id) to plan solo with status none, and answers their
// ids and previous plans, by id. Running it on two instances at once moves
// each organisation once: on PostgreSQL it is one UPDATE … RETURNING over
// the rows it locks (re-checked once a concurrent move commits); on SQLite
// the read and the update share one write transaction, which holds the
// database's single write lock from its start.
func (s *Store) ExpireTrials(ctx context.Context, now time.Time) ([]ExpiredTrial, error) {
	at := ms(now)
	var out []ExpiredTrial
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if s.dialect == Postgres {
			// The locking read skips a row that a concurrent move changed
			// (it re-checks the condition once the other commits), and the
			// update re-checks it too. Locking by id keeps two instances from
			// taking the same rows in different orders.
			rows, err := tx.QueryContext(ctx, `WITH due AS (
					SELECT id, plan FROM orgs
					WHERE plan_status = $1 AND trial_ends_at < $2 AND billing_subscription_id = '' ORDER BY id FOR UPDATE)
				UPDATE orgs o SET plan = $3, plan_status = $4 FROM due
				WHERE o.id = due.id AND o.plan_status = $1 AND o.trial_ends_at < $2 AND o.billing_subscription_id = ''
				RETURNING o.id, due.plan`, perch.PlanTrialing, at, "solo", perch.PlanNone)
			out, err = scanExpiredTrials(rows, err)
			return err
		}
		const due = `plan_status = ? AND trial_ends_at < ? AND billing_subscription_id = ''`
		var err error
		if out, err = scanExpiredTrials(tx.QueryContext(ctx, `SELECT id, plan FROM orgs WHERE `+due, perch.PlanTrialing, at)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE orgs SET plan = ?, plan_status = ? WHERE `+due, "solo", perch.PlanNone, perch.PlanTrialing, at)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b ExpiredTrial) int { return strings.Compare(a.OrgID, b.OrgID) })
	return out, nil
}

// scanExpiredTrials reads rows of (id, plan).
func scanExpiredTrials(rows *sql.Rows, err error) ([]ExpiredTrial, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ExpiredTrial{}
	for rows.Next() {
		var e ExpiredTrial
		if err := rows.Scan(&e.OrgID, &e.Plan); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// TrialEnding is an organisation whose trial ends soon, claimed by
// TrialsEndingSoon for the notice.
type TrialEnding struct {
	OrgID  string
	EndsAt time.Time
}

// TrialsEndingSoon claims the organisations still trialing without a
// subscription whose trial ends within `within` of now (after now, at most
// now+within) and that were not told yet (trial_notice_at unset, or before
// the current trial end minus within: told about an earlier trial), marks
// them told (trial_notice_at = now), and answers them by trial end. It is
// one UPDATE … RETURNING: each organisation is claimed once across
// instances.
func (s *Store) TrialsEndingSoon(ctx context.Context, now time.Time, within time.Duration) ([]TrialEnding, error) {
	at, span := ms(now), within.Milliseconds()
	rows, err := s.w.QueryContext(ctx, s.q(`UPDATE orgs SET trial_notice_at = ?
		WHERE plan_status = ? AND billing_subscription_id = '' AND trial_ends_at > ? AND trial_ends_at <= ?
			AND (trial_notice_at IS NULL OR trial_notice_at < trial_ends_at - ?)
		RETURNING id, trial_ends_at`), at, perch.PlanTrialing, at, at+span, span)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []TrialEnding{}
	for rows.Next() {
		var t TrialEnding
		var ends int64
		if err := rows.Scan(&t.OrgID, &ends); err != nil {
			return nil, err
		}
		t.EndsAt = fromMS(ends)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b TrialEnding) int {
		if c := a.EndsAt.Compare(b.EndsAt); c != 0 {
			return c
		}
		return strings.Compare(a.OrgID, b.OrgID)
	})
	return out, nil
}

// OrgOwnersAndAdmins answers the ids of the organisation's owners and
// admins (enabled accounts only), by when they joined: who billing notices
// go to. An unknown organisation has none.
func (s *Store) OrgOwnersAndAdmins(ctx context.Context, orgID string) ([]string, error) {
	ids, err := column[string](s.r.QueryContext(ctx, s.q(`SELECT id FROM users
		WHERE org_id = ? AND org_role IN (?, ?) AND disabled_at IS NULL ORDER BY joined_at, id`),
		orgID, perch.RoleOwner, perch.RoleAdmin))
	if ids == nil && err == nil {
		ids = []string{}
	}
	return ids, err
}

// PruneBillingEvents deletes the billing events received, and the
// checkouts opened (RecordCheckout), before `before`, answering how many
// events. A redelivery older than that is no longer recognised as one, and
// a checkout completed later binds nothing, which is why the caller keeps
// them for 90 days: far longer than the providers retry, or keep a
// checkout open (a day at Stripe).
func (s *Store) PruneBillingEvents(ctx context.Context, before time.Time) (int64, error) {
	if _, err := s.w.ExecContext(ctx, s.q(`DELETE FROM billing_checkouts WHERE created_at < ?`), ms(before)); err != nil {
		return 0, err
	}
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM billing_events WHERE received_at < ?`), ms(before))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
