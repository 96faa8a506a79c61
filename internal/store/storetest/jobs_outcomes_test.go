package storetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// jobState reads one job's delivery back through the runs' lookup.
func jobState(t *testing.T, s *store.Store, orgID, runID, id string) perch.Delivery {
	t.Helper()
	jobs, err := s.RunJobs(context.Background(), orgID, []string{runID})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs[runID] {
		if j.ID == id {
			return j.Delivery()
		}
	}
	t.Fatalf("job %s is not among run %s's jobs %+v", id, runID, jobs[runID])
	return perch.Delivery{}
}

// Every outcome the worker records is kept in the job's row and read back
// as its state: queued, retrying, delivered (kept, its payload cleared),
// refused at once, given up; RunJobs answers a run's jobs in the order of
// its steps, only the organisation's.
func TestJobsKeepTheirOutcome(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		clock, org := queueStore(t, s)
		bob := mustOrgID(t, s, "Bob")
		now := clock.Now()
		jobs := make([]store.Job, 4)
		for i := range jobs {
			jobs[i] = forwardJob(org, i)
			jobs[i].RunID, jobs[i].Step, jobs[i].WorkflowID, jobs[i].NotificationID = "run1", 3-i, "wf1", "42"
		}
		jobs[3].Kind = store.JobWorkflowEmail
		mustEnqueue(t, s, jobs...)
		other := forwardJob(bob, 9)
		other.RunID, other.Step = "run1", 0
		mustEnqueue(t, s, other)

		byRun, err := s.RunJobs(ctx, org, []string{"run1", "nosuchrun"})
		if err != nil || len(byRun) != 1 || len(byRun["run1"]) != 4 {
			t.Fatalf("RunJobs = %+v, %v; want run1's four jobs, not Bob's", byRun, err)
		}
		for i, j := range byRun["run1"] {
			if j.Step != i || j.WorkflowID != "wf1" || j.NotificationID != "42" || j.Delivery().State != perch.DeliveryQueued ||
				j.Delivery().NextAttemptAt == nil || !j.Delivery().NextAttemptAt.Equal(now) {
				t.Errorf("job %d of the run = %+v, want step %d, queued, due now", i, j, i)
			}
		}
		if got := byRun["run1"][0].Delivery().Kind; got != perch.DeliveryEmail {
			t.Errorf("the e-mail job's kind = %q", got)
		}

		mustClaim(t, s, now, time.Minute, 10)
		clock.Advance(time.Second)
		if err := s.CompleteJob(ctx, jobs[0].ID); err != nil {
			t.Fatal(err)
		}
		if d := jobState(t, s, org, "run1", jobs[0].ID); d.State != perch.DeliveryDelivered || d.FinishedAt == nil ||
			!d.FinishedAt.Equal(clock.Now()) || d.NextAttemptAt != nil {
			t.Errorf("a completed job = %+v, want delivered at %s", d, clock.Now())
		}
		if mustRetry(t, s, jobs[1].ID, "the receiver answered 502", clock.Now()) {
			t.Fatal("one failure gave up")
		}
		if d := jobState(t, s, org, "run1", jobs[1].ID); d.State != perch.DeliveryRetrying || d.Attempts != 1 ||
			d.LastError != "the receiver answered 502" || d.NextAttemptAt == nil || !d.NextAttemptAt.After(clock.Now()) || d.FinishedAt != nil {
			t.Errorf("a failed job = %+v, want retrying", d)
		}
		if err := s.RefuseJob(ctx, jobs[2].ID, "127.0.0.1 is loopback", clock.Now()); err != nil {
			t.Fatal(err)
		}
		if d := jobState(t, s, org, "run1", jobs[2].ID); d.State != perch.DeliveryRefused || d.Attempts != 1 ||
			d.LastError != "127.0.0.1 is loopback" || d.NextAttemptAt != nil || d.FinishedAt == nil {
			t.Errorf("a refused job = %+v", d)
		}
		if !mustRetry(t, s, jobs[3].ID, "421 try later", now.Add(perch.WorkflowRetryFor)) {
			t.Fatal("a failure after 24 hours did not give up")
		}
		if d := jobState(t, s, org, "run1", jobs[3].ID); d.State != perch.DeliveryGivenUp || d.Attempts != 1 || d.LastError != "421 try later" {
			t.Errorf("a given-up job = %+v", d)
		}

		// Finished jobs are not claimed, completed, refused or retried
		// again. (Bob's, claimed and never finished, is given up by now.)
		if got := mustClaim(t, s, now.Add(48*time.Hour), time.Minute, 10); jobIDs(got) != jobs[1].ID {
			t.Errorf("claimed %s, want only the retrying job %s", jobIDs(got), jobs[1].ID)
		}
		wantCode(t, s.CompleteJob(ctx, jobs[0].ID), perch.ENOTFOUND)
		wantCode(t, s.RefuseJob(ctx, jobs[0].ID, "x", clock.Now()), perch.ENOTFOUND)
		if _, err := s.RetryJob(ctx, jobs[0].ID, "x", clock.Now()); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Errorf("RetryJob of a delivered job = %v, want ENOTFOUND", err)
		}
		if err := s.RefuseJob(ctx, jobs[3].ID, "x", clock.Now()); err != nil {
			t.Errorf("RefuseJob of a job given up already = %v, want it left as it is", err)
		}
		if d := jobState(t, s, org, "run1", jobs[3].ID); d.State != perch.DeliveryGivenUp || d.LastError != "421 try later" {
			t.Errorf("a given-up job refused again = %+v, want unchanged", d)
		}
		wantCode(t, s.RefuseJob(ctx, "nosuchjob", "x", clock.Now()), perch.ENOTFOUND)
	})
}

// The failed deliveries are the refused and given-up jobs, newest given up
// first, paged; RequeueJob queues a given-up one afresh, and a refused one
// only when allowed.
func TestFailedDeliveriesAndRequeue(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		clock, org := queueStore(t, s)
		bob := mustOrgID(t, s, "Bob")
		w, err := s.CreateWorkflow(ctx, &perch.Workflow{OrgID: org, Name: "Out", Steps: []perch.Step{{Drop: &perch.DropStep{}}}})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i := range 5 {
			j := forwardJob(org, i)
			j.WorkflowID = w.ID
			if i == 4 {
				j.WorkflowID = "deleted"
			}
			id := mustEnqueue(t, s, j)[0].ID
			if i%2 == 0 {
				mustRetry(t, s, id, fmt.Sprint("down ", i), clock.Now().Add(perch.WorkflowRetryFor))
			} else if err := s.RefuseJob(ctx, id, "refused", clock.Now().Add(perch.WorkflowRetryFor)); err != nil {
				t.Fatal(err)
			}
			ids = append([]string{id}, ids...)
			clock.Advance(time.Minute)
		}
		mustEnqueue(t, s, forwardJob(org, 9)) // still being tried: not listed
		seats := forwardJob(org, 8)
		seats.Kind = store.JobBillingSeats // given up, but no delivery: not listed, not retried here
		seatJob := mustEnqueue(t, s, seats)[0].ID
		if !mustRetry(t, s, seatJob, "stripe down", clock.Now().Add(perch.WorkflowRetryFor)) {
			t.Fatal("the seat job was not given up")
		}
		if _, _, err := s.RequeueJob(ctx, org, seatJob, true, clock.Now()); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Errorf("retrying a seat job as a delivery: %v, want ENOTFOUND", err)
		}
		b := mustEnqueue(t, s, forwardJob(bob, 9))[0]
		mustRetry(t, s, b.ID, "down", clock.Now().Add(perch.WorkflowRetryFor))

		var seen []string
		page := perch.Page{Limit: 2}
		for range 5 {
			list, next, err := s.FailedDeliveries(ctx, org, page)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range list {
				seen = append(seen, f.ID)
				wantName := "Out"
				if f.WorkflowID == "deleted" {
					wantName = ""
				}
				if f.WorkflowName != wantName || (f.Delivery().State != perch.DeliveryGivenUp && f.Delivery().State != perch.DeliveryRefused) {
					t.Errorf("listed %+v (%s)", f.Job, f.WorkflowName)
				}
			}
			if next == "" {
				break
			}
			page.Cursor = next
		}
		if fmt.Sprint(seen) != fmt.Sprint(ids) {
			t.Errorf("listed %v, want %v", seen, ids)
		}
		if _, _, err := s.FailedDeliveries(ctx, org, perch.Page{Cursor: "bad"}); perch.ErrorCode(err) != perch.EBADREQUEST {
			t.Errorf("a bad cursor = %v", err)
		}

		refused, givenUp := ids[1], ids[0] // the fourth job (refused), the fifth (given up)
		now := clock.Now()
		if _, _, err := s.RequeueJob(ctx, org, refused, false, now); perch.ErrorCode(err) != perch.ECONFLICT {
			t.Errorf("requeueing a refused job = %v, want ECONFLICT", err)
		}
		if _, _, err := s.RequeueJob(ctx, bob, givenUp, false, now); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Errorf("requeueing another organisation's job = %v, want ENOTFOUND", err)
		}
		before, after, err := s.RequeueJob(ctx, org, givenUp, false, now)
		if err != nil {
			t.Fatal(err)
		}
		if before.Delivery().State != perch.DeliveryGivenUp || after.Delivery().State != perch.DeliveryQueued || after.Attempts != 0 ||
			after.LastError != "" || !after.CreatedAt.Equal(now) || !after.NextAt.Equal(now) || string(after.Payload) != `{"n":4}` {
			t.Errorf("requeued %+v from %+v", after, before)
		}
		if _, _, err := s.RequeueJob(ctx, org, givenUp, false, now); perch.ErrorCode(err) != perch.ECONFLICT {
			t.Errorf("requeueing a queued job = %v, want ECONFLICT", err)
		}
		if _, after, err = s.RequeueJob(ctx, org, refused, true, now); err != nil || after.Delivery().State != perch.DeliveryQueued || after.Refused {
			t.Errorf("requeueing a refused job where allowed = %+v, %v", after, err)
		}
		// Queued afresh, they are claimed and have a new day to succeed.
		if got := mustClaim(t, s, now, time.Minute, 10); len(got) != 3 {
			t.Errorf("claimed %d after the requeue, want the two requeued and the one still tried", len(got))
		}
		if mustRetry(t, s, givenUp, "down again", now.Add(perch.WorkflowRetryFor-time.Second)) {
			t.Error("a requeued job gave up within its new day")
		}
	})
}

// Delivered and given-up jobs are pruned with the runs; those still tried
// never are.
func TestPruneJobsTakesDeliveredOnesToo(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		clock, org := queueStore(t, s)
		jobs := mustEnqueue(t, s, forwardJob(org, 1), forwardJob(org, 2), forwardJob(org, 3))
		if err := s.CompleteJob(ctx, jobs[0].ID); err != nil {
			t.Fatal(err)
		}
		mustRetry(t, s, jobs[1].ID, "down", clock.Now().Add(perch.WorkflowRetryFor))
		done := clock.Now()
		if n, err := s.PruneJobs(ctx, done); err != nil || n != 0 {
			t.Fatalf("PruneJobs(now) = %d, %v; want 0 (the delivered one was done at now)", n, err)
		}
		if n, err := s.PruneJobs(ctx, done.Add(perch.WorkflowRetryFor+time.Millisecond)); err != nil || n != 2 {
			t.Fatalf("PruneJobs = %d, %v; want the delivered and the given-up job", n, err)
		}
		if got := mustClaim(t, s, done, time.Minute, 10); jobIDs(got) != jobs[2].ID {
			t.Errorf("after pruning %s is left to claim, want %s", jobIDs(got), jobs[2].ID)
		}
	})
}

// Migration 00032 copies the workflow and notification of the jobs queued
// before it out of their payloads; they have no run.
func TestMigration32NamesTheWorkflowOfQueuedJobs(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Backends {
		t.Run(string(dialect), func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, dialect)
			db, p := migrator(t, dialect, dsn)
			_, exec := rawSQL(t, dialect, db)
			if _, err := p.UpTo(ctx, 28); err != nil {
				t.Fatal(err)
			}
			exec(`INSERT INTO orgs (id, name, slug, plan, plan_status, created_at) VALUES ('org1', 'Ada', 'ada', 'team', 'trialing', 1)`)
			payload, _ := json.Marshal(map[string]any{"workflow_id": "wf1", "notification": map[string]any{"id": "77", "title": "t"}, "url": "https://x.example.com"})
			exec(`INSERT INTO jobs (id, org_id, kind, payload, created_at, next_at) VALUES ('job1', 'org1', 'workflow.forward', ?, 1, 1)`, string(payload))
			exec(`INSERT INTO jobs (id, org_id, kind, payload, created_at, next_at) VALUES ('job2', 'org1', 'workflow.email', 'null', 1, 1)`)
			if _, err := p.UpTo(ctx, 32); err != nil {
				t.Fatal(err)
			}
			s, err := store.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			jobs, err := s.ClaimJobs(ctx, time.UnixMilli(2), time.Minute, 10)
			if err != nil || len(jobs) != 2 {
				t.Fatalf("claimed %+v, %v", jobs, err)
			}
			for _, j := range jobs {
				want := [3]any{"", "", -1}
				if j.ID == "job1" {
					want = [3]any{"wf1", "77", -1}
				}
				if got := [3]any{j.WorkflowID, j.NotificationID, j.Step}; got != want || j.RunID != "" || j.Refused || !j.DoneAt.IsZero() {
					t.Errorf("job %s after 00032 = %+v, want workflow, notification, step %v", j.ID, j, want)
				}
			}
			if _, err := p.DownTo(ctx, 28); err != nil {
				t.Fatalf("down from 00032: %v", err)
			}
			if _, err := p.UpTo(ctx, 32); err != nil {
				t.Fatalf("up again: %v", err)
			}
		})
	}
}
