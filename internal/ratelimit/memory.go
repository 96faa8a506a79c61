// Package ratelimit holds the implementations of perch.RateLimiter.
package ratelimit

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/perch-dev/perch"
)

// Memory is an in-process token-bucket limiter: each key's allowance refills
// continuously at Count per Period and holds at most Count. It is the
// limiter of a single instance; counts are not shared.
type Memory struct {
	// Now is the clock; tests replace it.
	Now func() time.Time

	mu        sync.Mutex
	buckets   map[bucketKey]*rate.Limiter
	lastSweep time.Time
}

type bucketKey struct {
	key   string
	limit perch.Limit
}

// sweepEvery is how often full buckets (idle keys) are dropped, so memory
// follows the number of active clients, not every client ever seen.
const sweepEvery = time.Minute

// NewMemory returns an empty in-process limiter.
func NewMemory() *Memory {
	return &Memory{Now: time.Now, buckets: map[bucketKey]*rate.Limiter{}}
}

// Allow counts n units against key.
func (m *Memory) Allow(_ context.Context, key string, l perch.Limit, n int) (perch.RateResult, error) {
	now := m.Now()
	every := l.Period / time.Duration(l.Count)
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.lastSweep) >= sweepEvery {
		m.sweep(now)
	}
	k := bucketKey{key, l}
	b, ok := m.buckets[k]
	if !ok {
		b = rate.NewLimiter(rate.Every(every), l.Count)
		m.buckets[k] = b
	}
	res := perch.RateResult{Limit: l.Count, Allowed: b.AllowN(now, n)}
	tokens := b.TokensAt(now)
	res.Remaining = max(0, int(tokens))
	res.ResetAfter = time.Duration((float64(l.Count) - tokens) * float64(every))
	if !res.Allowed {
		res.RetryAfter = time.Duration((float64(min(n, l.Count)) - tokens) * float64(every))
	}
	return res, nil
}

func (m *Memory) sweep(now time.Time) {
	for k, b := range m.buckets {
		if b.TokensAt(now) >= float64(b.Burst()) {
			delete(m.buckets, k)
		}
	}
	m.lastSweep = now
}

// Len reports how many keys are being tracked.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.buckets)
}
