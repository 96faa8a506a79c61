package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/perch-dev/perch"
)

// On a fake clock Memory's times are exact; the shared tests check only
// what real time allows.
func TestMemoryTimesAreExact(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	m := NewMemory()
	m.Now = c.now
	l := perch.Limit{Count: 10, Period: 15 * time.Minute}
	ctx := context.Background()
	for range 10 {
		m.Allow(ctx, "1.2.3.4", l, 1)
	}
	res, _ := m.Allow(ctx, "1.2.3.4", l, 1)
	if res.Allowed || res.RetryAfter != 90*time.Second || res.ResetAfter != 15*time.Minute {
		t.Fatalf("11th request: %+v", res)
	}
	c.t = c.t.Add(90*time.Second - time.Nanosecond)
	if res, _ := m.Allow(ctx, "1.2.3.4", l, 1); res.Allowed {
		t.Fatalf("just before RetryAfter: %+v", res)
	}
	c.t = c.t.Add(time.Nanosecond)
	if res, _ := m.Allow(ctx, "1.2.3.4", l, 1); !res.Allowed || res.Remaining != 0 {
		t.Fatalf("after one refill interval: %+v", res)
	}
}

func TestMemoryForgetsIdleKeys(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	m := NewMemory()
	m.Now = c.now
	l := perch.Limit{Count: 2, Period: time.Second}
	m.Allow(context.Background(), "a", l, 1)
	m.Allow(context.Background(), "b", l, 1)
	c.t = c.t.Add(sweepEvery)
	m.Allow(context.Background(), "c", l, 1)
	if n := m.Len(); n != 1 {
		t.Fatalf("tracking %d keys after the idle ones refilled, want 1", n)
	}
}
