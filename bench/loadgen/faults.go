package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
)

// faults is the load of one scenario of scripts/faults.sh, which breaks
// things (kills, restarts, pauses, a full disk) while it runs. It signs up
// users, each with several WebSocket clients spread over the instances and
// a webhook token of its own (user scope for some, organisation scope for
// the others: an organisation of one member, so either way the scope is
// that user's clients), posts events at a steady rate, and counts what the
// instances acknowledged, what the database holds and what every client
// received.
//
// Events go to the instances in turn, or to the first few only (postTo),
// so that the others' clients hear of them only through the store and the
// wake-ups, not by their instance reading the store for its own writes.
// The senders act as a webhook sender should: each event carries an
// Idempotency-Key, and an event whose answer is not a 200 (a 5xx, a 429, a
// connection that broke after the request was sent) is sent again with the
// same key, to the next instance, until it is acknowledged or the load is
// over by retryFor. A dial refused sent nothing and moves to the next
// instance at once. So every event is acknowledged once the faults are
// over, and the database must hold each exactly once.
//
// The clients act as the real client does (client.Listen): they connect,
// take the ready frame's last_id as their resume point, and after any drop
// connect again with ?since= the newest id they received, to the instance
// they started on or, while it refuses, the next one (as a load balancer
// would send them). Unlike client.Listen they keep every frame, repeats
// and out-of-order ones included, which client.Listen would drop unseen:
// a repeat is counted as duplicated, and an id never received as lost.
type faultRun struct {
	faultConfig
	prefix string    // of every event's title, unique to the run
	start  time.Time // of the load
	http   *http.Client

	tokens  []string // per user: the webhook token its events are posted with
	clients []*goodClient

	mu          sync.Mutex
	acked       map[int64]int       // acknowledged id → the user whose clients must get it
	ackedAt     map[int64]time.Time // when its first acknowledgement came
	ackedEvents int
	statuses    map[int]int // answers other than 200, by status
	redelivered int         // 200s marked duplicate: a retry of an event stored before
	refused     atomic.Int64
	unanswered  atomic.Int64
	retried     atomic.Int64
	givenUp     atomic.Int64
	posted      atomic.Int64
}

// faultConfig is what scripts/faults.sh asks of one scenario.
type faultConfig struct {
	name     string
	bases    []string // the instances, http://host:port each
	dsn      string   // the database they share: a SQLite path or a postgres:// URL
	users    int
	perUser  int // clients per user, spread over the instances
	rate     int // events per second
	load     time.Duration
	senders  int
	retryFor time.Duration // after the load, how long unacknowledged events are still retried
	settle   time.Duration // after the last acknowledgement, how long clients get to catch up
	bad      bool          // add misbehaving clients beside the good ones
	started  string        // a file made when the load starts, for the script's timeline
	padding  int           // bytes of message each event carries beyond its name
	postTo   int           // events go to the first postTo instances (0: all), the others only when those refuse
}

func faults(cfg faultConfig) error {
	if len(cfg.bases) == 0 || cfg.dsn == "" {
		return errors.New("faults needs -bases and -db")
	}
	f := &faultRun{faultConfig: cfg, prefix: fmt.Sprintf("%s-%d", cfg.name, time.Now().UnixNano()),
		acked: map[int64]int{}, ackedAt: map[int64]time.Time{}, statuses: map[int]int{},
		http: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64,
			DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := f.signUp(ctx); err != nil {
		return fmt.Errorf("sign-up: %w", err)
	}
	var wg sync.WaitGroup
	for _, c := range f.clients {
		wg.Go(func() { c.run(ctx, f.bases) })
	}
	defer wg.Wait()
	defer cancel()
	deadline := time.After(time.Minute)
	for _, c := range f.clients {
		select {
		case <-c.ready:
		case <-deadline:
			return errors.New("the clients did not all connect within a minute")
		}
	}
	var bad *badClients
	if f.bad {
		bad = startBadClients(ctx, f.bases[0], f.clients[0].token)
	}
	to := ""
	if f.postTo > 0 && f.postTo < len(f.bases) {
		to = fmt.Sprintf(" to the first %d instance(s) only", f.postTo)
	}
	fmt.Printf("%s: %d users, %d clients over %d instance(s)%s; posting %d events/s for %s%s\n",
		f.name, f.users, len(f.clients), len(f.bases), map[bool]string{true: ", misbehaving clients beside them"}[f.bad], f.rate, f.load, to)
	if f.started != "" {
		if err := os.WriteFile(f.started, nil, 0o600); err != nil {
			return err
		}
	}
	start := time.Now()
	f.start = start
	f.send(ctx, start)
	sent := time.Since(start)
	caughtUp := f.settleClients()
	if bad != nil {
		bad.stop()
	}
	cancel()
	wg.Wait()
	stored, err := f.stored()
	if err != nil {
		return fmt.Errorf("reading the database: %w", err)
	}
	f.report(sent, caughtUp, stored, bad)
	return nil
}

// signUp registers the users (on the first instance), each with an API
// token for its clients and a webhook token for its events.
func (f *faultRun) signUp(ctx context.Context) error {
	api := client.New(f.bases[0], client.WithHTTPClient(f.http))
	for u := range f.users {
		if _, err := api.Register(ctx, fmt.Sprintf("Faults %d", u), fmt.Sprintf("%s-%d@example.com", f.prefix, u), "correct horse battery"); err != nil {
			return err
		}
		_, pat, err := api.CreateAPIToken(ctx, "faults")
		if err != nil {
			return err
		}
		scope := perch.ScopeUser
		if u%2 == 1 {
			scope = perch.ScopeOrg
		}
		hook, err := api.CreateWebhookToken(ctx, client.WebhookTokenInput{Label: "faults", Sender: perch.SenderInbound, Scope: scope})
		if err != nil {
			return err
		}
		f.tokens = append(f.tokens, hook.RawToken)
		for i := range f.perUser {
			f.clients = append(f.clients, newGoodClient(u, (u+i)%len(f.bases), pat))
		}
	}
	return nil
}

// send posts the events, event i due at start + i/rate, from f.senders
// goroutines, each event until it is acknowledged or given up. Events not
// begun by the end of the load and the retry time are not sent.
func (f *faultRun) send(ctx context.Context, start time.Time) {
	total := int64(f.rate) * int64(f.load/time.Second)
	giveUp := start.Add(f.load + f.retryFor)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range f.senders {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= total || time.Now().After(giveUp) {
					return
				}
				time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(f.rate))))
				f.deliver(ctx, int(i), giveUp)
			}
		})
	}
	wg.Wait()
}

// deliver posts event i until an instance acknowledges it, or until giveUp.
func (f *faultRun) deliver(ctx context.Context, i int, giveUp time.Time) {
	u := i % f.users
	title := fmt.Sprintf("%s %d", f.prefix, i)
	body, _ := json.Marshal(client.InboundEvent{Title: title, Tab: "Faults", Message: "fault scenario " + f.name + " " + strings.Repeat("x", f.padding)})
	f.posted.Add(1)
	refusedInARow := 0
	postTo := f.postTo
	if postTo <= 0 || postTo > len(f.bases) {
		postTo = len(f.bases)
	}
	for attempt := 0; ; attempt++ {
		if attempt == 1 {
			f.retried.Add(1)
		}
		base := f.bases[(i%postTo+attempt)%len(f.bases)]
		status, receipt, err := f.post(ctx, base+"/webhooks/inbound?token="+f.tokens[u], title, body)
		wait := 200 * time.Millisecond
		switch {
		case err != nil && errors.Is(err, syscall.ECONNREFUSED):
			// Nothing was sent: on to the next instance, and a short wait
			// only once every one has refused.
			f.refused.Add(1)
			if refusedInARow++; refusedInARow%len(f.bases) != 0 {
				wait = 0
			} else {
				wait = 50 * time.Millisecond
			}
		case err != nil:
			f.unanswered.Add(1) // sent, and perhaps stored: the retry's key tells
		case status == http.StatusOK:
			f.acknowledge(u, receipt)
			return
		default:
			f.mu.Lock()
			f.statuses[status]++
			f.mu.Unlock()
			if status < 500 && status != http.StatusTooManyRequests {
				f.givenUp.Add(1) // refused for good: sending again cannot help
				return
			}
		}
		if time.Now().After(giveUp) || ctx.Err() != nil {
			f.givenUp.Add(1)
			return
		}
		time.Sleep(wait)
	}
}

// post sends one delivery and returns the status and, for a 200, the
// receipt.
func (f *faultRun) post(ctx context.Context, url, key string, body []byte) (int, *client.Receipt, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := f.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, err // the answer broke off: as good as none
	}
	if res.StatusCode != http.StatusOK {
		return res.StatusCode, nil, nil
	}
	var r client.Receipt
	if err := json.Unmarshal(b, &r); err != nil || len(r.IDs) == 0 {
		return 0, nil, fmt.Errorf("a 200 without ids: %s", b)
	}
	return res.StatusCode, &r, nil
}

func (f *faultRun) acknowledge(u int, r *client.Receipt) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ackedEvents++
	if r.Duplicate {
		f.redelivered++
	}
	now := time.Now()
	for _, s := range r.IDs {
		id, _ := strconv.ParseInt(s, 10, 64)
		if _, ok := f.acked[id]; !ok {
			f.acked[id], f.ackedAt[id] = u, now
		}
	}
}

// inScope is, per user, the acknowledged ids its clients must receive.
func (f *faultRun) inScope() [][]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([][]int64, f.users)
	for id, u := range f.acked {
		out[u] = append(out[u], id)
	}
	return out
}

// settleClients waits until every client has every acknowledged id of its
// scope, for f.settle at most, and returns how long that took (or
// f.settle when some never arrived).
func (f *faultRun) settleClients() time.Duration {
	want := f.inScope()
	start := time.Now()
	for time.Since(start) < f.settle {
		if !slices.ContainsFunc(f.clients, func(c *goodClient) bool { return c.missing(want[c.user]) > 0 }) {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return f.settle
}

// storedRow is a row of this run in the notifications table.
type storedRow struct {
	id    int64
	title string
}

// stored reads this run's rows from the database the instances share.
func (f *faultRun) stored() ([]storedRow, error) {
	driver, dsn := "sqlite", f.dsn
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		driver = "pgx"
	} else {
		dsn = "file:" + dsn + "?_pragma=busy_timeout(10000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	like := "'" + f.prefix + " %'" // the prefix is letters, digits and '-'
	rows, err := db.Query(`SELECT id, title FROM notifications WHERE title LIKE ` + like + ` ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storedRow
	for rows.Next() {
		var r storedRow
		if err := rows.Scan(&r.id, &r.title); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// report prints the scenario's line, acknowledged / stored /
// delivered-per-client / lost / duplicated, and a line of detail.
func (f *faultRun) report(sent, caughtUp time.Duration, stored []storedRow, bad *badClients) {
	want := f.inScope()
	ackedSet := map[int64]bool{}
	for _, ids := range want {
		for _, id := range ids {
			ackedSet[id] = true
		}
	}
	// Lost: an acknowledged id that some client of its scope lacks.
	// Duplicated: an id some client received more than once.
	lost, dup := map[int64]bool{}, map[int64]bool{}
	lo, hi, wantLo, wantHi := -1, 0, -1, 0
	missingPairs, disorder, connects, gaps := 0, 0, 0, 0
	closes := map[string]int{}
	var late []time.Duration
	byHome := make([][]time.Duration, len(f.bases))
	worst := map[int]time.Duration{} // by window of acknowledgement time
	const window = 2 * time.Second
	f.mu.Lock()
	ackedAt := f.ackedAt
	f.mu.Unlock()
	for _, c := range f.clients {
		s := c.summary(want[c.user], ackedAt)
		late = append(late, s.late...)
		byHome[c.home] = append(byHome[c.home], s.late...)
		for i, id := range s.lateIDs {
			w := int(ackedAt[id].Sub(f.start) / window)
			worst[w] = max(worst[w], s.late[i])
		}
		for _, id := range s.lost {
			lost[id] = true
		}
		for _, id := range s.repeated {
			dup[id] = true
		}
		missingPairs += len(s.lost)
		disorder += s.disorder
		connects += s.connects
		gaps += s.gaps
		for k, n := range s.closes {
			closes[k] += n
		}
		if lo < 0 || s.delivered < lo {
			lo = s.delivered
		}
		hi = max(hi, s.delivered)
		n := len(want[c.user])
		if wantLo < 0 || n < wantLo {
			wantLo = n
		}
		wantHi = max(wantHi, n)
	}
	storedIDs, titles := map[int64]bool{}, map[string]int{}
	twice := 0
	for _, r := range stored {
		storedIDs[r.id] = true
		if titles[r.title]++; titles[r.title] == 2 {
			twice++
		}
	}
	notStored, notAcked := 0, 0
	for id := range ackedSet {
		if !storedIDs[id] {
			notStored++
		}
	}
	for id := range storedIDs {
		if !ackedSet[id] {
			notAcked++
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Printf("faults %s: acknowledged %d / stored %d / delivered per client %d–%d (in scope %d–%d) / lost %d / duplicated %d\n",
		f.name, len(ackedSet), len(stored), lo, hi, wantLo, wantHi, len(lost), len(dup))
	fmt.Printf("  %s: %d events posted in %s, %d acknowledged (%d of them as a redelivery of one stored before), %d given up;"+
		" answers other than 200: %s; dials refused %d; requests unanswered %d; events retried %d;"+
		" stored but not acknowledged %d; acknowledged but not stored %d; titles stored twice %d;"+
		" clients caught up %s after the load; (client, id) pairs missing %d; frames out of order %d; connections %d, ready with gap %d; how connections ended or failed: %s\n",
		f.name, f.posted.Load(), sent.Round(100*time.Millisecond), f.ackedEvents, f.redelivered, f.givenUp.Load(),
		countsString(f.statuses), f.refused.Load(), f.unanswered.Load(), f.retried.Load(),
		notAcked, notStored, twice, caughtUpString(caughtUp, f.settle), missingPairs, disorder, connects, gaps, countsString(closes))
	if len(late) > 0 {
		fmt.Printf("  %s: frame after acknowledgement, over every (client, id): %s", f.name, delays(late))
		if len(f.bases) > 1 {
			fmt.Printf("; by the instance the client started on:")
			for i, l := range byHome {
				if len(l) > 0 {
					fmt.Printf(" %d: %s;", i+1, delays(l))
				}
			}
		}
		fmt.Printf("\n  %s: the slowest frame after acknowledgement, by when it was acknowledged (seconds into the load):", f.name)
		for w := range slices.Max(slices.Collect(maps.Keys(worst))) + 1 {
			fmt.Printf(" %d–%ds %.0f ms;", w*int(window/time.Second), (w+1)*int(window/time.Second), ms(worst[w]))
		}
		fmt.Println()
	}
	if bad != nil {
		fmt.Printf("  %s: misbehaving clients: %s\n", f.name, bad.summary())
	}
	if len(lost) > 0 {
		fmt.Printf("  %s: lost ids (first 20): %v\n", f.name, firstSorted(lost, 20))
	}
	if len(dup) > 0 {
		fmt.Printf("  %s: duplicated ids (first 20): %v\n", f.name, firstSorted(dup, 20))
	}
}

// delays sums up how late frames came: p50, p99 and the slowest.
func delays(d []time.Duration) string {
	slices.Sort(d)
	return fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms", quantile(d, 0.5), quantile(d, 0.99), ms(d[len(d)-1]))
}

func caughtUpString(d, settle time.Duration) string {
	switch {
	case d >= settle:
		return "NOT within " + settle.String()
	case d < 10*time.Millisecond:
		return "at once"
	}
	return "within " + d.Round(10*time.Millisecond).String()
}

// countsString prints counts by key, sorted: "503 ×12, 500 ×3", or "none".
func countsString[K comparable](m map[K]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%v ×%d", k, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func firstSorted(set map[int64]bool, n int) []int64 {
	ids := make([]int64, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids[:min(n, len(ids))]
}
