package store

import (
	"context"
	"database/sql"
	"strings"

	"github.com/perch-dev/perch"
)

const adminOrgColumns = `o.id, o.name, o.plan, o.plan_status, (SELECT COUNT(*) FROM users u WHERE u.org_id = o.id), p.max_seats, o.created_at`

const adminOrgFrom = ` FROM orgs o JOIN plans p ON p.slug = o.plan`

func scanAdminOrg(row interface{ Scan(...any) error }, extra ...any) (*perch.AdminOrg, error) {
	var o perch.AdminOrg
	var created int64
	if err := row.Scan(append([]any{&o.ID, &o.Name, &o.Plan, &o.Status, &o.SeatCount, &o.MaxSeats, &created}, extra...)...); err != nil {
		return nil, err
	}
	o.CreatedAt = fromMS(created)
	return &o, nil
}

// Orgs answers one page of every organisation but Perch's own
// (StarterOrgID), newest first: those whose
// name or slug holds q without regard to case, or whose id is q; all of
// them when q is "". The second result is the cursor of the next page, ""
// after the last; a cursor this store did not answer is EBADREQUEST.
func (s *Store) Orgs(ctx context.Context, q string, page perch.Page) ([]*perch.AdminOrg, string, error) {
	where := []string{realOrgs("o.id")}
	var args []any
	if q = strings.TrimSpace(q); q != "" {
		like := containsPattern(q)
		where = append(where, `(lower(o.name) LIKE ? ESCAPE '\' OR o.slug LIKE ? ESCAPE '\' OR o.id = ?)`)
		args = append(args, like, like, q)
	}
	if err := afterCursor(page.Cursor, "o", &where, &args); err != nil {
		return nil, "", err
	}
	query := `SELECT ` + adminOrgColumns + adminOrgFrom + whereClause(where) + ` ORDER BY o.created_at DESC, o.id DESC LIMIT ?`
	rows, err := s.r.QueryContext(ctx, s.q(query), append(args, page.Limit+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	orgs := []*perch.AdminOrg{}
	for rows.Next() {
		o, err := scanAdminOrg(rows)
		if err != nil {
			return nil, "", err
		}
		orgs = append(orgs, o)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(orgs) > page.Limit {
		orgs = orgs[:page.Limit]
		last := orgs[len(orgs)-1]
		next = encodeCursor(last.CreatedAt, last.ID)
	}
	return orgs, next, nil
}

// AdminOrg returns one organisation as the operators see it, with its
// owners, or ENOTFOUND.
func (s *Store) AdminOrg(ctx context.Context, id string) (*perch.AdminOrgDetail, error) {
	return s.adminOrg(ctx, s.r, id)
}

func (s *Store) adminOrg(ctx context.Context, db querier, id string) (*perch.AdminOrgDetail, error) {
	d := &perch.AdminOrgDetail{}
	var trial sql.NullInt64
	o, err := scanAdminOrg(db.QueryRowContext(ctx, s.q(`SELECT `+adminOrgColumns+`, o.slug, o.trial_ends_at,
			(SELECT COUNT(*) FROM invitations i WHERE i.org_id = o.id AND i.status = 'pending' AND i.expires_at > ?),
			(SELECT COUNT(*) FROM teams t WHERE t.org_id = o.id)`+adminOrgFrom+` WHERE o.id = ?`), ms(s.now()), id),
		&d.Slug, &trial, &d.PendingInvitations, &d.Teams)
	if err != nil {
		return nil, notFound(err, "Organisation")
	}
	d.AdminOrg, d.TrialEndsAt = *o, fromNullMS(trial)
	rows, err := db.QueryContext(ctx, s.q(`SELECT id, name, email FROM users WHERE org_id = ? AND org_role = 'owner' ORDER BY joined_at, id`), id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	d.Owners = []perch.OrgOwner{}
	for rows.Next() {
		var w perch.OrgOwner
		if err := rows.Scan(&w.ID, &w.Name, &w.Email); err != nil {
			return nil, err
		}
		d.Owners = append(d.Owners, w)
	}
	return d, rows.Err()
}

// UpdateOrgAsAdmin changes an organisation's plan, plan status or trial end
// and returns it before and after. The plan must exist (the caller
// validates it, for a 422 that names every problem); an unknown
// organisation is ENOTFOUND.
func (s *Store) UpdateOrgAsAdmin(ctx context.Context, id string, upd perch.AdminOrgUpdate) (before, after *perch.AdminOrgDetail, err error) {
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if before, err = s.adminOrg(ctx, tx, id); err != nil {
			return err
		}
		var sets []string
		var args []any
		if upd.Plan != nil {
			sets, args = append(sets, `plan = ?`), append(args, *upd.Plan)
		}
		if upd.Status != nil {
			sets, args = append(sets, `plan_status = ?`), append(args, *upd.Status)
		}
		if upd.SetTrialEndsAt {
			var trial sql.NullInt64
			if upd.TrialEndsAt != nil {
				trial = sql.NullInt64{Int64: ms(*upd.TrialEndsAt), Valid: true}
			}
			sets, args = append(sets, `trial_ends_at = ?`), append(args, trial)
		}
		if len(sets) > 0 {
			res, err := tx.ExecContext(ctx, s.q(`UPDATE orgs SET `+strings.Join(sets, `, `)+` WHERE id = ?`), append(args, id)...)
			if err := expectOne(res, err, "Organisation"); err != nil {
				return err
			}
		}
		after, err = s.adminOrg(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return before, after, nil
}

// PlansWithSubscribers lists the billing plans in display order, each with
// how many organisations are on it in any status but canceled (Perch's own
// organisation, StarterOrgID, left out).
func (s *Store) PlansWithSubscribers(ctx context.Context) ([]*perch.AdminPlan, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT p.slug, p.name, p.price_monthly_cents, p.max_seats,
			(SELECT COUNT(*) FROM orgs o WHERE o.plan = p.slug AND o.plan_status <> ? AND `+realOrgs("o.id")+`)
		FROM plans p ORDER BY p.position, p.slug`), perch.PlanCanceled)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	plans := []*perch.AdminPlan{}
	for rows.Next() {
		var p perch.AdminPlan
		var cents int64
		if err := rows.Scan(&p.Slug, &p.Name, &cents, &p.MaxSeats, &p.Subscribers); err != nil {
			return nil, err
		}
		p.PriceMonthly = float64(cents) / 100
		plans = append(plans, &p)
	}
	return plans, rows.Err()
}
