package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/perch-dev/perch"
)

// InstanceStale is how long an instance's last heartbeat counts: the
// clients of an instance not heard from for longer are not counted.
const InstanceStale = time.Minute

// instanceForgotten is how long the row of an instance that stopped
// without saying so (a crash) is kept.
const instanceForgotten = time.Hour

// Heartbeat records that the server instance id is running and holds
// clients WebSocket clients, and deletes the rows of instances not heard
// from for an hour.
func (s *Store) Heartbeat(ctx context.Context, id string, clients int) error {
	now := s.now()
	if _, err := s.w.ExecContext(ctx, s.q(`INSERT INTO instances (id, clients, seen_at) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET clients = excluded.clients, seen_at = excluded.seen_at`),
		id, clients, ms(now)); err != nil {
		return err
	}
	_, err := s.w.ExecContext(ctx, s.q(`DELETE FROM instances WHERE seen_at < ?`), ms(now.Add(-instanceForgotten)))
	return err
}

// DropInstance forgets the instance id, which is stopping.
func (s *Store) DropInstance(ctx context.Context, id string) error {
	_, err := s.w.ExecContext(ctx, s.q(`DELETE FROM instances WHERE id = ?`), id)
	return err
}

// realOrgs is the condition on a column of organisation ids that leaves
// out Perch's own organisation, which authors the starter workflows
// (StarterOrgID): it is no customer, so no count an operator reads holds
// it or its workflows.
func realOrgs(column string) string { return column + ` <> '` + StarterOrgID + `'` }

// MetricsSummary counts what GET /admin/metrics/summary shows, at the
// store's clock, every figure from the rows it names (docs/DESIGN.md,
// Metrics): active users are those who signed in or renewed a sign-in in
// the last 7 days; workflows are every workflow of a real organisation,
// enabled or not; workflow runs are the runs recorded in the last 24
// hours. Perch's own organisation (StarterOrgID) is in none of them.
func (s *Store) MetricsSummary(ctx context.Context) (*perch.MetricsSummary, error) {
	now := s.now()
	day, week := ms(now.Add(-24*time.Hour)), ms(now.Add(-7*24*time.Hour))
	m := &perch.MetricsSummary{}
	var mrrCents int64
	counts := []struct {
		dest  *int64
		query string
		args  []any
	}{
		{&m.Users, `SELECT COUNT(*) FROM users`, nil},
		{&m.UsersActive7d, `SELECT COUNT(DISTINCT s.user_id) FROM session_tokens t JOIN sessions s ON s.id = t.session_id
			WHERE t.kind = 'refresh' AND t.created_at >= ?`, []any{week}},
		{&m.Orgs, `SELECT COUNT(*) FROM orgs WHERE ` + realOrgs("id"), nil},
		{&mrrCents, `SELECT COALESCE(SUM(p.price_monthly_cents), 0) FROM orgs o JOIN plans p ON p.slug = o.plan
			WHERE o.plan_status = 'active' AND ` + realOrgs("o.id"), nil},
		{&m.ConnectedClients, `SELECT COALESCE(SUM(clients), 0) FROM instances WHERE seen_at >= ?`, []any{ms(now.Add(-InstanceStale))}},
		{&m.WebhookTokens, `SELECT COUNT(*) FROM webhook_tokens`, nil},
		{&m.Workflows, `SELECT COUNT(*) FROM workflows WHERE ` + realOrgs("org_id"), nil},
		{&m.WorkflowRuns24h, `SELECT COUNT(*) FROM workflow_runs WHERE created_at >= ? AND ` + realOrgs("org_id"), []any{day}},
	}
	for _, c := range counts {
		if err := s.r.QueryRowContext(ctx, s.q(c.query), c.args...).Scan(c.dest); err != nil {
			return nil, err
		}
	}
	m.MRR = float64(mrrCents) / 100
	var err error
	if m.OrgsByPlan, err = s.countBy(ctx, `SELECT p.slug, COUNT(o.id) FROM plans p LEFT JOIN orgs o ON o.plan = p.slug AND `+realOrgs("o.id")+` GROUP BY p.slug`); err != nil {
		return nil, err
	}
	if m.SubscriptionsByStatus, err = s.countBy(ctx, `SELECT plan_status, COUNT(*) FROM orgs WHERE `+realOrgs("id")+` GROUP BY plan_status`); err != nil {
		return nil, err
	}
	first, err := s.notificationAt(ctx, day)
	if err != nil {
		return nil, err
	}
	if m.NotificationsBySource24h, err = s.countBy(ctx, `SELECT source, COUNT(*) FROM notifications
		WHERE id >= ? AND created_at >= ? GROUP BY source`, first, day); err != nil {
		return nil, err
	}
	for _, n := range m.NotificationsBySource24h {
		m.Notifications24h += n
	}
	return m, nil
}

// countBy reads a query of (name, count) rows into a map.
func (s *Store) countBy(ctx context.Context, query string, args ...any) (map[string]int64, error) {
	rows, err := s.r.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, err
		}
		out[k] = n
	}
	return out, rows.Err()
}

// notificationAt returns the lowest id of the notifications stored at or
// after at (Unix ms), or one past the highest id when there are none. There
// is no index on created_at (it cost every insert; see migration 00005),
// but ids grow with it, as retention relies on too: a binary search over
// ids finds the boundary in a few dozen primary-key lookups, and a count
// then reads only the range it covers.
func (s *Store) notificationAt(ctx context.Context, at int64) (int64, error) {
	var lo, hi int64
	if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MIN(id), 0), COALESCE(MAX(id), 0) + 1 FROM notifications`).Scan(&lo, &hi); err != nil {
		return 0, err
	}
	// The answer is in [lo, hi]: hi stands for "none".
	for lo < hi {
		mid := lo + (hi-lo)/2
		var created int64
		err := s.r.QueryRowContext(ctx, s.q(`SELECT created_at FROM notifications WHERE id >= ? ORDER BY id LIMIT 1`), mid).Scan(&created)
		switch {
		case errors.Is(err, sql.ErrNoRows): // pruned meanwhile: nothing at or after mid
			hi = mid
		case err != nil:
			return 0, err
		case created >= at:
			hi = mid
		default:
			lo = mid + 1
		}
	}
	return lo, nil
}

// MetricSeries counts q.Metric in each bucket of q (perch.MetricQuery.Buckets),
// every bucket present, zeros included. Active users are the distinct users
// who signed in or renewed a sign-in in a bucket, as far back as sign-ins
// are kept (perch.RefreshTokenTTL); workflow runs are the runs recorded in a
// bucket (kept as long as notifications), of real organisations.
func (s *Store) MetricSeries(ctx context.Context, q perch.MetricQuery) ([]perch.MetricPoint, error) {
	points := q.Buckets()
	step := q.Step().Milliseconds()
	start := ms(points[0].T)
	end := start + step*int64(len(points))
	var query string
	args := []any{start, step}
	switch q.Metric {
	case perch.MetricNotifications:
		first, err := s.notificationAt(ctx, start)
		if err != nil {
			return nil, err
		}
		last, err := s.notificationAt(ctx, end)
		if err != nil {
			return nil, err
		}
		query = `SELECT (created_at - ?) / ?, COUNT(*) FROM notifications
			WHERE id >= ? AND id < ? AND created_at >= ? AND created_at < ? GROUP BY 1`
		args = append(args, first, last)
	case perch.MetricSignups:
		query = `SELECT (created_at - ?) / ?, COUNT(*) FROM users WHERE created_at >= ? AND created_at < ? GROUP BY 1`
	case perch.MetricActiveUsers:
		query = `SELECT (t.created_at - ?) / ?, COUNT(DISTINCT s.user_id) FROM session_tokens t JOIN sessions s ON s.id = t.session_id
			WHERE t.kind = 'refresh' AND t.created_at >= ? AND t.created_at < ? GROUP BY 1`
	case perch.MetricWorkflowRuns:
		query = `SELECT (created_at - ?) / ?, COUNT(*) FROM workflow_runs WHERE ` + realOrgs("org_id") + `
			AND created_at >= ? AND created_at < ? GROUP BY 1`
	default:
		return nil, perch.Errorf(perch.EBADREQUEST, "There is no metric %q.", q.Metric)
	}
	args = append(args, start, end)
	rows, err := s.r.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var bucket, n int64
		if err := rows.Scan(&bucket, &n); err != nil {
			return nil, err
		}
		if bucket >= 0 && bucket < int64(len(points)) {
			points[bucket].Value = n
		}
	}
	return points, rows.Err()
}
