package ratelimit

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/testenv"
)

// redisURLEnv names the variable that enables the Redis tests.
const redisURLEnv = "PERCH_TEST_REDIS_URL"

// Two instances, each with its own client, count against one allowance.
func TestRedisSharedByInstances(t *testing.T) {
	t.Parallel()
	prefix := uniquePrefix(t)
	instances := []limiter{
		{RateLimiter: NewRedis(newRedisClient(t), prefix)},
		{RateLimiter: NewRedis(newRedisClient(t), prefix)},
	}
	l := perch.Limit{Count: 4, Period: time.Hour}
	for i := range 4 {
		if res := allow(t, instances[i%2], "1.2.3.4", l); !res.Allowed || res.Remaining != 3-i {
			t.Fatalf("request %d, on instance %d: %+v", i+1, i%2, res)
		}
	}
	for i, lim := range instances {
		if res := allow(t, lim, "1.2.3.4", l); res.Allowed {
			t.Errorf("instance %d allowed a 5th request: %+v", i, res)
		}
	}
}

// redis_rate alone reports one request too few here; see remaining.
func TestRedisRemainingWhenIntervalIsInexact(t *testing.T) {
	t.Parallel()
	lim := limiter{RateLimiter: NewRedis(newRedisClient(t), uniquePrefix(t))}
	for _, l := range []perch.Limit{
		{Count: 2, Period: 200 * time.Millisecond},
		{Count: 3, Period: time.Second},
		{Count: 7, Period: 13 * time.Second},
	} {
		for i := range 20 {
			key := fmt.Sprint("k", i)
			if res := allow(t, lim, key, l); !res.Allowed || res.Remaining != l.Count-1 {
				t.Fatalf("%s: first request of %s: %+v, want Remaining %d", l, key, res, l.Count-1)
			}
		}
	}
}

func TestRedisRejectsInvalidLimits(t *testing.T) {
	t.Parallel()
	// Checked before Redis is asked: this needs no server.
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { client.Close() })
	r := NewRedis(client, "")
	for _, l := range []perch.Limit{{Count: 0, Period: time.Minute}, {Count: -1, Period: time.Minute}, {Count: 10}} {
		if _, err := r.Allow(t.Context(), "a", l, 1); err == nil {
			t.Errorf("limit %s: no error", l)
		}
	}
}

func TestRedisUnreachable(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: this needs no Redis server.
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { client.Close() })
	const limit = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	start := time.Now()
	if _, err := NewRedis(client, "").Allow(ctx, "a", perch.Limit{Count: 1, Period: time.Second}, 1); err == nil {
		t.Error("Allow succeeded")
	}
	if d := time.Since(start); d > limit+250*time.Millisecond {
		t.Errorf("took %s, want within the context's %s", d, limit)
	}
}

// newRedisClient returns a client of the test server, closed when tb ends,
// skipping tb when there is no server.
func newRedisClient(tb testing.TB) *redis.Client {
	tb.Helper()
	url := os.Getenv(redisURLEnv)
	if url == "" {
		testenv.SkipUnlessStrict(tb, "%s is not set: no Redis to test against", redisURLEnv)
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("%s: %v", redisURLEnv, err)
	}
	c := redis.NewClient(opt)
	tb.Cleanup(func() { c.Close() })
	return c
}

// uniquePrefix keeps the keys of tb apart from other tests' and runs'.
func uniquePrefix(tb testing.TB) string {
	return fmt.Sprintf("perch-test:%s:%s:", tb.Name(), rand.Text()[:10])
}
