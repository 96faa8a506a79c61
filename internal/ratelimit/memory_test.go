package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/perch-dev/perch"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestMemoryAllowsABurstThenRefills(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	m := NewMemory()
	m.Now = c.now
	l := perch.Limit{Count: 10, Period: 15 * time.Minute}
	ctx := context.Background()
	for i := range 10 {
		res, _ := m.Allow(ctx, "1.2.3.4", l)
		if !res.Allowed || res.Remaining != 9-i || res.Limit != 10 {
			t.Fatalf("request %d: %+v", i+1, res)
		}
	}
	res, _ := m.Allow(ctx, "1.2.3.4", l)
	if res.Allowed || res.Remaining != 0 || res.RetryAfter != 90*time.Second || res.ResetAfter != 15*time.Minute {
		t.Fatalf("11th request: %+v", res)
	}
	if other, _ := m.Allow(ctx, "5.6.7.8", l); !other.Allowed {
		t.Fatal("another key shares the allowance")
	}
	c.t = c.t.Add(90 * time.Second)
	if res, _ := m.Allow(ctx, "1.2.3.4", l); !res.Allowed || res.Remaining != 0 {
		t.Fatalf("after one refill interval: %+v", res)
	}
}

func TestMemoryForgetsIdleKeys(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	m := NewMemory()
	m.Now = c.now
	l := perch.Limit{Count: 2, Period: time.Second}
	m.Allow(context.Background(), "a", l)
	m.Allow(context.Background(), "b", l)
	c.t = c.t.Add(sweepEvery)
	m.Allow(context.Background(), "c", l)
	if n := m.Len(); n != 1 {
		t.Fatalf("tracking %d keys after the idle ones refilled, want 1", n)
	}
}
