package server

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/worker"
)

const failedDeliveriesPath = "/api/v1/org/workflows/failed-deliveries"

// givenUpJob queues a forward of orgID's workflow and gives it up, as 24
// hours of failures would, and answers its id.
func givenUpJob(a *api, orgID, workflowID string) string {
	a.t.Helper()
	payload, err := json.Marshal(worker.ForwardJob{WorkflowID: workflowID, Notification: workflowNotification(a, orgID),
		URL: "https://hooks.example.com/path?token=x"})
	if err != nil {
		a.t.Fatal(err)
	}
	jobs := []store.Job{{OrgID: orgID, Kind: store.JobWorkflowForward, Payload: payload, WorkflowID: workflowID}}
	if err := a.store.EnqueueJobs(a.t.Context(), jobs); err != nil {
		a.t.Fatal(err)
	}
	if gaveUp, err := a.store.RetryJob(a.t.Context(), jobs[0].ID, "the receiver answered 503", a.clock.Now().Add(perch.WorkflowRetryFor)); err != nil || !gaveUp {
		a.t.Fatalf("RetryJob = %v, %v; want given up", gaveUp, err)
	}
	return jobs[0].ID
}

// runSteps answers the steps of the workflow's newest run as the API
// answers them to acc's API token.
func (a *api) runSteps(acc *account, workflowID string) (runID string, steps []map[string]any) {
	a.t.Helper()
	a.srv.runs.Wait()
	runs := expect(a.t, a.call("GET", workflowsPath+"/"+workflowID+"/runs", acc.Token, nil), 200).List()
	if len(runs) == 0 {
		a.t.Fatal("the workflow has no runs")
	}
	for _, st := range runs[0]["steps"].([]any) {
		steps = append(steps, st.(map[string]any))
	}
	return runs[0]["id"].(string), steps
}

// job is a step's delivery, or nil.
func job(step map[string]any) map[string]any {
	j, _ := step["job"].(map[string]any)
	return j
}

// Each forward and e-mail step of a run shows what became of its delivery,
// as the worker records it: queued, then delivered, retrying with its
// attempts and next time, given up with the last error; a given-up one is
// listed among the failed deliveries, and a retry queues it again.
func TestWorkflowRunShowsEachDeliveryState(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		a.setWorker(func(o *worker.Options) { o.AllowPrivate = true })
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", perch.RoleMember)
		a.apiToken(ada, "laptop") // the test's day outlives access tokens
		a.apiToken(bob, "laptop")
		a.srv.mailing.Wait() // account mail sent in the background is in: the count below is the workflow's
		mailed := a.mail.Count(ada.Email)
		tok := a.webhookToken(ada, "org", "")
		ok := startReceiver(t)
		down := make([]int, 200)
		for i := range down {
			down[i] = 503
		}
		failing := startReceiver(t, down...)
		wf := a.addWorkflow(ada, "Errors out", `event.severity == "error"`,
			perch.Step{Set: map[string]string{"tab": `"Alerts"`}},
			perch.Step{Forward: &perch.ForwardStep{URL: ok.url}},
			perch.Step{Forward: &perch.ForwardStep{URL: failing.url}},
			perch.Step{Email: &perch.EmailStep{To: "owners"}})
		a.deliver(tok, map[string]any{"title": "disk full", "severity": "error"})

		runID, steps := a.runSteps(bob, wf) // members read the runs
		if steps[0]["status"] != "ok" || job(steps[0]) != nil {
			t.Errorf("the set step = %v, want ok without a job", steps[0])
		}
		for i, kind := range map[int]string{1: "forward", 2: "forward", 3: "email"} {
			j := job(steps[i])
			if steps[i]["status"] != "queued" || j == nil || j["state"] != "queued" || j["kind"] != kind || j["attempts"] != 0.0 ||
				j["next_attempt_at"] == nil || j["finished_at"] != nil || j["last_error"] != "" {
				t.Errorf("step %d before the worker ran = %v, want a queued %s", i, steps[i], kind)
			}
		}

		tick(t, a)
		_, steps = a.runSteps(bob, wf)
		if j := job(steps[1]); steps[1]["status"] != "delivered" || j["state"] != "delivered" || j["next_attempt_at"] != nil ||
			j["finished_at"] != a.clock.Now().UTC().Format(time.RFC3339) || j["attempts"] != 0.0 {
			t.Errorf("the forward that succeeded = %v", steps[1])
		}
		j := job(steps[2])
		next, _ := time.Parse(time.RFC3339, fmt.Sprint(j["next_attempt_at"]))
		if steps[2]["status"] != "retrying" || j["state"] != "retrying" || j["attempts"] != 1.0 ||
			!next.After(a.clock.Now()) || next.After(a.clock.Now().Add(10*time.Second)) ||
			!strings.HasPrefix(j["last_error"].(string), "the receiver answered 503") || j["finished_at"] != nil {
			t.Errorf("the forward that failed once = %v, want retrying within 10 s", steps[2])
		}
		if steps[3]["status"] != "delivered" || job(steps[3])["state"] != "delivered" {
			t.Errorf("the e-mail step = %v", steps[3])
		}
		if got := a.mail.Count(ada.Email) - mailed; got != 1 {
			t.Errorf("%d messages to the owner, want 1", got)
		}

		// Retried with backoff until 24 hours have passed, then given up.
		for range 100 {
			a.clock.Advance(time.Hour)
			tick(t, a)
			if _, steps = a.runSteps(bob, wf); steps[2]["status"] != "retrying" {
				break
			}
		}
		j = job(steps[2])
		tries := len(failing.requests())
		if steps[2]["status"] != "given_up" || j["state"] != "given_up" || j["attempts"] != float64(tries) ||
			j["next_attempt_at"] != nil || j["finished_at"] == nil || !strings.HasPrefix(j["last_error"].(string), "the receiver answered 503") {
			t.Fatalf("after 24 hours of failures (%d tries) the forward = %v, want given up", tries, steps[2])
		}

		// Listed, for owners and admins only, with where it came from.
		expect(t, a.call("GET", failedDeliveriesPath, bob.Token, nil), 403)
		failed := expect(t, a.call("GET", failedDeliveriesPath, ada.Token, nil), 200).List()
		u, _ := url.Parse(failing.url)
		if len(failed) != 1 || failed[0]["id"] != j["id"] || failed[0]["state"] != "given_up" || failed[0]["workflow_id"] != wf ||
			failed[0]["workflow_name"] != "Errors out" || failed[0]["run_id"] != runID || failed[0]["title"] != "disk full" ||
			failed[0]["target"] != "http://"+u.Host || failed[0]["notification_id"] == "" || failed[0]["attempts"] != float64(tries) {
			t.Fatalf("failed deliveries = %v, want the given-up forward", failed)
		}
		if strings.Contains(fmt.Sprint(failed), "secret-in-the-url") {
			t.Errorf("the list shows the forward's query: %v", failed)
		}

		// A retry queues it again at once, with a new day to succeed; the
		// receiver is back, so the next tick delivers it.
		failing.mu.Lock()
		failing.statuses = nil
		failing.mu.Unlock()
		retried := expect(t, a.call("POST", failedDeliveriesPath+"/"+j["id"].(string)+"/retry", ada.Token, nil), 200).Data()
		if retried["state"] != "queued" || retried["attempts"] != 0.0 || retried["last_error"] != "" {
			t.Errorf("the retry answered %v, want the delivery queued afresh", retried)
		}
		audits := a.workflowAudits(perch.AuditWorkflowDeliveryRetried)
		if len(audits) != 1 || audits[0].Target.ID != j["id"] || audits[0].Actor.ID != ada.ID || audits[0].OrgID != ada.OrgID {
			t.Errorf("audit entries %+v, want the retry by Ada", audits)
		}
		if _, steps = a.runSteps(bob, wf); steps[2]["status"] != "queued" {
			t.Errorf("after the retry the step = %v, want queued", steps[2])
		}
		if n := len(expect(t, a.call("GET", failedDeliveriesPath, ada.Token, nil), 200).List()); n != 0 {
			t.Errorf("%d failed deliveries listed after the retry, want none", n)
		}
		tick(t, a)
		if _, steps = a.runSteps(bob, wf); steps[2]["status"] != "delivered" || len(failing.requests()) != tries+1 {
			t.Errorf("after the retry the step = %v with %d requests, want delivered by one more", steps[2], len(failing.requests()))
		}
		expect(t, a.call("POST", failedDeliveriesPath+"/"+j["id"].(string)+"/retry", ada.Token, nil), 409) // delivered
		expect(t, a.call("POST", failedDeliveriesPath+"/nosuchjob/retry", ada.Token, nil), 404)
		outsider := a.register("Eve")
		expect(t, a.call("POST", failedDeliveriesPath+"/"+j["id"].(string)+"/retry", outsider.Access, nil), 404)
	})
}

// A forward to an address the guard refuses is refused at once, with the
// guard's reason, and never retried nor connected; it may be retried only
// once the server lets forwards reach private addresses.
func TestWorkflowForwardRefusedByTheGuardIsNotRetried(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s) // the default guard
		ada := a.register("Ada")
		tok := a.webhookToken(ada, "org", "")
		a.apiToken(ada, "laptop")
		rc := startReceiver(t)
		loopback := strings.Replace(rc.url, "127.0.0.1", "[::ffff:127.0.0.1]", 1)
		wf := a.addWorkflow(ada, "To myself", "", perch.Step{Forward: &perch.ForwardStep{URL: rc.url}},
			perch.Step{Forward: &perch.ForwardStep{URL: loopback}})
		a.deliver(tok, map[string]any{"title": "hello"})
		for range 3 {
			tick(t, a)
			a.clock.Advance(2 * time.Hour)
		}
		if n := len(rc.requests()); n != 0 {
			t.Fatalf("the guard let %d requests through", n)
		}
		_, steps := a.runSteps(ada, wf)
		for i, why := range []string{"127.0.0.1 is loopback", "is loopback"} {
			j := job(steps[i])
			if steps[i]["status"] != "refused" || j["state"] != "refused" || j["attempts"] != 1.0 || j["next_attempt_at"] != nil ||
				!strings.Contains(j["last_error"].(string), why) || !strings.Contains(j["last_error"].(string), "PERCH_WORKFLOW_ALLOW_PRIVATE") {
				t.Errorf("step %d = %v, want refused once because %s", i, steps[i], why)
			}
		}
		failed := expect(t, a.call("GET", failedDeliveriesPath, ada.Token, nil), 200).List()
		if len(failed) != 2 || failed[0]["state"] != "refused" || failed[1]["state"] != "refused" {
			t.Fatalf("failed deliveries = %v, want both refused", failed)
		}
		id := job(steps[0])["id"].(string)
		res := expect(t, a.call("POST", failedDeliveriesPath+"/"+id+"/retry", ada.Token, nil), 409)
		if msg := res.Body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "refused again") {
			t.Errorf("the refusal says %q", msg)
		}
		if n := len(a.workflowAudits(perch.AuditWorkflowDeliveryRetried)); n != 0 {
			t.Errorf("%d retries audited, want none", n)
		}

		// With private addresses allowed, the retry goes through.
		a.setWorker(func(o *worker.Options) { o.AllowPrivate = true })
		expect(t, a.call("POST", failedDeliveriesPath+"/"+id+"/retry", ada.Token, nil), 200)
		tick(t, a)
		if _, steps = a.runSteps(ada, wf); steps[0]["status"] != "delivered" || steps[1]["status"] != "refused" || len(rc.requests()) != 1 {
			t.Errorf("after the retry: steps %v, %d requests; want the first delivered", steps, len(rc.requests()))
		}
	})
}

// The failed deliveries page newest given up first, with a cursor, and
// only the caller's organisation's.
func TestFailedDeliveriesArePaged(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, eve := a.register("Ada"), a.register("Eve")
		wf := a.mustCreateWorkflow(ada, dropErrors("Quiet"))["id"].(string)
		var want []string
		for range 5 {
			want = append([]string{givenUpJob(a, ada.OrgID, wf)}, want...)
			a.clock.Advance(time.Minute)
		}
		givenUpJob(a, eve.OrgID, "")
		var seen []string
		cursor := ""
		for page := 0; page < 5; page++ {
			res := expect(t, a.call("GET", failedDeliveriesPath+"?limit=2&cursor="+url.QueryEscape(cursor), ada.Access, nil), 200)
			for _, d := range res.List() {
				seen = append(seen, d["id"].(string))
				if d["target"] != "https://hooks.example.com" || d["workflow_name"] != "Quiet" {
					t.Errorf("listed %v", d)
				}
			}
			next, _ := res.Body["next_cursor"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("listed %v, want newest given up first %v", seen, want)
		}
		expect(t, a.call("GET", failedDeliveriesPath+"?cursor=nonsense", ada.Access, nil), 400)
		expect(t, a.call("GET", failedDeliveriesPath+"?limit=0", ada.Access, nil), 400)
		expect(t, a.call("PATCH", "/api/v1/admin/features/workflows", a.platformAdmin("Root").Access,
			map[string]any{"enabled": false}), 200)
		expect(t, a.call("GET", failedDeliveriesPath, ada.Access, nil), 403)
	})
}
