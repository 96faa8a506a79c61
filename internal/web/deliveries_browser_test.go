package web_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/worker"
)

// deliveryRun records a run of workflowID whose three steps queued a
// forward the guard refused, an e-mail that was given up and a forward
// being retried, as the worker leaves them; it answers the jobs' ids in
// that order.
func deliveryRun(t *testing.T, a *site, orgID, workflowID string) []string {
	t.Helper()
	ctx, now := t.Context(), a.clock.Now()
	n := perch.Notification{ID: "1", Title: "Disk full on db-1", Severity: perch.SeverityError, Tab: perch.TabMonitoring,
		Source: perch.SourceMonitor, CreatedAt: now, Scope: perch.Scope{Type: perch.ScopeOrg, ID: orgID}}
	run := &perch.WorkflowRun{ID: store.NewRunID(now), WorkflowID: workflowID, WorkflowVersion: 1, Status: perch.RunDelivered,
		NotificationID: n.ID, CreatedAt: now, Steps: []perch.RunStep{{Type: "forward", Status: "queued"},
			{Type: "email", Status: "queued", Detail: "to owners"}, {Type: "forward", Status: "queued"}}}
	if err := a.store.AddWorkflowRuns(ctx, orgID, []*perch.WorkflowRun{run}); err != nil {
		t.Fatal(err)
	}
	payload := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	jobs := []store.Job{
		{Kind: store.JobWorkflowForward, Payload: payload(worker.ForwardJob{WorkflowID: workflowID, Notification: n, URL: "http://127.0.0.1:9000/hook"})},
		{Kind: store.JobWorkflowEmail, Payload: payload(worker.EmailJob{WorkflowID: workflowID, Notification: n, To: "owners"})},
		{Kind: store.JobWorkflowForward, Payload: payload(worker.ForwardJob{WorkflowID: workflowID, Notification: n,
			URL: "https://hooks.example.com/incoming/with/a/rather/long/path?token=secret"})},
	}
	for i := range jobs {
		jobs[i].OrgID, jobs[i].WorkflowID, jobs[i].RunID, jobs[i].Step, jobs[i].NotificationID = orgID, workflowID, run.ID, i, n.ID
	}
	if err := a.store.EnqueueJobs(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	if err := a.store.RefuseJob(ctx, jobs[0].ID, "refused by the address guard: 127.0.0.1 is loopback; Perch does not reach "+
		"loopback, private, link-local or metadata addresses unless PERCH_WORKFLOW_ALLOW_PRIVATE is set", now); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.RetryJob(ctx, jobs[1].ID, "mail to 1 of 1 recipients failed (olive.owner@example.com): 421 4.3.0 try again later",
		now.Add(perch.WorkflowRetryFor)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.RetryJob(ctx, jobs[2].ID, "the receiver answered 502 Bad Gateway", now); err != nil {
		t.Fatal(err)
	}
	return []string{jobs[0].ID, jobs[1].ID, jobs[2].ID}
}

// TestFailedDeliveriesInTheBrowser: in Chromium, an owner finds the failed
// deliveries from the workflows page, each with its workflow, where it went
// and why it failed; retries the one that was given up (it leaves the list,
// queued again) and is told why the refused one cannot be; and the run's
// page shows every step's delivery. Both pages fit a phone and a laptop.
func TestFailedDeliveriesInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	featuresOn(t, a.store, "workflows")
	b := newChrome(t, base)
	t.Logf("screenshots: %s", b.dir)
	b.signUp("Olive Owner", emailFor("Olive Owner"), goodPassword)
	olive := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": emailFor("Olive Owner"), "password": goodPassword}), 200).Data()
	token := olive["access_token"].(string)
	orgID := expect(t, a.call("GET", "/api/v1/users/me", token, nil), 200).Data()["org_id"].(string)
	wf := expect(t, a.call("POST", "/api/v1/org/workflows", token, map[string]any{"name": "Errors out", "enabled": true,
		"condition": `event.severity == "error"`, "steps": []any{
			map[string]any{"forward": map[string]any{"url": "http://127.0.0.1:9000/hook"}},
			map[string]any{"email": map[string]any{"to": "owners"}},
			map[string]any{"forward": map[string]any{"url": "https://hooks.example.com/incoming"}}}}), 201).Data()["id"].(string)
	ids := deliveryRun(t, a, orgID, wf)

	b.open("/org/workflows", "#failed-deliveries")
	b.click("#failed-deliveries")
	b.do("wait for the failed deliveries", waitVisible("#deliveries"))
	if n := evaluate[int](b, `document.querySelectorAll("#deliveries tbody tr").length`); n != 2 {
		t.Fatalf("%d failed deliveries listed, want the refused and the given-up one", n)
	}
	refused, gaveUp := b.text("#delivery-"+ids[0]), b.text("#delivery-"+ids[1])
	for _, want := range []string{"refused", "Errors out", "Forward to http://127.0.0.1:9000", "Disk full on db-1", "127.0.0.1 is loopback", "1 attempt"} {
		if !strings.Contains(refused, want) {
			t.Errorf("the refused delivery's row lacks %q:\n%s", want, refused)
		}
	}
	for _, want := range []string{"given up", "E-mail to owners", "421 4.3.0 try again later"} {
		if !strings.Contains(gaveUp, want) {
			t.Errorf("the given-up delivery's row lacks %q:\n%s", want, gaveUp)
		}
	}
	if strings.Contains(b.text("#deliveries"), "/hook") {
		t.Error("the list shows a forward's path")
	}
	b.checkPage("failed-deliveries")
	b.fits("failed-deliveries")

	// Retrying the given-up e-mail queues it again: it leaves the list.
	b.click("#delivery-" + ids[1] + " button")
	b.do("wait for the notice", waitVisible(".flash"))
	if got := b.text(".flash"); !strings.HasPrefix(got, "The delivery is queued again") {
		t.Errorf("after the retry the page says %q", got)
	}
	if evaluate[bool](b, `!!document.querySelector("#delivery-`+ids[1]+`")`) {
		t.Error("the retried delivery is still listed")
	}
	// The refused forward would be refused again: the page says so.
	b.click("#delivery-" + ids[0] + " button")
	b.do("wait for the refusal", waitVisible(".alert"))
	if got := b.text(".alert"); !strings.Contains(got, "refused again") || !strings.Contains(got, "PERCH_WORKFLOW_ALLOW_PRIVATE") {
		t.Errorf("retrying the refused delivery says %q", got)
	}

	// The run shows each step's delivery as it is now.
	b.open("/org/workflows/"+wf+"/runs", "#runs")
	steps := b.text("#runs tbody")
	for _, want := range []string{"forward: refused", "127.0.0.1 is loopback", "email: queued", "waiting for its first try",
		"forward: retrying", "1 attempt failed; next try", "502 Bad Gateway"} {
		if !strings.Contains(steps, want) {
			t.Errorf("the run's steps lack %q:\n%s", want, steps)
		}
	}
	b.checkPage("workflow-runs-deliveries")
	b.fits("workflow-runs-deliveries")
	// The refused retry's page is answered 409, on purpose.
	checkConsole(t, b, base+"/org/workflows/failed-deliveries/"+ids[0]+"/retry: error: Failed to load resource: the server responded with a status of 409 (Conflict)")
}
