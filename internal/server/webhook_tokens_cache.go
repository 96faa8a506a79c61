package server

import (
	"context"
	"sync"
	"time"

	"github.com/perch-dev/perch"
)

// Cached webhook tokens are trusted this long at most; every change that can
// invalidate one (deletion, a change of its creator's role, organisation or
// teams) forgets the whole cache at once, on every instance, through
// fan-out. The bound only matters if such a message is lost.
const (
	tokenCacheTTL   = 30 * time.Second
	tokenCacheLimit = 10_000
)

// tokenCache remembers webhook tokens by hash, so the receivers' hot path
// does not read the database for each delivery. Only valid tokens are kept.
type tokenCache struct {
	mu      sync.Mutex
	gen     uint64 // bumped by forget; a lookup that began before is not kept
	entries map[string]*cachedToken
}

type cachedToken struct {
	token   *perch.WebhookToken
	fetched time.Time
	touched time.Time // when last_used_at was last written
}

func newTokenCache() *tokenCache { return &tokenCache{entries: map[string]*cachedToken{}} }

// lookup returns the token with the hash and whether its last use should be
// recorded now (at most once a minute per token and instance).
func (c *tokenCache) lookup(ctx context.Context, st webhookStore, hash string, now time.Time) (*perch.WebhookToken, bool, error) {
	c.mu.Lock()
	e, gen := c.entries[hash], c.gen
	if e != nil && now.Sub(e.fetched) < tokenCacheTTL {
		touch := now.Sub(e.touched) >= time.Minute
		if touch {
			e.touched = now
		}
		c.mu.Unlock()
		return e.token, touch, nil
	}
	c.mu.Unlock()

	t, err := st.WebhookTokenByHash(ctx, hash)
	if err != nil {
		return nil, false, err
	}
	touched := now
	if t.LastUsedAt != nil && now.Sub(*t.LastUsedAt) < time.Minute {
		touched = *t.LastUsedAt
	}
	touch := touched.Equal(now)
	c.mu.Lock()
	if c.gen == gen {
		if len(c.entries) >= tokenCacheLimit {
			clear(c.entries)
		}
		c.entries[hash] = &cachedToken{token: t, fetched: now, touched: touched}
	}
	c.mu.Unlock()
	return t, touch, nil
}

// forget drops every cached token.
func (c *tokenCache) forget() {
	c.mu.Lock()
	c.gen++
	clear(c.entries)
	c.mu.Unlock()
}
