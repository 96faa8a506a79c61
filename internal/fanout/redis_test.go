package fanout

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/fanout/fanouttest"
	"github.com/perch-dev/perch/internal/testenv"
)

// redisURLEnv names the variable that enables the Redis tests.
const redisURLEnv = "PERCH_TEST_REDIS_URL"

// Not parallel: the suite checks for leaked goroutines, which a test
// running beside it would start.
func TestRedis(t *testing.T) {
	redisOptions(t)
	fanouttest.Run(t, func(t *testing.T) []perch.Fanout {
		channel, log := uniqueName(t), testLogger(t)
		// Two clients: two instances, each with its own connections.
		return []perch.Fanout{
			NewRedis(newRedisClient(t, redisOptions(t)), channel, log.Logger),
			NewRedis(newRedisClient(t, redisOptions(t)), channel, log.Logger),
		}
	})
}

func TestRedisResubscribesAfterConnectionKilled(t *testing.T) {
	t.Parallel()
	opt := redisOptions(t)
	opt.ClientName = uniqueName(t) // to kill this subscriber's connection and no other
	channel, log := uniqueName(t), testLogger(t)
	admin := newRedisClient(t, redisOptions(t))
	pub := NewRedis(admin, channel, log.Logger)
	s := fanouttest.Subscribe(t, t.Context(), NewRedis(newRedisClient(t, opt), channel, log.Logger))

	for round := range 2 {
		checkDelivered(t, pub, s, round*2)
		killed, err := admin.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub", "ID", pubsubClientID(t, admin, opt.ClientName)).Int()
		if err != nil || killed != 1 {
			t.Fatalf("CLIENT KILL: %d killed, %v", killed, err)
		}
		s.WaitLost(t)
		checkDelivered(t, pub, s, round*2+1)
	}
}

func TestRedisResubscribesAfterSilentPeer(t *testing.T) {
	t.Parallel()
	channel, log := uniqueName(t), testLogger(t)
	pub := NewRedis(newRedisClient(t, redisOptions(t)), channel, log.Logger)
	opt := redisOptions(t)
	p := newBlackholeProxy(t, opt.Addr)
	opt.Addr = p.Addr()
	sub := NewRedis(newRedisClient(t, opt), channel, log.Logger)
	sub.pingAfter, sub.pongWait = 50*time.Millisecond, 200*time.Millisecond
	s := fanouttest.Subscribe(t, t.Context(), sub)

	checkDelivered(t, pub, s, 0)
	// Without an error to read, only the unanswered PING can tell.
	p.Blackhole()
	s.WaitLost(t)
	checkDelivered(t, pub, s, 1)
	if !strings.Contains(log.String(), "no reply to PING") {
		t.Errorf("log does not say why it resubscribed:\n%s", log)
	}
}

func TestRedisSkipsForeignMessages(t *testing.T) {
	t.Parallel()
	channel, log := uniqueName(t), testLogger(t)
	client := newRedisClient(t, redisOptions(t))
	f := NewRedis(client, channel, log.Logger)
	s := fanouttest.Subscribe(t, t.Context(), f)
	for _, payload := range []string{"not json", `{"kind": 42}`, `["notification"]`} {
		if err := client.Publish(t.Context(), channel, payload).Err(); err != nil {
			t.Fatal(err)
		}
	}
	checkDelivered(t, f, s, 0)
	if n := strings.Count(log.String(), "undecodable"); n != 3 {
		t.Errorf("logged %d undecodable messages, want 3:\n%s", n, log)
	}
}

func TestRedisUnreachable(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: this needs no Redis server.
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { client.Close() })
	f := NewRedis(client, uniqueName(t), slog.New(slog.NewTextHandler(io.Discard, nil)))
	const limit = 500 * time.Millisecond
	// With the default options, go-redis takes about 1.7s to give up on a
	// refused connection (dial and command retries); ctx must cut it short.
	within := func(what string, f func(ctx context.Context) error) {
		ctx, cancel := context.WithTimeout(t.Context(), limit)
		defer cancel()
		start := time.Now()
		if err := f(ctx); err == nil {
			t.Errorf("%s succeeded", what)
		}
		if d := time.Since(start); d > limit+250*time.Millisecond {
			t.Errorf("%s took %s, want within the context's %s", what, d, limit)
		}
	}
	within("Publish", func(ctx context.Context) error { return f.Publish(ctx, message(0)) })
	within("Subscribe", func(ctx context.Context) error {
		return f.Subscribe(ctx, func(perch.FanoutMessage) {}, func() {})
	})
}

// BenchmarkRedisPublish publishes a typical notification to a channel with
// one subscriber on another connection.
func BenchmarkRedisPublish(b *testing.B) {
	channel := uniqueName(b)
	f := NewRedis(newRedisClient(b, redisOptions(b)), channel, testLogger(b).Logger)
	sub := NewRedis(newRedisClient(b, redisOptions(b)), channel, testLogger(b).Logger)
	if err := sub.Subscribe(b.Context(), func(perch.FanoutMessage) {}, func() {}); err != nil {
		b.Fatal(err)
	}
	m := perch.FanoutMessage{Kind: perch.FanoutNotification, Notification: &perch.Notification{
		ID:        "ntf_01JQ8Z6X4T3R2P1N0M9K8J7H6G",
		Tab:       perch.TabIncidents,
		Title:     "[FIRING] High error rate on checkout-api",
		Message:   "5xx rate is 7.3% (threshold 5%) over the last 5 minutes in eu-west-1.",
		Severity:  perch.SeverityError,
		Source:    perch.SourceIncidents,
		URL:       "https://example.pagerduty.com/incidents/Q1W2E3R4T5Y6U7",
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
		Scope:     perch.Scope{Type: perch.ScopeTeam, ID: "team_01JQ8Z6X4T3R2P1N0M9K8J7H6H"},
	}}
	payload, _ := json.Marshal(m)
	b.SetBytes(int64(len(payload)))
	ctx := context.Background()
	for b.Loop() {
		if err := f.Publish(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
}

// checkDelivered publishes message i on pub and checks that s gets it next.
func checkDelivered(t *testing.T, pub perch.Fanout, s *fanouttest.Subscriber, i int) {
	t.Helper()
	if err := pub.Publish(t.Context(), message(i)); err != nil {
		t.Fatal(err)
	}
	if got := s.Next(t); !reflect.DeepEqual(got, message(i)) {
		t.Fatalf("got %v, want %v", got, message(i))
	}
}

// pubsubClientID returns the id Redis gave the pub/sub connection named name.
func pubsubClientID(t *testing.T, admin *redis.Client, name string) string {
	t.Helper()
	list, err := admin.Do(t.Context(), "CLIENT", "LIST", "TYPE", "pubsub").Text()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(list) {
		var id string
		var named bool
		for field := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "id":
				id = v
			case "name":
				named = v == name
			}
		}
		if named {
			return id
		}
	}
	t.Fatalf("no pub/sub connection named %s in\n%s", name, list)
	return ""
}

// redisOptions returns fresh options for the test server, skipping tb
// when there is none.
func redisOptions(tb testing.TB) *redis.Options {
	tb.Helper()
	url := os.Getenv(redisURLEnv)
	if url == "" {
		testenv.SkipUnlessStrict(tb, "%s is not set: no Redis to test against", redisURLEnv)
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("%s: %v", redisURLEnv, err)
	}
	return opt
}

func newRedisClient(tb testing.TB, opt *redis.Options) *redis.Client {
	c := redis.NewClient(opt)
	tb.Cleanup(func() { c.Close() })
	return c
}

// uniqueName names a channel or client after tb, uniquely, so that test
// runs sharing a server do not hear each other.
func uniqueName(tb testing.TB) string {
	return fmt.Sprintf("perch-test:%s:%s", tb.Name(), rand.Text()[:10])
}

// logBuffer is the log of a test, shown when it fails. Goroutines may
// still log after the test has ended, when t.Log would panic.
type logBuffer struct {
	*slog.Logger
	mu  sync.Mutex
	buf bytes.Buffer
}

func testLogger(tb testing.TB) *logBuffer {
	l := &logBuffer{}
	l.Logger = slog.New(slog.NewTextHandler(l, nil))
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("log:\n%s", l)
		}
	})
	return l
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
