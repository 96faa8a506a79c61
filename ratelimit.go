package perch

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limit is a rate: at most Count requests per Period, in bursts of up to
// Count.
type Limit struct {
	Count  int
	Period time.Duration
}

func (l Limit) String() string { return fmt.Sprintf("%d/%s", l.Count, l.Period) }

// ParseLimit reads a limit written "N/period", such as "120/1m" or "10/15m".
func ParseLimit(s string) (Limit, error) {
	n, p, ok := strings.Cut(strings.TrimSpace(s), "/")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count <= 0 {
		return Limit{}, fmt.Errorf("rate limit %q: want N/period, e.g. 120/1m", s)
	}
	period, err := time.ParseDuration(p)
	if err != nil || period <= 0 {
		return Limit{}, fmt.Errorf("rate limit %q: bad period: want a duration such as 1m or 15m", s)
	}
	return Limit{Count: count, Period: period}, nil
}

// RateResult is a limiter's verdict on one request.
type RateResult struct {
	Allowed    bool
	Limit      int
	Remaining  int
	RetryAfter time.Duration // until the next request would be allowed, when not Allowed
	ResetAfter time.Duration // until the allowance is whole again
}

// RateLimiter decides whether n more units counted against key may go ahead:
// requests, mostly, or the notifications an anonymous delivery would make.
// A refusal spends nothing. Implementations: in-process (one instance) and
// Redis (many).
type RateLimiter interface {
	Allow(ctx context.Context, key string, l Limit, n int) (RateResult, error)
}
