package server

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// flatSummary is the summary with its maps flattened into "map.key" so
// that two can be subtracted figure by figure.
func flatSummary(m map[string]any) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		switch v := v.(type) {
		case float64:
			out[k] = v
		case map[string]any:
			for sub, n := range v {
				out[k+"."+sub] = n.(float64)
			}
		}
	}
	return out
}

// moved is after less before, every figure that changed.
func moved(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k := range maps.Keys(after) {
		if d := after[k] - before[k]; d != 0 {
			out[k] = d
		}
	}
	for k := range maps.Keys(before) {
		if _, ok := after[k]; !ok && before[k] != 0 {
			out[k] = -before[k]
		}
	}
	return out
}

// Every figure of the summary is counted from the rows it names: each step
// adds rows and the figures move by exactly what was added, and nothing
// else moves. Perch's own organisation (the starter workflows' author) is
// in none of them.
func TestAdminMetricsSummaryCountsRealRows(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		if err := a.srv.SeedStarters(t.Context()); err != nil {
			t.Fatal(err)
		}
		root := a.platformAdmin("Root")
		a.apiToken(root, "metrics")
		figures := func() map[string]float64 { t.Helper(); a.srv.runs.Wait(); return flatSummary(a.summary(root.Token)) }
		start := figures()
		// Root's organisation is the only real one: the starter author,
		// with its workflows, counts nowhere.
		for k, want := range map[string]float64{"orgs": 1, "orgs_by_plan.team": 1, "orgs_by_plan.solo": 0,
			"subscriptions_by_status.trialing": 1, "subscriptions_by_status.none": 0, "workflows": 0, "workflow_runs_24h": 0} {
			if start[k] != want {
				t.Errorf("at the start %s = %v, want %v (summary %v)", k, start[k], want, start)
			}
		}

		var ada *account
		var token string
		var wfID string
		solo := 0.0
		for _, step := range []struct {
			name string
			do   func()
			want map[string]float64
		}{
			{"Ada signs up", func() { ada = a.register("Ada") },
				map[string]float64{"users": 1, "users_active_7d": 1, "orgs": 1, "orgs_by_plan.team": 1, "subscriptions_by_status.trialing": 1}},
			{"Ada makes a webhook token", func() { token = a.webhookToken(ada, "user", "") },
				map[string]float64{"webhook_tokens": 1}},
			{"Ada makes a disabled workflow and an enabled one", func() {
				off := dropErrors("Off")
				off["enabled"] = false
				a.mustCreateWorkflow(ada, off)
				wfID = a.mustCreateWorkflow(ada, map[string]any{"name": "Shout", "enabled": true,
					"steps": []any{map[string]any{"set": map[string]any{"title": `event.title + "!"`}}}})["id"].(string)
			}, map[string]float64{"workflows": 2}},
			{"two notifications, each run by the enabled workflow", func() { a.post(token, "one"); a.post(token, "two") },
				map[string]float64{"notifications_24h": 2, "notifications_by_source_24h.inbound": 2, "workflow_runs_24h": 2}},
			{"the disabled workflow is deleted", func() {
				for _, w := range expect(t, a.call("GET", workflowsPath, ada.Access, nil), 200).List() {
					if w["name"] == "Off" {
						expect(t, a.call("DELETE", workflowsPath+"/"+w["id"].(string), ada.Access, nil), 204)
					}
				}
			}, map[string]float64{"workflows": -1}},
			{"Ada's organisation pays for solo", func() {
				expect(t, a.call("PATCH", "/api/v1/admin/orgs/"+ada.OrgID, root.Token, map[string]any{"plan": "solo", "status": "active"}), 200)
				for _, p := range expect(t, a.call("GET", "/api/v1/admin/plans", root.Token, nil), 200).List() {
					if p["slug"] == "solo" {
						solo = p["price_monthly"].(float64)
					}
				}
			}, nil}, // checked below: MRR moves by the plan's price
			{"a day on", func() { a.clock.Advance(25 * time.Hour) },
				map[string]float64{"notifications_24h": -2, "notifications_by_source_24h.inbound": -2, "workflow_runs_24h": -2}},
		} {
			before := figures()
			step.do()
			got := moved(before, figures())
			if step.want == nil {
				want := map[string]float64{"mrr": solo, "orgs_by_plan.team": -1, "orgs_by_plan.solo": 1,
					"subscriptions_by_status.trialing": -1, "subscriptions_by_status.active": 1}
				if solo <= 0 || !maps.Equal(got, want) {
					t.Errorf("%s: moved %v, want %v", step.name, got, want)
				}
				continue
			}
			if !maps.Equal(got, step.want) {
				t.Errorf("%s: moved %v, want %v", step.name, got, step.want)
			}
		}
		runs, _, err := s.WorkflowRuns(t.Context(), ada.OrgID, wfID, "", perch.Page{})
		if err != nil || len(runs) != 2 {
			t.Fatalf("the enabled workflow has %d runs (%v), want the 2 counted", len(runs), err)
		}
	})
}

// metric=workflow_runs counts the runs recorded in each bucket, of real
// organisations only.
func TestAdminMetricWorkflowRunsCountsRuns(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s) // the clock starts at 2026-11-22 09:00 UTC
		if err := a.srv.SeedStarters(t.Context()); err != nil {
			t.Fatal(err)
		}
		root := a.platformAdmin("Root")
		ada := a.register("Ada")
		id := a.mustCreateWorkflow(ada, dropErrors("Quiet"))["id"].(string)
		day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
		var runs []*perch.WorkflowRun
		for _, at := range []time.Duration{10 * time.Hour, 11 * time.Hour, 24*time.Hour + 5*time.Hour, 3*24*time.Hour + time.Minute} {
			runs = append(runs, &perch.WorkflowRun{WorkflowID: id, WorkflowVersion: 1, Status: perch.RunDropped,
				Steps: []perch.RunStep{{Type: "drop", Status: "ok"}}, CreatedAt: day.Add(at)})
		}
		if err := s.AddWorkflowRuns(t.Context(), ada.OrgID, runs); err != nil {
			t.Fatal(err)
		}
		// A run of a starter workflow (none runs, its organisation has no
		// members; were one recorded) is not counted.
		starters, err := s.Workflows(t.Context(), store.StarterOrgID)
		if err != nil || len(starters) == 0 {
			t.Fatalf("starter workflows: %d, %v", len(starters), err)
		}
		if err := s.AddWorkflowRuns(t.Context(), store.StarterOrgID, []*perch.WorkflowRun{{WorkflowID: starters[0].ID,
			WorkflowVersion: 1, Status: perch.RunDropped, Steps: []perch.RunStep{}, CreatedAt: day.Add(12 * time.Hour)}}); err != nil {
			t.Fatal(err)
		}
		var values []float64
		for _, p := range expect(t, a.call("GET", "/api/v1/admin/metrics?metric=workflow_runs&interval=day&from=2026-11-21T00:00:00Z&to=2026-11-26T00:00:00Z",
			root.Access, nil), 200).List() {
			values = append(values, p["value"].(float64))
		}
		if fmt.Sprint(values) != "[0 2 1 0 1]" {
			t.Errorf("workflow runs by day = %v, want [0 2 1 0 1]", values)
		}
		values = nil
		for _, p := range expect(t, a.call("GET", "/api/v1/admin/metrics?metric=workflow_runs&interval=hour&from=2026-11-22T09:00:00Z&to=2026-11-22T13:00:00Z",
			root.Access, nil), 200).List() {
			values = append(values, p["value"].(float64))
		}
		if fmt.Sprint(values) != "[0 1 1 0]" {
			t.Errorf("workflow runs by hour = %v, want [0 1 1 0]", values)
		}
	})
}

// Perch's own organisation is no customer: not listed, not found, not
// changed, and not among any plan's subscribers.
func TestAdminDoesNotSeeTheStarterOrganisation(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		if err := a.srv.SeedStarters(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AdminOrg(t.Context(), store.StarterOrgID); err != nil {
			t.Fatalf("the starter organisation is not there to hide: %v", err)
		}
		root := a.platformAdmin("Root")
		for _, q := range []string{"", "?q=perch", "?q=" + store.StarterOrgID} {
			for _, o := range expect(t, a.call("GET", "/api/v1/admin/orgs"+q, root.Access, nil), 200).List() {
				if o["id"] == store.StarterOrgID {
					t.Errorf("GET /admin/orgs%s lists the starter organisation: %v", q, o)
				}
			}
		}
		if n := len(expect(t, a.call("GET", "/api/v1/admin/orgs", root.Access, nil), 200).List()); n != 1 {
			t.Errorf("GET /admin/orgs lists %d organisations, want Root's alone", n)
		}
		path := "/api/v1/admin/orgs/" + store.StarterOrgID
		expect(t, a.call("GET", path, root.Access, nil), 404)
		expect(t, a.call("PATCH", path, root.Access, map[string]any{"plan": "team"}), 404)
		expect(t, a.call("GET", path+"/saml", root.Access, nil), 404)
		for _, p := range expect(t, a.call("GET", "/api/v1/admin/plans", root.Access, nil), 200).List() {
			want := 0.0
			if p["slug"] == "team" {
				want = 1 // Root's trial
			}
			if p["subscribers"] != want {
				t.Errorf("plan %s has %v subscribers, want %v", p["slug"], p["subscribers"], want)
			}
		}
		if org, err := s.AdminOrg(t.Context(), store.StarterOrgID); err != nil || org.Plan != "solo" {
			t.Errorf("the starter organisation changed: %+v, %v", org, err)
		}
	})
}
