package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

// instance is one `perch serve` process of a cluster.
type instance struct {
	t    testing.TB
	env  []string
	addr string // host:port, kept across restarts
	cmd  *exec.Cmd
	done chan struct{}
}

var listeningLine = regexp.MustCompile(`listening on http://(\S+)`)

// startInstance runs `perch serve` as a child process (this test binary,
// re-executed as perch) and waits until it listens.
func startInstance(t testing.TB, env []string, addr string) *instance {
	t.Helper()
	in := &instance{t: t, env: env, addr: addr}
	in.start()
	t.Cleanup(func() { in.kill() })
	return in
}

func (in *instance) start() {
	in.t.Helper()
	listen := in.addr
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = append(os.Environ(), append(in.env, "PERCH_RUN_MAIN=1", "PERCH_LISTEN="+listen)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		in.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		in.t.Fatal(err)
	}
	in.cmd, in.done = cmd, make(chan struct{})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		cmd.Wait()
		close(in.done)
	}()
	select {
	case in.addr = <-found:
	case <-in.done:
		in.t.Fatal("perch serve exited before listening")
	case <-time.After(30 * time.Second):
		in.t.Fatal("perch serve did not start in 30 s")
	}
}

// kill ends the process at once (SIGKILL): no drain, no goodbye to clients.
func (in *instance) kill() {
	if in.cmd != nil && in.cmd.Process != nil {
		in.cmd.Process.Signal(syscall.SIGKILL)
		<-in.done
	}
}

func (in *instance) url() string { return "http://" + in.addr }

// balancer is a round-robin load balancer over the instances that answer:
// a backend that refuses a connection is passed over until it is healthy.
type balancer struct {
	backends []*instance
	next     atomic.Int64
	mu       sync.Mutex
	down     map[string]time.Time
}

func (b *balancer) pick() *url.URL {
	b.mu.Lock()
	defer b.mu.Unlock()
	for range b.backends {
		in := b.backends[int(b.next.Add(1))%len(b.backends)]
		if at, ok := b.down[in.addr]; ok && time.Since(at) < 200*time.Millisecond {
			continue
		}
		u, _ := url.Parse(in.url())
		return u
	}
	u, _ := url.Parse(b.backends[0].url())
	return u
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := b.pick()
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target); pr.SetXForwarded() },
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			b.mu.Lock()
			b.down[target.Host] = time.Now()
			b.mu.Unlock()
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.ServeHTTP(w, r)
}

// clusterClient is one client of the cluster and what it received, in order.
type clusterClient struct {
	user  string
	mu    sync.Mutex
	ids   []int64
	ready chan struct{}
	once  sync.Once
}

func (l *clusterClient) received() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ids)
}

// TestClusterOfThreeInstances runs three `perch serve` processes on one
// PostgreSQL database and one Redis, with clients spread over them through
// a load balancer and events posted to each in turn. One instance is killed
// with SIGKILL in the middle of the load and started again; its clients
// reconnect through the balancer and resume. Every client must receive
// exactly its user's accepted events, each once, in order.
func TestClusterOfThreeInstances(t *testing.T) {
	// Not parallel: three perch processes under load, killed and restarted,
	// with deadlines on delivery; it runs alone so that the two cores are
	// its own.
	redisURL := os.Getenv("PERCH_TEST_REDIS_URL")
	if redisURL == "" {
		testenv.SkipUnlessStrict(t, "cluster test skipped: set PERCH_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379) and %s", storetest.PostgresURLEnv)
	}
	dsn := storetest.DSN(t, store.Postgres)
	env := []string{
		"PERCH_DATABASE_URL=" + dsn,
		"PERCH_REDIS_URL=" + redisURL,
		"PERCH_REDIS_PREFIX=perch-cluster-test-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"PERCH_LOG_LEVEL=error",
		"PERCH_RATE_LIMIT_AUTH=100000/1m",
		"PERCH_RATE_LIMIT_USER=100000000/1m",
	}
	first := startInstance(t, env, "") // migrates the fresh schema
	instances := []*instance{first, startInstance(t, env, ""), startInstance(t, env, "")}
	lb := &balancer{backends: instances, down: map[string]time.Time{}}
	front := httptest.NewServer(lb)
	t.Cleanup(front.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const users, clientsPerUser, events = 6, 2, 360
	tokens := make([]string, users)
	var drops atomic.Int64 // connections lost by clients, as when their instance died
	var clients []*clusterClient
	for u := range users {
		api := client.New(instances[u%3].url())
		session, err := api.Register(ctx, fmt.Sprintf("User %d", u), fmt.Sprintf("user%d@example.com", u), "correct horse battery")
		if err != nil {
			t.Fatal(err)
		}
		created, err := api.CreateWebhookToken(ctx, client.WebhookTokenInput{Label: "load", Sender: perch.SenderInbound, Scope: perch.ScopeUser})
		if err != nil {
			t.Fatal(err)
		}
		tokens[u] = created.RawToken
		for range clientsPerUser {
			l := &clusterClient{user: strconv.Itoa(u), ready: make(chan struct{})}
			clients = append(clients, l)
			c := client.New(front.URL, client.WithAccessToken(session.AccessToken, session.RefreshToken), client.WithReconnectDelay(20*time.Millisecond, 200*time.Millisecond))
			go c.Listen(ctx, "", func(e client.Event) {
				switch e.Type {
				case client.EventReady:
					l.once.Do(func() { close(l.ready) })
				case client.EventDisconnected:
					drops.Add(1)
				case client.EventNotification:
					id, _ := strconv.ParseInt(e.Notification.ID, 10, 64)
					l.mu.Lock()
					l.ids = append(l.ids, id)
					l.mu.Unlock()
				}
			})
		}
	}
	for _, l := range clients {
		select {
		case <-l.ready:
		case <-ctx.Done():
			t.Fatal("clients did not connect")
		}
	}

	// The load: events to each instance in turn; instance 2 is killed a
	// third of the way in and back at two thirds.
	accepted := make([][]int64, users)
	posted, refused := 0, 0
	for i := range events {
		switch i {
		case events / 3:
			instances[1].kill()
		case 2 * events / 3:
			instances[1].start()
		}
		in := instances[i%3]
		u := i % users
		receipt, err := client.New(in.url()).Deliver(ctx, tokens[u], client.InboundEvent{Title: fmt.Sprintf("event %d", i), Tab: "Load"})
		posted++
		if err != nil {
			var pe *perch.Error
			if errors.As(err, &pe) {
				t.Fatalf("event %d refused by a live instance: %v", i, err)
			}
			refused++ // the instance is down: nothing was accepted
			continue
		}
		for _, id := range receipt.IDs {
			n, _ := strconv.ParseInt(id, 10, 64)
			accepted[u] = append(accepted[u], n)
		}
	}

	// Every client ends with exactly its user's accepted events, in order.
	deadline := time.Now().Add(30 * time.Second)
	total := 0
	for _, l := range clients {
		u, _ := strconv.Atoi(l.user)
		want := accepted[u]
		testenv.Poll(time.Until(deadline), func() error {
			if !slices.Equal(l.received(), want) {
				return errors.New("not yet")
			}
			return nil
		})
		got := l.received()
		if !slices.Equal(got, want) {
			t.Fatalf("a client of user %d received %d events %v\nwant %d %v", u, len(got), got, len(want), want)
		}
		total += len(got)
	}
	if drops.Load() == 0 {
		t.Fatal("no client lost its connection: the killed instance served none of them")
	}
	acceptedCount := 0
	for _, a := range accepted {
		acceptedCount += len(a)
	}
	t.Logf("cluster of 3 instances, %d clients: posted %d, accepted %d (refused by the killed instance: %d), received %d deliveries (%d per client on average; %d connections lost and resumed), no loss, no duplicate, in order",
		len(clients), posted, acceptedCount, refused, total, total/len(clients), drops.Load())
}

// BenchmarkClusterFanoutThroughput measures how fast one cluster of one
// instance and one of three deliver the same load: 300 clients of one user
// spread over the instances, 200 events posted to the instances in turn
// from 8 senders; each iteration is that whole load. A benchmark, not a
// test, so that go test never runs it (or skips it): run it by hand, with
// PostgreSQL and Redis set, as
// go test -run '^$' -bench ClusterFanoutThroughput -benchtime 1x ./cmd/perch
func BenchmarkClusterFanoutThroughput(b *testing.B) {
	if os.Getenv("PERCH_TEST_REDIS_URL") == "" {
		b.Skip("set PERCH_TEST_REDIS_URL and PERCH_TEST_POSTGRES_URL to run it")
	}
	redisURL := os.Getenv("PERCH_TEST_REDIS_URL")
	const clients, events, senders = 300, 200, 8
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			env := []string{
				"PERCH_DATABASE_URL=" + storetest.DSN(b, store.Postgres),
				"PERCH_REDIS_URL=" + redisURL,
				"PERCH_REDIS_PREFIX=perch-throughput-" + strconv.FormatInt(time.Now().UnixNano(), 36),
				"PERCH_LOG_LEVEL=error", "PERCH_RATE_LIMIT_AUTH=100000/1m", "PERCH_RATE_LIMIT_USER=100000000/1m",
			}
			var instances []*instance
			for range n {
				instances = append(instances, startInstance(b, env, ""))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			api := client.New(instances[0].url())
			session, err := api.Register(ctx, "Load", "load@example.com", "correct horse battery")
			if err != nil {
				b.Fatal(err)
			}
			created, err := api.CreateWebhookToken(ctx, client.WebhookTokenInput{Label: "load", Sender: perch.SenderInbound, Scope: perch.ScopeUser})
			if err != nil {
				b.Fatal(err)
			}
			// An iteration is over when every client has every one of its
			// events: got reaches target, which each iteration moves on.
			var got, target atomic.Int64
			all := make(chan struct{}, 1)
			var ready sync.WaitGroup
			for i := range clients {
				ready.Add(1)
				var once sync.Once
				c := client.New(instances[i%n].url(), client.WithAccessToken(session.AccessToken, session.RefreshToken))
				go c.Listen(ctx, "", func(e client.Event) {
					switch e.Type {
					case client.EventReady:
						once.Do(ready.Done)
					case client.EventNotification:
						if got.Add(1) == target.Load() {
							all <- struct{}{}
						}
					}
				})
			}
			ready.Wait()
			b.ResetTimer()
			for range b.N {
				target.Store(got.Load() + clients*events)
				var wg sync.WaitGroup
				for s := range senders {
					wg.Go(func() {
						for i := s; i < events; i += senders {
							if err := client.New(instances[i%n].url()).Send(ctx, created.RawToken, client.InboundEvent{Title: "load"}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				select {
				case <-all:
				case <-ctx.Done():
					b.Fatalf("%d of %d deliveries", got.Load(), target.Load())
				}
			}
			b.ReportMetric(float64(b.N*clients*events)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}
