package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/testenv"
)

// limiter is an implementation under test and the clock it runs on.
type limiter struct {
	perch.RateLimiter
	// advance moves a fake clock on by d; nil when the limiter runs on
	// real time (Redis's clock).
	advance func(d time.Duration)
}

// forEachLimiter runs fn on a fresh Memory, on a fake clock, and on a fresh
// Redis limiter when PERCH_TEST_REDIS_URL is set.
func forEachLimiter(t *testing.T, fn func(t *testing.T, lim limiter)) {
	t.Run("memory", func(t *testing.T) {
		c := &clock{t: time.Unix(1_800_000_000, 0)}
		m := NewMemory()
		m.Now = c.now
		fn(t, limiter{m, func(d time.Duration) { c.t = c.t.Add(d) }})
	})
	t.Run("redis", func(t *testing.T) {
		fn(t, limiter{RateLimiter: NewRedis(newRedisClient(t), uniquePrefix(t))})
	})
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestAllowsABurstThenRefuses(t *testing.T) {
	t.Parallel()
	forEachLimiter(t, func(t *testing.T, lim limiter) {
		// A long period, so that real time refills nothing meanwhile.
		l := perch.Limit{Count: 10, Period: 15 * time.Minute}
		for i := range 10 {
			res := allow(t, lim, "1.2.3.4", l)
			if !res.Allowed || res.Remaining != 9-i || res.Limit != 10 || res.RetryAfter != 0 {
				t.Fatalf("request %d: %+v", i+1, res)
			}
		}
		res := allow(t, lim, "1.2.3.4", l)
		if res.Allowed || res.Remaining != 0 || res.Limit != 10 {
			t.Fatalf("11th request: %+v", res)
		}
		if res.RetryAfter <= 0 || res.RetryAfter > 90*time.Second {
			t.Errorf("11th request: RetryAfter %s, want within one refill interval, 90s", res.RetryAfter)
		}
		if res.ResetAfter <= 14*time.Minute || res.ResetAfter > 15*time.Minute {
			t.Errorf("11th request: ResetAfter %s, want about the period, 15m", res.ResetAfter)
		}
	})
}

// TestCountsSeveralUnitsAtOnce: an anonymous delivery counts the
// notifications it would make; a refusal spends nothing.
func TestCountsSeveralUnitsAtOnce(t *testing.T) {
	t.Parallel()
	forEachLimiter(t, func(t *testing.T, lim limiter) {
		l := perch.Limit{Count: 10, Period: 15 * time.Minute}
		steps := []struct {
			n         int
			allowed   bool
			remaining int
		}{{4, true, 6}, {7, false, 6}, {6, true, 0}, {1, false, 0}, {11, false, 0}}
		for i, st := range steps {
			res, err := lim.Allow(context.Background(), "k", l, st.n)
			if err != nil || res.Allowed != st.allowed || res.Remaining != st.remaining {
				t.Fatalf("step %d, %d units: %+v, %v; want allowed %v, remaining %d", i, st.n, res, err, st.allowed, st.remaining)
			}
			if !res.Allowed && res.RetryAfter <= 0 {
				t.Fatalf("step %d: a refusal without RetryAfter: %+v", i, res)
			}
		}
	})
}

func TestKeysAreIndependent(t *testing.T) {
	t.Parallel()
	forEachLimiter(t, func(t *testing.T, lim limiter) {
		l := perch.Limit{Count: 2, Period: time.Hour}
		exhaust(t, lim, "a", l)
		if res := allow(t, lim, "b", l); !res.Allowed || res.Remaining != 1 {
			t.Errorf("another key shares the allowance: %+v", res)
		}
		if res := allow(t, lim, "a", l); res.Allowed {
			t.Errorf("exhausted key allowed again: %+v", res)
		}
	})
}

func TestLimitsAreIndependent(t *testing.T) {
	t.Parallel()
	forEachLimiter(t, func(t *testing.T, lim limiter) {
		exhaust(t, lim, "a", perch.Limit{Count: 2, Period: time.Hour})
		if res := allow(t, lim, "a", perch.Limit{Count: 3, Period: time.Hour}); !res.Allowed || res.Remaining != 2 {
			t.Errorf("another limit on the key shares the allowance: %+v", res)
		}
	})
}

func TestRefillsAfterRetryAfter(t *testing.T) {
	t.Parallel()
	forEachLimiter(t, func(t *testing.T, lim limiter) {
		l := perch.Limit{Count: 2, Period: 200 * time.Millisecond}
		refusedAt := time.Now()
		res := exhaust(t, lim, "a", l)
		if res.RetryAfter <= 0 || res.RetryAfter > 100*time.Millisecond {
			t.Fatalf("RetryAfter %s, want within one refill interval, 100ms", res.RetryAfter)
		}
		if lim.advance != nil {
			lim.advance(res.RetryAfter)
			if res := allow(t, lim, "a", l); !res.Allowed || res.Remaining != 0 {
				t.Fatalf("after RetryAfter: %+v", res)
			}
			return
		}
		// Real time: poll, with a deadline, and check that it was not
		// allowed early (a little slack for the two clocks' reads).
		testenv.Eventually(t, res.RetryAfter+5*time.Second, func() bool { return allow(t, lim, "a", l).Allowed },
			"still refused %s after RetryAfter %s", 5*time.Second, res.RetryAfter)
		if waited := time.Since(refusedAt); waited < res.RetryAfter-5*time.Millisecond {
			t.Errorf("allowed after %s, before RetryAfter %s", waited, res.RetryAfter)
		}
	})
}

func allow(t *testing.T, lim limiter, key string, l perch.Limit) perch.RateResult {
	t.Helper()
	res, err := lim.Allow(context.Background(), key, l, 1)
	if err != nil {
		t.Fatalf("Allow(%q, %s): %v", key, l, err)
	}
	return res
}

// exhaust spends key's allowance under l and returns the first refusal.
func exhaust(t *testing.T, lim limiter, key string, l perch.Limit) perch.RateResult {
	t.Helper()
	// More tries than Count: on real time the allowance may refill a little
	// meanwhile.
	for range 2*l.Count + 10 {
		if res := allow(t, lim, key, l); !res.Allowed {
			if res.Remaining != 0 || res.RetryAfter <= 0 {
				t.Fatalf("refusal: %+v, want Remaining 0 and a positive RetryAfter", res)
			}
			return res
		}
	}
	t.Fatalf("%s never refused under %s", key, l)
	return perch.RateResult{}
}
