package store

import (
	"context"

	"github.com/perch-dev/perch"
)

// Plans lists the billing plans in display order.
func (s *Store) Plans(ctx context.Context) ([]*perch.Plan, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT slug, name, price_monthly_cents, max_seats FROM plans ORDER BY position, slug`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	plans := []*perch.Plan{}
	for rows.Next() {
		var p perch.Plan
		var cents int64
		if err := rows.Scan(&p.Slug, &p.Name, &cents, &p.MaxSeats); err != nil {
			return nil, err
		}
		p.PriceMonthly = float64(cents) / 100
		plans = append(plans, &p)
	}
	return plans, rows.Err()
}
