package storetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// queueStore is a fresh store whose clock the test moves, with one
// organisation.
func queueStore(t *testing.T, s *store.Store) (*storetest.Clock, string) {
	t.Helper()
	clock := storetest.NewClock()
	s.Now = clock.Now
	return clock, mustOrgID(t, s, "Ada")
}

func forwardJob(orgID string, n int) store.Job {
	return store.Job{OrgID: orgID, Kind: store.JobWorkflowForward, Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}
}

func mustEnqueue(tb testing.TB, s *store.Store, jobs ...store.Job) []store.Job {
	tb.Helper()
	if err := s.EnqueueJobs(context.Background(), jobs); err != nil {
		tb.Fatalf("EnqueueJobs: %v", err)
	}
	return jobs
}

func mustClaim(tb testing.TB, s *store.Store, now time.Time, lease time.Duration, limit int) []store.Job {
	tb.Helper()
	jobs, err := s.ClaimJobs(context.Background(), now, lease, limit)
	if err != nil {
		tb.Fatalf("ClaimJobs: %v", err)
	}
	return jobs
}

func mustRetry(tb testing.TB, s *store.Store, id, errText string, now time.Time) bool {
	tb.Helper()
	gaveUp, err := s.RetryJob(context.Background(), id, errText, now)
	if err != nil {
		tb.Fatalf("RetryJob: %v", err)
	}
	return gaveUp
}

// jobIDs names jobs as a set: jobs queued together are claimed in no
// promised order.
func jobIDs(jobs []store.Job) string {
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// Queued jobs are claimed with their data, hidden while leased, done when
// completed, and claimed again when their worker vanished.
func TestJobsAreClaimedLeasedAndCompleted(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock, org := queueStore(t, s)
		queued := mustEnqueue(t, s, forwardJob(org, 1), store.Job{OrgID: org, Kind: store.JobWorkflowEmail})
		now := clock.Now()
		for _, j := range queued {
			if j.ID == "" || !j.CreatedAt.Equal(now) || !j.NextAt.Equal(now) {
				t.Fatalf("queued job = {ID:%q CreatedAt:%s NextAt:%s}, want an id and both times %s", j.ID, j.CreatedAt, j.NextAt, now)
			}
		}
		lease := time.Minute
		claimed := mustClaim(t, s, now, lease, 10)
		if jobIDs(claimed) != jobIDs(queued) {
			t.Fatalf("claimed %s, want %s", jobIDs(claimed), jobIDs(queued))
		}
		if claimed[0].Kind != store.JobWorkflowForward {
			claimed[0], claimed[1] = claimed[1], claimed[0]
		}
		first := claimed[0]
		if first.OrgID != org || first.Kind != store.JobWorkflowForward || string(first.Payload) != `{"n":1}` ||
			first.Attempts != 0 || !first.NextAt.Equal(now.Add(lease)) || !first.FailedAt.IsZero() {
			t.Fatalf("claimed job = %+v, want its kind and payload, leased until %s", first, now.Add(lease))
		}
		if string(claimed[1].Payload) != "null" {
			t.Fatalf("a job queued without a payload has %q, want null", claimed[1].Payload)
		}
		if got := mustClaim(t, s, now.Add(lease-time.Millisecond), lease, 10); len(got) != 0 {
			t.Fatalf("within the lease %s were claimed again", jobIDs(got))
		}
		if err := s.CompleteJob(context.Background(), first.ID); err != nil {
			t.Fatal(err)
		}
		if got := mustClaim(t, s, now.Add(lease), lease, 10); jobIDs(got) != claimed[1].ID {
			t.Fatalf("after the lease (a crashed worker) %q were claimed, want only the unfinished %s", jobIDs(got), claimed[1].ID)
		}
		wantCode(t, s.CompleteJob(context.Background(), first.ID), perch.ENOTFOUND)
		wantCode(t, s.CompleteJob(context.Background(), "nope"), perch.ENOTFOUND)
	})
}

// Every failure waits longer than the one before, up to an hour.
func TestRetryJobBacksOffExponentiallyUpToAnHour(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock, org := queueStore(t, s)
		id := mustEnqueue(t, s, forwardJob(org, 1))[0].ID
		now := clock.Now()
		mustClaim(t, s, now, time.Minute, 1)
		for attempt, nominal := range []time.Duration{
			10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second,
			320 * time.Second, 640 * time.Second, 1280 * time.Second, 2560 * time.Second, time.Hour, time.Hour,
		} {
			if mustRetry(t, s, id, fmt.Sprint("refused ", attempt+1), now) {
				t.Fatalf("failure %d gave up", attempt+1)
			}
			earliest := now.Add(nominal - nominal/5)
			if got := mustClaim(t, s, earliest.Add(-time.Millisecond), time.Minute, 1); len(got) != 0 {
				t.Fatalf("failure %d: retried before %s, 80%% of %s", attempt+1, earliest.Sub(now), nominal)
			}
			got := mustClaim(t, s, now.Add(nominal), time.Minute, 1)
			if len(got) != 1 {
				t.Fatalf("failure %d: not retried after %s", attempt+1, nominal)
			}
			if got[0].Attempts != attempt+1 || got[0].LastError != fmt.Sprint("refused ", attempt+1) {
				t.Fatalf("failure %d: job has %d attempts and error %q", attempt+1, got[0].Attempts, got[0].LastError)
			}
			now = now.Add(nominal)
		}
	})
}

func TestJobBackoffStaysWithinItsBounds(t *testing.T) {
	t.Parallel()
	for attempts := -1; attempts <= 100; attempts++ {
		nominal := time.Hour
		if attempts < 20 {
			nominal = min(10*time.Second<<max(attempts-1, 0), time.Hour)
		}
		for range 20 {
			if d := store.JobBackoff(attempts); d < nominal-nominal/5 || d > nominal {
				t.Fatalf("JobBackoff(%d) = %s, want within [%s, %s]", attempts, d, nominal-nominal/5, nominal)
			}
		}
	}
}

// A job is tried for the last time 24 hours after it was queued; failing
// then, it is given up and listed for the runs page until pruned.
func TestRetryJobGivesUpAfter24Hours(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock, org := queueStore(t, s)
		bob := mustOrgID(t, s, "Bob")
		queued := mustEnqueue(t, s, forwardJob(org, 1))[0]
		deadline := queued.CreatedAt.Add(perch.WorkflowRetryFor)
		now, tries := clock.Now(), 0
		for {
			got := mustClaim(t, s, now, time.Minute, 1)
			if len(got) != 1 {
				t.Fatalf("after %d tries the job was not claimed at %s", tries, now)
			}
			tries++
			if mustRetry(t, s, queued.ID, "connection refused", now) {
				break
			}
			if now.After(deadline) || tries > 100 {
				t.Fatalf("still retried at %s after %d tries, past the deadline %s", now, tries, deadline)
			}
			now = now.Add(time.Hour) // due by then whatever the jitter
			if now.After(deadline) {
				now = deadline
			}
		}
		if !now.Equal(deadline) {
			t.Fatalf("gave up at %s, want at the last try, %s after it was queued", now, perch.WorkflowRetryFor)
		}
		if got := mustClaim(t, s, now.Add(48*time.Hour), time.Minute, 10); len(got) != 0 {
			t.Fatalf("a job given up was claimed again: %s", jobIDs(got))
		}
		if !mustRetry(t, s, queued.ID, "again", now.Add(time.Hour)) {
			t.Fatal("a job given up was retried again")
		}
		wantCode(t, s.CompleteJob(context.Background(), queued.ID), perch.ENOTFOUND)
		failed, err := s.FailedJobs(context.Background(), org, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(failed) != 1 || failed[0].ID != queued.ID || failed[0].LastError != "connection refused" ||
			failed[0].Attempts != tries || !failed[0].FailedAt.Equal(now) {
			t.Fatalf("failed jobs = %+v, want the job with its error, %d attempts, given up at %s", failed, tries, now)
		}
		if others, err := s.FailedJobs(context.Background(), bob, 10); err != nil || len(others) != 0 {
			t.Fatalf("another organisation's failed jobs = %d (%v), want none", len(others), err)
		}
		for _, tc := range []struct {
			before time.Time
			want   int64
		}{{now, 0}, {now.Add(time.Millisecond), 1}, {now.Add(time.Hour), 0}} {
			if n, err := s.PruneJobs(context.Background(), tc.before); err != nil || n != tc.want {
				t.Fatalf("PruneJobs(given up before %s) = %d (%v), want %d", tc.before.Sub(now), n, err, tc.want)
			}
		}
	})
}

// A job whose worker keeps vanishing is given up once its lease runs out
// after 24 hours, instead of being claimed for ever.
func TestJobWhoseLeaseRunsOutAfter24HoursIsGivenUp(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock, org := queueStore(t, s)
		queued := mustEnqueue(t, s, forwardJob(org, 1))
		now := clock.Now()
		mustClaim(t, s, now, time.Hour, 1) // its worker never comes back
		clock.Advance(time.Hour)
		queued = append(queued, mustEnqueue(t, s, forwardJob(org, 2))...)
		late := now.Add(perch.WorkflowRetryFor)
		got := mustClaim(t, s, late, time.Minute, 10)
		if jobIDs(got) != queued[1].ID {
			t.Fatalf("claimed %q, want only the job that was never leased, %s", jobIDs(got), queued[1].ID)
		}
		failed, err := s.FailedJobs(context.Background(), org, 10)
		if err != nil || len(failed) != 1 || failed[0].ID != queued[0].ID || failed[0].LastError == "" {
			t.Fatalf("failed jobs = %+v (%v), want the vanished worker's job with an error", failed, err)
		}
	})
}

// Eight workers claiming at once never get the same job.
func TestConcurrentClaimersNeverShareAJob(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock, org := queueStore(t, s)
		var jobs []store.Job
		for i := range 50 {
			jobs = append(jobs, forwardJob(org, i))
		}
		mustEnqueue(t, s, jobs...)
		now := clock.Now()
		var mu sync.Mutex
		claims := map[string]int{}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for {
					got, err := s.ClaimJobs(context.Background(), now, time.Hour, 3)
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, j := range got {
						claims[j.ID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(claims) != len(jobs) {
			t.Fatalf("%d jobs were claimed, want %d", len(claims), len(jobs))
		}
		for id, n := range claims {
			if n != 1 {
				t.Errorf("job %s was claimed %d times", id, n)
			}
		}
	})
}

func TestEnqueueJobsQueuesAllOrNothing(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock, org := queueStore(t, s)
		for _, tc := range []struct {
			what string
			jobs []store.Job
			code string
		}{
			{"a payload that is not JSON", []store.Job{forwardJob(org, 1), {OrgID: org, Kind: "x", Payload: json.RawMessage(`{`)}}, perch.EBADREQUEST},
			{"a payload that is not UTF-8", []store.Job{{OrgID: org, Kind: "x", Payload: json.RawMessage("\"\xff\"")}}, perch.EBADREQUEST},
			{"no kind", []store.Job{{OrgID: org}}, perch.EBADREQUEST},
			{"a kind of 101 bytes", []store.Job{{OrgID: org, Kind: strings.Repeat("k", 101)}}, perch.EBADREQUEST},
			{"no organisation", []store.Job{{Kind: "x"}}, perch.EBADREQUEST},
			{"an organisation that does not exist", []store.Job{forwardJob(org, 1), forwardJob("nope", 2)}, perch.ENOTFOUND},
		} {
			wantCode(t, s.EnqueueJobs(context.Background(), tc.jobs), tc.code)
			if got := mustClaim(t, s, clock.Now(), time.Minute, 10); len(got) != 0 {
				t.Fatalf("%s: %d jobs were queued anyway", tc.what, len(got))
			}
		}
		if err := s.EnqueueJobs(context.Background(), nil); err != nil {
			t.Fatalf("queueing no jobs: %v", err)
		}
		_, err := s.ClaimJobs(context.Background(), clock.Now(), 0, 10)
		wantCode(t, err, perch.EBADREQUEST)
	})
}

// Whatever a failure's text holds, it is stored: it can come from a
// forward target's answer.
func TestRetryJobStoresAnyErrorText(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock, org := queueStore(t, s)
		id := mustEnqueue(t, s, forwardJob(org, 1))[0].ID
		mustRetry(t, s, id, "bad \x00 bytes \xff"+strings.Repeat("é", 3000), clock.Now())
		got := mustClaim(t, s, clock.Now().Add(time.Hour), time.Minute, 1)
		if len(got) != 1 {
			t.Fatal("the job was not retried")
		}
		if e := got[0].LastError; len(e) > 2000 || !utf8.ValidString(e) || strings.ContainsRune(e, 0) || !strings.HasPrefix(e, "bad  bytes \uFFFD") {
			t.Fatalf("stored error %q... (%d bytes), want valid text of at most 2000 bytes", e[:min(len(e), 20)], len(e))
		}
	})
}

// Jobs carried by a notification are queued in the transaction that stores
// it, with the stored notification in their payload; a redelivery queues
// nothing again, and an organisation deleted meanwhile loses its jobs
// without failing the other notifications of the batch.
func TestNotificationJobsAreQueuedWithTheNotification(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock, org := queueStore(t, s)
		job := store.NotificationJob{OrgID: org, Kind: store.JobWorkflowForward, Payload: func(n perch.Notification) (json.RawMessage, error) {
			return json.Marshal(map[string]string{"id": n.ID, "title": n.Title})
		}}
		gone := job
		gone.OrgID = "org_gone"
		batch := func() []store.NewNotification {
			return []store.NewNotification{
				{DedupeKey: "k1", Notification: perch.Notification{Title: "first", Severity: perch.SeverityInfo, Tab: "t", Source: "inbound", Scope: perch.Scope{Type: perch.ScopeOrg, ID: org}}, Jobs: []store.NotificationJob{job, job}},
				{DedupeKey: "k2", Notification: perch.Notification{Title: "second", Severity: perch.SeverityInfo, Tab: "t", Source: "inbound", Scope: perch.Scope{Type: perch.ScopeOrg, ID: org}}, Jobs: []store.NotificationJob{gone}},
			}
		}
		stored, err := s.InsertNotifications(context.Background(), batch(), nil)
		if err != nil {
			t.Fatalf("InsertNotifications: %v", err)
		}
		jobs := mustClaim(t, s, clock.Now(), time.Minute, 10)
		if len(jobs) != 2 {
			t.Fatalf("%d jobs queued, want the first notification's 2", len(jobs))
		}
		want := fmt.Sprintf(`{"id":%q,"title":"first"}`, stored[0].Notification.ID)
		for _, j := range jobs {
			if string(j.Payload) != want || j.OrgID != org || j.Kind != store.JobWorkflowForward {
				t.Errorf("job = %s %s %s, want %s", j.OrgID, j.Kind, j.Payload, want)
			}
		}
		again, err := s.InsertNotifications(context.Background(), batch(), nil)
		if err != nil || !again[0].Duplicate {
			t.Fatalf("redelivery: %v, %+v", err, again)
		}
		if n := len(mustClaim(t, s, clock.Now().Add(time.Hour), time.Minute, 10)); n != 2 {
			t.Fatalf("after a redelivery %d jobs are due (the 2 leased ones, again), want 2", n)
		}
	})
}
