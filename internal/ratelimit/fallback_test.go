package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/perch-dev/perch"
)

// broken is a shared limiter that cannot be reached.
type broken struct{}

func (broken) Allow(context.Context, string, perch.Limit, int) (perch.RateResult, error) {
	return perch.RateResult{}, errors.New("redis: connection refused")
}

func TestFallbackLimitsLocallyWhileTheSharedLimiterIsDown(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	local := NewMemory()
	local.Now = c.now
	f := &Fallback{Shared: broken{}, Local: local}
	l := perch.Limit{Count: 2, Period: time.Minute}
	for i := range 2 {
		if res, err := f.Allow(context.Background(), "k", l, 1); err != nil || !res.Allowed {
			t.Fatalf("request %d: %+v, %v", i, res, err)
		}
	}
	if res, err := f.Allow(context.Background(), "k", l, 1); err != nil || res.Allowed {
		t.Fatalf("third request: %+v, %v; want refused by the local limit", res, err)
	}
}
