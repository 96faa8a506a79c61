package ratelimit

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/perch-dev/perch"
)

// Fallback counts with a shared limiter (Redis) and, while that one fails,
// with a local one: the limits then hold per instance instead of across
// the cluster, rather than not at all.
type Fallback struct {
	Shared, Local perch.RateLimiter
	Log           *slog.Logger

	down atomic.Bool // the shared limiter failed last time; logged once
}

var _ perch.RateLimiter = (*Fallback)(nil)

// Allow counts with Shared, or with Local when Shared fails.
func (f *Fallback) Allow(ctx context.Context, key string, l perch.Limit, n int) (perch.RateResult, error) {
	res, err := f.Shared.Allow(ctx, key, l, n)
	if err == nil {
		if f.down.Swap(false) && f.Log != nil {
			f.Log.Info("shared rate limits are back")
		}
		return res, nil
	}
	if !f.down.Swap(true) && f.Log != nil {
		f.Log.Warn("shared rate limits unavailable; limiting per instance until they are back", "err", err)
	}
	return f.Local.Allow(ctx, key, l, n)
}
