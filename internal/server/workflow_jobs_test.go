package server

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/ingest"
	"github.com/perch-dev/perch/internal/netguard"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
	"github.com/perch-dev/perch/internal/worker"
)

// forwarded is one request a test receiver got.
type forwarded struct {
	header http.Header
	body   []byte
}

// receiver is a forward target on loopback that answers with statuses in
// turn (200 once they run out) and keeps what it got.
type receiver struct {
	url      string
	mu       sync.Mutex
	statuses []int
	got      []forwarded
}

func startReceiver(t *testing.T, statuses ...int) *receiver {
	t.Helper()
	rc := &receiver{statuses: statuses}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, forwarded{header: r.Header.Clone(), body: body})
		status := http.StatusOK
		if len(rc.statuses) > 0 {
			status, rc.statuses = rc.statuses[0], rc.statuses[1:]
		}
		rc.mu.Unlock()
		w.WriteHeader(status)
		if status >= 300 {
			io.WriteString(w, strings.Repeat("the receiver is down ", 50))
		}
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL + "/hook?token=secret-in-the-url"
	return rc
}

func (rc *receiver) requests() []forwarded {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]forwarded(nil), rc.got...)
}

// workflowNotification is what a workflow hands to a forward or e-mail job.
func workflowNotification(a *api, orgID string) perch.Notification {
	return perch.Notification{ID: "ntf_1", Tab: perch.TabMonitoring, Title: "Disk full on db-1", Message: "97% used\nsince 09:00",
		Severity: perch.SeverityError, Source: perch.SourceMonitor, URL: "https://monitor.example.com/db-1",
		CreatedAt: a.clock.Now(), Scope: perch.Scope{Type: perch.ScopeOrg, ID: orgID}}
}

// queueJob queues one job, as ingest does for a delivered run.
func queueJob(t *testing.T, a *api, orgID, kind string, payload any) store.Job {
	t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	jobs := []store.Job{{OrgID: orgID, Kind: kind, Payload: raw}}
	if err := a.store.EnqueueJobs(t.Context(), jobs); err != nil {
		t.Fatal(err)
	}
	return jobs[0]
}

// queueForward queues a forward of n to url, signed with secret (sealed,
// as the workflow keeps it).
func queueForward(t *testing.T, a *api, orgID, url, secret string, n perch.Notification) store.Job {
	t.Helper()
	sealed, err := a.srv.sealSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	return queueJob(t, a, orgID, store.JobWorkflowForward, worker.ForwardJob{WorkflowID: "wf_1", Notification: n, URL: url, Secret: sealed})
}

func tick(t *testing.T, a *api) {
	t.Helper()
	if err := a.worker.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// pendingJobs answers the jobs still being tried, by id, as a claim made
// after every backoff would see them (so call it last).
func pendingJobs(t *testing.T, a *api) map[string]store.Job {
	t.Helper()
	jobs, err := a.store.ClaimJobs(t.Context(), a.clock.Now().Add(2*time.Hour), time.Millisecond, 100)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Job{}
	for _, j := range jobs {
		out[j.ID] = j
	}
	return out
}

// A forward reaches its receiver signed, with the notification as the
// API writes it; a receiver that fails twice gets the job again after each
// backoff, not before, and the third attempt completes it.
func TestWorkflowForwardIsSignedAndRetried(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		a.setWorker(func(o *worker.Options) { o.AllowPrivate = true })
		owner := a.register("owner")
		rc := startReceiver(t, http.StatusInternalServerError, http.StatusBadGateway)
		n := workflowNotification(a, owner.OrgID)
		job := queueForward(t, a, owner.OrgID, rc.url, "whsec_forward", n)

		tick(t, a)
		tick(t, a) // before the backoff ends: not tried again
		if got := len(rc.requests()); got != 1 {
			t.Fatalf("after the first failure the receiver got %d requests, want 1", got)
		}
		a.clock.Advance(10 * time.Second) // JobBackoff(1) is at most 10 s
		tick(t, a)
		a.clock.Advance(20 * time.Second) // JobBackoff(2) is at most 20 s
		tick(t, a)

		reqs := rc.requests()
		if len(reqs) != 3 {
			t.Fatalf("the receiver got %d requests, want 3", len(reqs))
		}
		for i, r := range reqs {
			h := r.header
			if h.Get("Content-Type") != "application/json" || h.Get("User-Agent") != "Perch-Workflow/1" ||
				h.Get("X-Perch-Workflow") != "wf_1" || h.Get("X-Perch-Delivery") != job.ID {
				t.Errorf("request %d headers: %v", i, h)
			}
			if err := netguard.Verify("whsec_forward", h.Get("X-Perch-Signature"), r.body, a.clock.Now(), time.Minute); err != nil {
				t.Errorf("request %d signature %q: %v", i, h.Get("X-Perch-Signature"), err)
			}
			var got perch.Notification
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatalf("request %d body %s: %v", i, r.body, err)
			}
			if !got.CreatedAt.Equal(n.CreatedAt) {
				t.Errorf("request %d created_at %v, want %v", i, got.CreatedAt, n.CreatedAt)
			}
			got.CreatedAt = n.CreatedAt
			if !reflect.DeepEqual(got, n) {
				t.Errorf("request %d body %+v, want %+v", i, got, n)
			}
		}
		if pending := pendingJobs(t, a); len(pending) != 0 {
			t.Errorf("jobs still pending after the success: %+v", pending)
		}
		if failed, err := a.store.FailedJobs(t.Context(), owner.OrgID, 10); err != nil || len(failed) != 0 {
			t.Errorf("failed jobs %+v, %v", failed, err)
		}
	})
}

// A failure's text says what the receiver answered, in short, and never
// the URL (whose query may hold a token).
func TestWorkflowForwardFailureIsExplained(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		a.setWorker(func(o *worker.Options) { o.AllowPrivate = true })
		owner := a.register("owner")
		rc := startReceiver(t, http.StatusServiceUnavailable)
		unsigned := queueForward(t, a, owner.OrgID, rc.url, "", workflowNotification(a, owner.OrgID))
		tick(t, a)
		if reqs := rc.requests(); len(reqs) != 1 || reqs[0].header.Get("X-Perch-Signature") != "" {
			t.Fatalf("a forward without a secret: %+v", reqs)
		}
		j := pendingJobs(t, a)[unsigned.ID]
		if j.Attempts != 1 || !strings.HasPrefix(j.LastError, "the receiver answered 503 Service Unavailable: the receiver is down") ||
			len(j.LastError) > 300 || strings.Contains(j.LastError, "secret-in-the-url") {
			t.Errorf("job after a 503: %d attempts, error %q", j.Attempts, j.LastError)
		}
	})
}

// countingListener accepts connections on loopback and counts them: a
// refused forward must never make one.
type countingListener struct {
	ln   net.Listener
	n    atomic.Int64
	done chan struct{}
}

func listenCounting(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(cl.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			cl.n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-cl.done })
	return cl
}

// stubResolver answers names from a map and never asks DNS.
type stubResolver map[string]string

func (r stubResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if ip, ok := r[host]; ok {
		return []net.IPAddr{{IP: net.ParseIP(ip)}}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// Without PERCH_WORKFLOW_ALLOW_PRIVATE, forwards to the host itself, in any
// spelling, or to a name that resolves into a refused range, never
// connect: the job is refused, with an error naming the refusal, and not
// retried.
func TestWorkflowForwardRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s) // AllowPrivate is off
		a.setWorker(func(o *worker.Options) {
			o.Resolver = stubResolver{"localhost": "127.0.0.1", "metadata.example.com": "169.254.169.254"}
		})
		owner := a.register("owner")
		cl := listenCounting(t)
		_, port, _ := net.SplitHostPort(cl.ln.Addr().String())
		n := workflowNotification(a, owner.OrgID)
		targets := map[string]string{ // host → what the error must say
			"127.0.0.1":            "loopback",
			"localhost":            "loopback",
			"[::ffff:127.0.0.1]":   "loopback",
			"0.0.0.0":              "unspecified",
			"metadata.example.com": "metadata",
		}
		ids := map[string]string{}
		for host := range targets {
			ids[host] = queueForward(t, a, owner.OrgID, "http://"+host+":"+port+"/hook", "whsec_x", n).ID
		}
		tick(t, a)
		if got := cl.n.Load(); got != 0 {
			t.Fatalf("the listener got %d connections, want 0", got)
		}
		// A refusal is not retried: each job is given up at once, marked
		// refused, and none is left to try again.
		failed, err := a.store.FailedJobs(t.Context(), owner.OrgID, 10)
		if err != nil {
			t.Fatal(err)
		}
		refused := map[string]store.Job{}
		for _, j := range failed {
			refused[j.ID] = j
		}
		for host, why := range targets {
			j, ok := refused[ids[host]]
			if !ok || !j.Refused || j.Attempts != 1 || !strings.Contains(j.LastError, "refused") || !strings.Contains(j.LastError, why) ||
				!strings.Contains(j.LastError, "PERCH_WORKFLOW_ALLOW_PRIVATE") || j.Delivery().State != perch.DeliveryRefused {
				t.Errorf("forward to %s: refused %v (%v), %d attempts, error %q", host, ok, j.Refused, j.Attempts, j.LastError)
			}
		}
		if pending := pendingJobs(t, a); len(pending) != 0 {
			t.Errorf("refused forwards are still to be tried: %+v", pending)
		}
	})
}

// E-mail steps reach the owners, the owners and admins, or one team's
// members, each once, and nobody else: not plain members, not a disabled
// admin, not another organisation. A team that is gone fails the job with
// an error that says so.
func TestWorkflowEmailReachesItsRecipients(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ctx := t.Context()
		owner := a.register("owner")
		admin := a.invite(owner, "admin", perch.RoleAdmin)
		gone := a.invite(owner, "gone", perch.RoleAdmin)
		inTeam := a.invite(owner, "inteam", perch.RoleMember)
		member := a.invite(owner, "member", perch.RoleMember)
		outsider := a.register("outsider")
		team, err := s.CreateTeam(ctx, owner.OrgID, "On call", "")
		if err != nil {
			t.Fatal(err)
		}
		for _, acc := range []*account{inTeam, admin, gone} {
			if err := s.AddTeamMember(ctx, owner.OrgID, team.ID, acc.ID); err != nil {
				t.Fatal(err)
			}
		}
		otherTeam, err := s.CreateTeam(ctx, outsider.OrgID, "Theirs", "")
		if err != nil {
			t.Fatal(err)
		}
		disabled := true
		if _, err := s.UpdateUserAsAdmin(ctx, gone.ID, perch.AdminUserUpdate{Disabled: &disabled}, nil); err != nil {
			t.Fatal(err)
		}
		wf, err := s.CreateWorkflow(ctx, &perch.Workflow{OrgID: owner.OrgID, CreatedBy: owner.ID, Name: "Page the on-call", Enabled: true,
			Steps: []perch.Step{{Email: &perch.EmailStep{To: team.ID}}}})
		if err != nil {
			t.Fatal(err)
		}
		everyone := []*account{owner, admin, gone, inTeam, member, outsider}
		a.srv.mailing.Wait() // account mail sent in the background is in: counts below are the workflow's
		before := map[string]int{}
		for _, acc := range everyone {
			before[acc.Email] = a.mail.Count(acc.Email)
		}

		n := workflowNotification(a, owner.OrgID)
		for _, to := range []string{"owners", "admins", team.ID} {
			queueJob(t, a, owner.OrgID, store.JobWorkflowEmail, worker.EmailJob{WorkflowID: wf.ID, Notification: n, To: to})
		}
		missing := queueJob(t, a, owner.OrgID, store.JobWorkflowEmail, worker.EmailJob{WorkflowID: wf.ID, Notification: n, To: otherTeam.ID})
		tick(t, a)

		want := map[*account]int{owner: 2, admin: 2, inTeam: 1} // owners+admins; admins+team; team
		for _, acc := range everyone {
			if got := a.mail.Count(acc.Email) - before[acc.Email]; got != want[acc] {
				t.Errorf("%s got %d workflow messages, want %d", acc.Email, got, want[acc])
			}
		}
		m := a.mail.WaitFor(t, inTeam.Email)
		for m.Subject != "[Perch] Disk full on db-1" {
			m = a.mail.WaitFor(t, inTeam.Email) // pass over the account's own mail
		}
		for _, w := range []string{"97% used", "since 09:00", "Severity: error", "Source: monitoring", "https://monitor.example.com/db-1", `workflow "Page the on-call"`} {
			if !strings.Contains(m.Text, w) {
				t.Errorf("the message lacks %q:\n%s", w, m.Text)
			}
		}

		pending := pendingJobs(t, a)
		if len(pending) != 1 {
			t.Fatalf("pending jobs %+v, want only the one to another organisation's team", pending)
		}
		if j := pending[missing.ID]; j.Attempts != 1 || !strings.Contains(j.LastError, "not in the organisation") {
			t.Errorf("the job to another organisation's team: %d attempts, error %q", j.Attempts, j.LastError)
		}
	})
}

// Notifications held for a digest come out, once their window ended, as
// one notification in the history: the count and first title, the titles,
// the highest severity. A second tick adds nothing.
func TestWorkflowDigestDeliversOneSummary(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner := a.register("owner")
		hold := []perch.Notification{
			{Tab: "Deploys", Title: "Deploy 1 failed", Severity: perch.SeverityWarning, Source: perch.SourceCodeHost, URL: "https://ci.example.com/1"},
			{Tab: "Deploys", Title: "Deploy 2 failed", Severity: perch.SeverityError, Source: perch.SourceCodeHost, URL: "https://ci.example.com/2"},
			{Tab: "Deploys", Title: "Deploy 3 failed", Severity: perch.SeverityInfo, Source: perch.SourceCodeHost, URL: "https://ci.example.com/3"},
		}
		for _, n := range hold {
			n.Scope = perch.Scope{Type: perch.ScopeOrg, ID: owner.OrgID}
			if _, err := s.HoldForDigest(t.Context(), owner.OrgID, "deploys", 15*time.Minute, n, a.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		tick(t, a) // the window is open
		if got := history(t, a, owner); len(got) != 0 {
			t.Fatalf("delivered before the window ended: %v", got)
		}
		a.clock.Advance(15 * time.Minute)
		tick(t, a)
		tick(t, a)
		got := history(t, a, owner)
		if len(got) != 1 {
			t.Fatalf("history %v, want one summary", got)
		}
		d := got[0]
		if d["title"] != "3 notifications: Deploy 1 failed" || d["severity"] != perch.SeverityError || d["tab"] != "Deploys" ||
			d["source"] != perch.SourceCodeHost || d["url"] != "" {
			t.Errorf("summary %v", d)
		}
		if d["message"] != "• Deploy 1 failed\n• Deploy 2 failed\n• Deploy 3 failed" {
			t.Errorf("summary message %q", d["message"])
		}
	})
}

// A digest whose summary cannot be written is not lost: the tick reports
// the failure, and the next one delivers it.
func TestWorkflowDigestSurvivesAFailedWrite(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner := a.register("owner")
		for _, title := range []string{"First", "Second"} {
			n := perch.Notification{Tab: "T", Title: title, Severity: perch.SeverityInfo, Source: perch.SourceInbound, Scope: perch.Scope{Type: perch.ScopeUser, ID: owner.ID}}
			if _, err := s.HoldForDigest(t.Context(), owner.OrgID, "k", time.Minute, n, a.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		a.clock.Advance(time.Minute)
		stopped := ingest.New(s, a.srv.fanout, a.srv.log)
		cancelled, cancel := context.WithCancel(t.Context())
		cancel()
		stopped.Run(cancelled) // returns at once: every write is ErrStopped
		a.setWorker(func(o *worker.Options) { o.Ingest = stopped })
		if err := a.worker.Tick(t.Context()); err == nil {
			t.Fatal("a tick whose digest could not be written reported no error")
		}
		a.setWorker(func(*worker.Options) {}) // the working writer again
		a.clock.Advance(time.Millisecond)
		tick(t, a)
		tick(t, a)
		if got := history(t, a, owner); len(got) != 1 || got[0]["title"] != "2 notifications: First" {
			t.Fatalf("history %v, want the digest once", got)
		}
	})
}

// history is acc's notifications, read with an API token.
func history(t *testing.T, a *api, acc *account) []map[string]any {
	t.Helper()
	if acc.Token == "" {
		a.apiToken(acc, "history") // outlives the clock's moves, unlike an access token
	}
	return expect(t, a.call("GET", "/api/v1/notifications", acc.Token, nil), 200).List()
}

// A job claimed by a worker that stopped before finishing it (its instance
// crashed) is carried out by another once its lease ends, not before.
func TestWorkflowJobOfACrashedWorkerIsTakenAfterItsLease(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		a.setWorker(func(o *worker.Options) { o.AllowPrivate = true })
		owner := a.register("owner")
		rc := startReceiver(t)
		job := queueForward(t, a, owner.OrgID, rc.url, "whsec_x", workflowNotification(a, owner.OrgID))
		claimed, err := s.ClaimJobs(t.Context(), a.clock.Now(), worker.JobLease, 10) // the crashed worker's claim
		if err != nil || len(claimed) != 1 || claimed[0].ID != job.ID {
			t.Fatalf("claim %+v, %v", claimed, err)
		}
		tick(t, a)
		if got := len(rc.requests()); got != 0 {
			t.Fatalf("a job under another worker's lease was carried out (%d requests)", got)
		}
		a.clock.Advance(worker.JobLease)
		tick(t, a)
		if reqs := rc.requests(); len(reqs) != 1 || reqs[0].header.Get("X-Perch-Delivery") != job.ID {
			t.Fatalf("after the lease the receiver got %d requests", len(reqs))
		}
		if pending := pendingJobs(t, a); len(pending) != 0 {
			t.Errorf("jobs still pending: %+v", pending)
		}
	})
}

// The worker, polling only hourly, carries out a job as soon as it is
// woken, and stops when its context ends.
func TestWorkflowWorkerWakes(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		a.setWorker(func(o *worker.Options) { o.AllowPrivate = true; o.Poll = time.Hour })
		owner := a.register("owner")
		rc := startReceiver(t)
		ctx, cancel := context.WithCancel(t.Context())
		stopped := make(chan struct{})
		go func() { a.worker.Run(ctx); close(stopped) }()
		defer func() { cancel(); <-stopped }()

		queueForward(t, a, owner.OrgID, rc.url, "whsec_x", workflowNotification(a, owner.OrgID))
		a.worker.Wake()
		a.worker.Wake() // a second wake while one is pending does not block
		testenv.Eventually(t, 10*time.Second, func() bool { return len(rc.requests()) > 0 }, "the woken worker did not forward")
	})
}
