package store

import (
	"context"
	"strconv"
	"time"
)

// RunJob runs fn unless it ran (or started) less than every ago, and reports
// whether it ran. However many instances share the database and call RunJob
// on their own schedules, a job runs once per period: an instance first
// claims the period with one conditional write of the job's start time,
// which only one of them can win.
func (s *Store) RunJob(ctx context.Context, name string, every time.Duration, fn func(context.Context) error) (ran bool, err error) {
	now := s.now()
	res, err := s.w.ExecContext(ctx, s.q(`INSERT INTO settings (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value
		WHERE CAST(settings.value AS BIGINT) <= ?`),
		"job."+name+".started", strconv.FormatInt(ms(now), 10), ms(now.Add(-every)))
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err // claimed by another instance, or done recently
	}
	return true, fn(ctx)
}
