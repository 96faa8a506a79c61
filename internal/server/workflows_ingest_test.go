package server

import (
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// addWorkflow gives acc's organisation an enabled workflow and answers its
// id.
func (a *api) addWorkflow(acc *account, name, condition string, steps ...perch.Step) string {
	a.t.Helper()
	w, err := a.store.CreateWorkflow(a.t.Context(), &perch.Workflow{OrgID: acc.OrgID, Name: name, Enabled: true,
		Condition: condition, Steps: steps, CreatedBy: acc.ID})
	if err != nil {
		a.t.Fatalf("CreateWorkflow: %v", err)
	}
	a.srv.workflowsChanged(a.t.Context(), acc.OrgID)
	return w.ID
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
	a.srv.runs.wait()
	runs, _, err := a.store.WorkflowRuns(a.t.Context(), orgID, workflowID, "", perch.Page{Limit: 100})
	if err != nil {
		a.t.Fatalf("WorkflowRuns: %v", err)
	}
	return runs
}

func (a *api) statsOf(orgID, workflowID string) perch.WorkflowStats {
	a.t.Helper()
	a.srv.runs.wait()
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
func TestWorkflowRouteOutsideTheOrganisationFails(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		eve := a.register("Eve") // another organisation's owner
		tok := a.webhookToken(ada, "org", "")
		id := a.addWorkflow(ada, "Leak", "", perch.Step{Route: &perch.RouteStep{Scope: perch.ScopeUser, ID: eve.ID}})
		adaWS, eveWS := dial(t, ts, ada.Access, ""), dial(t, ts, eve.Access, "")
		adaWS.ready()
		eveWS.ready()

		a.post(tok, "secret deploy")
		if n := adaWS.next().notification(t); n.Title != "secret deploy" || n.Scope.Type != perch.ScopeOrg {
			t.Fatalf("the organisation saw %+v", n)
		}
		a.post("", "sentinel") // a broadcast: everyone sees it
		if got := eveWS.until("sentinel"); len(got) != 0 {
			t.Fatalf("another organisation's user saw %q", got)
		}
		runs := a.runsOf(ada.OrgID, id)
		if len(runs) != 1 || runs[0].Status != perch.RunFailed || runs[0].Steps[0].Status != "failed" {
			t.Fatalf("runs = %+v, want one failed run", runs)
		}
	})
}

// A throttle lets exactly max through per window and key; the window's end
// lets more through.
func TestWorkflowThrottleLetsMaxThroughPerWindow(t *testing.T) {
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
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		shared := fanout.NewLocal()
		useShared := func(o *Options) { o.Fanout = shared }
		one, two := newAPI(t, s, useShared), newAPI(t, s, useShared)
		ada := one.register("Ada")
		tok := one.webhookToken(ada, "org", "")
		two.post(tok, "before") // instance two loads the organisation's (no) workflows
		one.addWorkflow(ada, "Drop all", "", perch.Step{Drop: &perch.DropStep{}})
		var receipt map[string]any
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			// The fan-out delivers asynchronously: the change arrives soon.
			if receipt = two.deliver(tok, map[string]any{"title": "after"}); receipt["withheld"] == 1.0 {
				return
			}
		}
		t.Fatalf("instance two still delivers after the change: %v", receipt)
	})
}
