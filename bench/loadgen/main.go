// Command loadgen drives a running Perch server over loopback for the
// figures of the events issue; scripts/load-events.sh runs it. It is a
// development tool, not part of the perch binary. Every mode is bounded in
// count and time. Its WebSocket clients wait in nbio's poller (ws.go), and
// so do the fan-out floor's plain TCP clients (raw.go).
//
//	loadgen trivial -addr 127.0.0.1:18281                 serve 200 to anything: the baseline for wrk
//	loadgen ingestfloor -addr 127.0.0.1:18481 -db /tmp/floor.db        the ingest floor: parse and store durably in SQLite, nothing else
//	loadgen ingestfloor -addr 127.0.0.1:18591 -db postgres://…         the PostgreSQL floor: the same by a bare group commit (-perch-writer: through Perch's writer instead)
//	loadgen latency -base URL -clients 1000 -rate 1000 -seconds 10        registers one user per client
//	loadgen fanout  -base URL -token pat_ -webhook whk_ -clients 10000
//	loadgen idle    -base URL -token pat_ -clients 5000 -warm 2000 -pid PID
//	loadgen many    -base URL -token pat_ -clients 19400 -pid PID      idle clients from 127.0.0.2, .3, ...: are they all pinged, and the server's RSS
//	loadgen hold    -base URL -token pat_ -seconds 12 -quiet 3s      listen as a real client, then count what arrived
//	loadgen rawserve  -addr 127.0.0.1:18381 -control 127.0.0.1:18382     the fan-out floor's server: plain TCP, no WebSocket, no store
//	loadgen rawfanout -addr 127.0.0.1:18381 -control http://127.0.0.1:18382/ -clients 10000
//	loadgen faults -name kill9 -bases URL[,URL...] -db DSN -users 6 -per-user 3 -rate 150 -seconds 30    one scenario of scripts/faults.sh: acknowledged / stored / delivered / lost / duplicated
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lesismal/nbio/logging"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen trivial|ingestfloor|latency|fanout|idle|many|hold|rawserve|rawfanout|wsserve|wsfanout|faults [flags]")
		os.Exit(2)
	}
	// nbio logs to stdout, which the script reads figures from and many's
	// parts report on; only its errors are worth a line.
	logging.SetLevel(logging.LevelError)
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:18281", "trivial, ingestfloor, rawserve, wsserve: listen address")
	base := fs.String("base", "http://127.0.0.1:18181", "Perch base URL")
	token := fs.String("token", "", "API token the WebSocket clients sign in with")
	webhook := fs.String("webhook", "", "inbound webhook token (org scope) to post with")
	clients := fs.Int("clients", 1000, "WebSocket clients to connect")
	rate := fs.Int("rate", 1000, "latency, faults: events per second")
	seconds := fs.Int("seconds", 10, "latency, faults: how long to post")
	pid := fs.Int("pid", 0, "idle, many: the server's process id, to read its memory")
	warm := fs.Int("warm", 2000, "idle: clients connected before the measured ones")
	pingWait := fs.Duration("ping-wait", 75*time.Second, "idle, many: how long to wait for every client's first ping (the server pings every 30 s)")
	perAddr := fs.Int("per-address", 20000, "many: clients per source address (each takes an ephemeral port of it)")
	first := fs.Int("first", 0, "many-part: the index of its first client among all of many's")
	rounds := fs.Int("rounds", 5, "fanout, rawfanout, wsfanout: events to time, one at a time")
	control := fs.String("control", "127.0.0.1:18382", "rawserve, wsserve: address whose POSTs trigger a message; rawfanout, wsfanout: its URL")
	dbPath := fs.String("db", "", "ingestfloor: the SQLite file (made if missing) or a postgres:// URL; faults: the instances' database, to count what they stored")
	quiet := fs.Duration("quiet", 3*time.Second, "hold: stop once no notification came for this long (after the first)")
	perchWriter := fs.Bool("perch-writer", false, "ingestfloor on PostgreSQL: store through Perch's store and writer, as the SQLite floor does, rather than a bare group commit (to tell their costs apart)")
	listenBase := fs.String("listen-base", "", "latency: the instance the clients connect to (default -base, where events are posted)")
	name := fs.String("name", "faults", "faults: the scenario's name, in its report")
	bases := fs.String("bases", "", "faults: the instances' base URLs, comma-separated")
	faultUsers := fs.Int("users", 6, "faults: users, each with its own webhook token")
	perUser := fs.Int("per-user", 3, "faults: WebSocket clients per user, spread over the instances")
	faultSenders := fs.Int("senders", 16, "faults: concurrent senders")
	retryFor := fs.Duration("retry-for", 20*time.Second, "faults: how long after the load unacknowledged events are still sent again")
	settle := fs.Duration("settle", 20*time.Second, "faults: how long after the load the clients get to receive every acknowledged event")
	bad := fs.Bool("bad", false, "faults: misbehaving clients beside the good ones (never reading, sending garbage, churning)")
	started := fs.String("started", "", "faults: a file to make when the load starts")
	postTo := fs.Int("post-to", 0, "faults: post to the first n instances only (0: all); the others' clients learn of events only through the store and wake-ups")
	padding := fs.Int("padding", 0, "faults: bytes of message each event carries beyond its name (at most 3900)")
	fs.Parse(os.Args[2:])

	var err error
	switch os.Args[1] {
	case "trivial":
		err = http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"received":true}`))
		}))
	case "ingestfloor":
		err = ingestFloor(*addr, *dbPath, *perchWriter)
	case "latency":
		err = latency(*base, cmp.Or(*listenBase, *base), *clients, *rate, time.Duration(*seconds)*time.Second)
	case "fanout":
		err = fanout(*base, *token, *webhook, *clients, *rounds)
	case "idle":
		err = idle(*base, *token, *clients, *warm, *pid, *pingWait)
	case "many":
		err = many(*base, *token, *clients, *pid, *perAddr, *pingWait)
	case "many-part": // one process of many's; many starts them
		err = manyPart(*base, *token, *clients, *first, *perAddr, *pingWait)
	case "hold":
		err = hold(*base, *token, time.Duration(*seconds)*time.Second, *quiet)
	case "rawserve":
		err = rawServe(*addr, *control)
	case "rawfanout":
		err = rawFanout(*addr, *control, *clients, *rounds)
	case "wsserve":
		err = wsServe(*addr, *control)
	case "wsfanout":
		err = wsFanout(*base, *control, *clients, *rounds)
	case "faults":
		err = faults(faultConfig{name: *name, bases: strings.Split(*bases, ","), dsn: *dbPath, users: *faultUsers, perUser: *perUser,
			rate: *rate, load: time.Duration(*seconds) * time.Second, senders: *faultSenders, retryFor: *retryFor, settle: *settle,
			bad: *bad, started: *started, padding: *padding, postTo: *postTo})
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// connectAll opens n clients with token(i) from the system's source
// address, for at most a minute, and fails if any of them fails.
func connectAll(ws *wsClients, base string, n int, token func(i int) string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if failed, err := ws.connect(ctx, base, n, token, nil); failed > 0 {
		return fmt.Errorf("%d of %d clients failed to connect, the first with: %w", failed, n, err)
	}
	return nil
}

// senders is the HTTP client that posts events: it keeps its connections
// open, as wrk's do and as a busy sender's would. (http.DefaultClient keeps
// two per host, and a response closed unread is not reused: each POST at
// 1,000/s would otherwise open a TCP connection of its own, and its setup
// would be in every latency measured.)
var senders = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}

func post(base, webhook, title string) error {
	body, _ := json.Marshal(map[string]string{"title": title, "tab": "Load"})
	res, err := senders.Post(base+"/webhooks/inbound?token="+webhook, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("post: status %d", res.StatusCode)
	}
	return nil
}

// user is a load account: an access token for its WebSocket client and a
// user-scoped webhook token that addresses events to it alone.
type user struct{ access, webhook string }

// users registers n accounts, a few at a time.
func users(base string, n int) ([]user, error) {
	out := make([]user, n)
	var wg sync.WaitGroup
	var failOnce sync.Once
	var failed error
	sem := make(chan struct{}, 8)
	call := func(path, bearer string, body any) (map[string]any, error) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		var out struct {
			Data map[string]any `json:"data"`
		}
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode >= 300 {
			return nil, fmt.Errorf("%s: status %d", path, res.StatusCode)
		}
		return out.Data, nil
	}
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			reg, err := call("/api/v1/auth/register", "", map[string]string{
				"name": fmt.Sprintf("Load %d", i), "email": fmt.Sprintf("load%d-%d@example.com", i, time.Now().UnixNano()), "password": "correct horse battery"})
			if err != nil {
				failOnce.Do(func() { failed = err })
				return
			}
			access := reg["access_token"].(string)
			tok, err := call("/api/v1/webhook-tokens", access, map[string]string{"label": "load", "sender": "inbound", "scope": "user"})
			if err != nil {
				failOnce.Do(func() { failed = err })
				return
			}
			out[i] = user{access: access, webhook: tok["raw_token"].(string)}
		})
	}
	wg.Wait()
	if failed != nil {
		return nil, failed
	}
	return out, nil
}

// latency connects one client for each of n users and posts at a steady
// rate, each event to one user in turn, measuring from just before the POST
// to the frame's arrival at that user's client. Events are posted to base
// and the clients connect to listen: the same instance, or another one of
// the cluster, which has to learn of each event through the shared store. The first n events are each
// user's first, whose webhook token the server has not yet cached: their
// latencies are also reported apart from the rest's.
func latency(base, listen string, n, rate int, d time.Duration) error {
	accounts, err := users(base, n)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	type event struct {
		at    time.Time
		first bool // the user's first event
	}
	sent := map[string]event{}
	var lat, first, later []time.Duration
	onFrame := func(frame []byte, at time.Time) {
		title, _ := member(frame, "title")
		mu.Lock()
		defer mu.Unlock()
		if e, ok := sent[title]; ok {
			lat = append(lat, at.Sub(e.at))
			if e.first {
				first = append(first, at.Sub(e.at))
			} else {
				later = append(later, at.Sub(e.at))
			}
		}
	}
	ws, err := newWSClients(onFrame)
	if err != nil {
		return err
	}
	defer ws.close()
	if err := connectAll(ws, listen, n, func(i int) string { return accounts[i].access }); err != nil {
		return err
	}
	if listen != base {
		fmt.Printf("connected %d clients, one per user, to %s; posting to %s\n", n, listen, base)
	} else {
		fmt.Printf("connected %d clients, one per user\n", n)
	}
	total := rate * int(d/time.Second)
	interval := time.Second / time.Duration(rate)
	var wg sync.WaitGroup
	var errs atomic.Int64
	start := time.Now()
	for i := range total {
		// Paced by the clock rather than a ticker, which drops ticks
		// whenever this loop runs late: over the run, the rate is the
		// one asked for.
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		title := "e" + strconv.Itoa(i)
		mu.Lock()
		sent[title] = event{at: time.Now(), first: i < n}
		mu.Unlock()
		wg.Go(func() {
			if post(base, accounts[i%n].webhook, title) != nil {
				errs.Add(1)
			}
		})
	}
	elapsed := time.Since(start)
	wg.Wait()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		got := len(lat)
		mu.Unlock()
		if got >= total {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lat) == 0 {
		return fmt.Errorf("no frames arrived")
	}
	slices.Sort(lat)
	slices.Sort(first)
	slices.Sort(later)
	fmt.Printf("posted %d events in %s (%.0f/s), %d errors; frames %d of %d\n", total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), errs.Load(), len(lat), total)
	fmt.Printf("POST-to-frame latency: p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms\n", quantile(lat, 0.50), quantile(lat, 0.90), quantile(lat, 0.99), ms(lat[len(lat)-1]))
	if len(first) > 0 {
		fmt.Printf("each user's first event (%d, its webhook token not yet cached): p50 %.2f ms  p99 %.2f ms  max %.2f ms\n", len(first), quantile(first, 0.50), quantile(first, 0.99), ms(first[len(first)-1]))
	}
	if len(later) > 0 {
		fmt.Printf("the other events (%d): p50 %.2f ms  p99 %.2f ms  max %.2f ms\n", len(later), quantile(later, 0.50), quantile(later, 0.99), ms(later[len(later)-1]))
	}
	return nil
}

// quantile returns the q-quantile of sorted, in milliseconds.
func quantile(sorted []time.Duration, q float64) float64 {
	return ms(sorted[int(q*float64(len(sorted)-1))])
}

// fanout posts one org-scoped event and measures the time until every
// client has it, over several rounds.
func fanout(base, token, webhook string, n, count int) error {
	ws, got, done, err := countingClients(base, token, n)
	if err != nil {
		return err
	}
	defer ws.close()
	fmt.Printf("connected %d clients\n", n)
	rounds, err := timeRounds(count, n, got, done, func(i int) error {
		return post(base, webhook, "fanout"+strconv.Itoa(i))
	})
	if err != nil {
		return err
	}
	fmt.Printf("one org event to all %d clients: %s\n", n, spread(rounds))
	return nil
}

// countingClients connects n clients to base, signed in with token, that
// count the frames they get (got) and report when the nth arrives (done),
// for timeRounds.
func countingClients(base, token string, n int) (*wsClients, *atomic.Int64, chan time.Time, error) {
	got := new(atomic.Int64)
	done := make(chan time.Time, 1)
	ws, err := newWSClients(func(_ []byte, at time.Time) {
		if got.Add(1) == int64(n) {
			done <- at
		}
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if err := connectAll(ws, base, n, func(int) string { return token }); err != nil {
		ws.close()
		return nil, nil, nil, err
	}
	return ws, got, done, nil
}

// timeRounds times, rounds times, from send(i) until done says that the
// last of n clients has the message; got counts the clients that have it.
// Perch's fan-out and its floor are timed by this same code.
func timeRounds(rounds, n int, got *atomic.Int64, done <-chan time.Time, send func(i int) error) ([]time.Duration, error) {
	var times []time.Duration
	for i := range rounds {
		got.Store(0)
		t0 := time.Now()
		if err := send(i); err != nil {
			return nil, err
		}
		select {
		case at := <-done:
			times = append(times, at.Sub(t0))
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("round %d: %d of %d clients received it in 30s", i, got.Load(), n)
		}
	}
	return times, nil
}

// spread sums up timings: median, fastest and slowest, in milliseconds.
func spread(ts []time.Duration) string {
	slices.Sort(ts)
	return fmt.Sprintf("median %.2f ms (fastest %.2f, slowest %.2f, %d rounds)", ms(ts[len(ts)/2]), ms(ts[0]), ms(ts[len(ts)-1]), len(ts))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// hold keeps one client subscribed to the organisation's events until
// nothing has arrived for quietFor after the load, or until d, and
// reports what arrived: every notification once and in order, on one
// connection. The server does all it does for a subscribed client (the
// frame, the fan-out, the writes); the client reads as the fan-out
// sections' clients do (nbio's poller, the id read from the frame without
// decoding the rest), so that its own work, which a desktop does on the
// desktop, takes as little as it can of the machine the server is measured
// on. The client package's full decoding took about 6 µs a notification
// here, a tenth of the machine at the ingest section's rates.
func hold(base, token string, d, quietFor time.Duration) error {
	var mu sync.Mutex
	var got, disorder int
	var newest uint64 // ids arrive in increasing order; one that does not is a repeat
	last := time.Now()
	ws, err := newWSClients(func(frame []byte, at time.Time) {
		s, _ := member(frame, "id")
		id, err := strconv.ParseUint(s, 10, 64)
		mu.Lock()
		defer mu.Unlock()
		got++
		last = at
		if err != nil || id <= newest {
			disorder++
		}
		newest = max(newest, id)
	})
	if err != nil {
		return err
	}
	defer ws.close()
	if err := connectAll(ws, base, 1, func(int) string { return token }); err != nil {
		return err
	}
	fmt.Printf("listening (at most %s)\n", d)
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(500 * time.Millisecond)
		if ws.open.Load() == 0 {
			break
		}
		mu.Lock()
		quiet := got > 0 && time.Since(last) > quietFor
		mu.Unlock()
		if quiet {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Printf("the listening client received %d notifications (%d repeated or out of order)\n", got, disorder)
	if ws.open.Load() == 0 {
		return fmt.Errorf("the server closed the listening client after %d notifications", got)
	}
	return nil
}

// member reads a string member of a notification frame's data without
// decoding the rest: with thousands of clients in this one process, the
// load generator's own JSON work would otherwise be most of what the
// figures measure. It finds the first member of that name (JSON's escaping
// keeps a quoted name out of string values); the generator's titles are
// plain ASCII.
func member(frame []byte, name string) (string, bool) {
	_, rest, ok := bytes.Cut(frame, []byte(`"`+name+`":"`))
	if !ok {
		return "", false
	}
	v, _, ok := bytes.Cut(rest, []byte(`"`))
	return string(v), ok
}
