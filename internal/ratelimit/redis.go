package ratelimit

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/perch-dev/perch"
)

// Redis is a limiter whose counts live in Redis, shared by every instance
// that uses the same server and prefix. It implements GCRA (a token bucket
// kept as one timestamp per key) with redis_rate: the allowance refills
// continuously at Count per Period and holds at most Count, as Memory's
// does. Idle keys expire on their own once their allowance is whole.
type Redis struct {
	limiter *redis_rate.Limiter
	prefix  string
}

var _ perch.RateLimiter = (*Redis)(nil)

// NewRedis returns a limiter that keeps its counts in client under keys
// starting "rate:" + prefix.
func NewRedis(client *redis.Client, prefix string) *Redis {
	return &Redis{limiter: redis_rate.NewLimiter(client), prefix: prefix}
}

// Allow counts n units against key. Like Memory, it counts each limit
// separately: the same key under two limits has two allowances. It fails
// when Redis cannot be reached within ctx, or when l is not a valid limit.
func (r *Redis) Allow(ctx context.Context, key string, l perch.Limit, n int) (perch.RateResult, error) {
	if l.Count <= 0 || l.Period <= 0 {
		return perch.RateResult{}, fmt.Errorf("ratelimit: invalid limit %s", l)
	}
	res, err := r.limiter.AllowN(ctx, r.prefix+l.String()+":"+key, redis_rate.Limit{Rate: l.Count, Burst: l.Count, Period: l.Period}, n)
	if err != nil {
		return perch.RateResult{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	out := perch.RateResult{
		Allowed:    res.Allowed > 0,
		Limit:      l.Count,
		Remaining:  res.Remaining,
		ResetAfter: max(0, res.ResetAfter),
	}
	// A refusal of several units may leave some: redis_rate says 0 then.
	out.Remaining = max(out.Remaining, remaining(l, res.ResetAfter))
	if !out.Allowed {
		out.RetryAfter = res.RetryAfter // -1 when allowed
	}
	return out, nil
}

// remaining works out the allowance left from ResetAfter, as redis_rate's
// script does, but with a rounding margin. The script truncates a float
// that, when Period/Count has no exact binary form (2/200ms, 7/13s), comes
// out a hair under the whole number: the first request of a fresh key then
// reports one request fewer than is left.
func remaining(l perch.Limit, resetAfter time.Duration) int {
	used := resetAfter.Seconds() * float64(l.Count) / l.Period.Seconds()
	return max(0, int(math.Floor(float64(l.Count)-used+1e-6)))
}
