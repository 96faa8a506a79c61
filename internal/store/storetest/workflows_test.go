package storetest_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// everyStep is one step of each type, so that a round trip through the
// store shows that none loses a field (durations included).
var everyStep = []perch.Step{
	{Set: map[string]string{"title": `"[prod] " + event.title`, "severity": `"error"`}},
	{Route: &perch.RouteStep{Scope: "team", ID: "team1"}},
	{Throttle: &perch.ThrottleStep{Key: "event.source", Max: 5, Per: perch.Duration(10 * time.Minute)}},
	{Digest: &perch.DigestStep{Key: "event.tab", Window: perch.Duration(90 * time.Minute)}},
	{Forward: &perch.ForwardStep{URL: "https://hooks.example.com/perch", Secret: "s3cret"}},
	{Email: &perch.EmailStep{To: "admins"}},
	{Drop: &perch.DropStep{}},
}

// mustCreateWorkflow stores a workflow named name in u's organisation.
func mustCreateWorkflow(tb testing.TB, s *store.Store, u *perch.User, name string, enabled bool) *perch.Workflow {
	tb.Helper()
	w, err := s.CreateWorkflow(context.Background(), &perch.Workflow{OrgID: u.OrgID, Name: name, Description: "about " + name,
		Enabled: enabled, Condition: `event.severity == "error"`, Steps: []perch.Step{{Drop: &perch.DropStep{}}}, CreatedBy: u.ID})
	if err != nil {
		tb.Fatalf("CreateWorkflow(%q): %v", name, err)
	}
	return w
}

func workflowIDs(ws []*perch.Workflow) []string {
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	return ids
}

func TestWorkflowRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		u := mustCreateUser(t, s, "Ada", "ada@example.com")
		made, err := s.CreateWorkflow(ctx, &perch.Workflow{OrgID: u.OrgID, Name: "Escalate", Description: "Prod errors",
			Enabled: true, Condition: `event.severity == "error"`, Steps: everyStep, CreatedBy: u.ID,
			Version: 9, Published: true, Stats: perch.WorkflowStats{Evaluated: 3}}) // the store sets these itself
		if err != nil {
			t.Fatal(err)
		}
		want := &perch.Workflow{ID: made.ID, OrgID: u.OrgID, Name: "Escalate", Description: "Prod errors", Enabled: true,
			Condition: `event.severity == "error"`, Steps: everyStep, Version: 1, CreatedBy: u.ID,
			CreatedAt: clock.Now(), UpdatedAt: clock.Now()}
		if !reflect.DeepEqual(made, want) {
			t.Fatalf("CreateWorkflow = %+v, want %+v", made, want)
		}
		got, err := s.Workflow(ctx, u.OrgID, made.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Workflow = %+v, want %+v", got, want)
		}

		empty, err := s.CreateWorkflow(ctx, &perch.Workflow{OrgID: u.OrgID, Name: "Nothing", CreatedBy: u.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Workflow(ctx, u.OrgID, empty.ID); got == nil || got.Steps == nil || len(got.Steps) != 0 {
			t.Fatalf("a workflow without steps reads back %+v, want an empty, non-nil list", got)
		}

		gone, err := s.DeleteWorkflow(ctx, u.OrgID, made.ID)
		if err != nil || gone.ID != made.ID {
			t.Fatalf("DeleteWorkflow = %+v, %v", gone, err)
		}
		_, err = s.Workflow(ctx, u.OrgID, made.ID)
		wantCode(t, err, perch.ENOTFOUND)
	})
}

func TestUpdateWorkflowBumpsVersionOnlyForConditionOrSteps(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u := mustCreateUser(t, s, "Ada", "ada@example.com")
		w := mustCreateWorkflow(t, s, u, "Errors", false)
		name, desc, cond, enabled := "Renamed", "New words", `event.tab == "ops"`, true
		for _, c := range []struct {
			name    string
			update  store.WorkflowUpdate
			version int
		}{
			{"name and description keep the version", store.WorkflowUpdate{Name: &name, Description: &desc}, 1},
			{"enabling keeps the version", store.WorkflowUpdate{Enabled: &enabled}, 1},
			{"the same condition keeps the version", store.WorkflowUpdate{Condition: &w.Condition}, 1},
			{"the same steps keep the version", store.WorkflowUpdate{Steps: &w.Steps}, 1},
			{"a new condition bumps it", store.WorkflowUpdate{Condition: &cond}, 2},
			{"new steps bump it", store.WorkflowUpdate{Steps: &everyStep}, 3},
			{"both at once bump it once", store.WorkflowUpdate{Condition: &w.Condition, Steps: &w.Steps}, 4},
		} {
			before, after, err := s.UpdateWorkflow(ctx, u.OrgID, w.ID, c.update)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if after.Version != c.version || before.Version > after.Version {
				t.Fatalf("%s: version %d → %d, want %d", c.name, before.Version, after.Version, c.version)
			}
			stored, err := s.Workflow(ctx, u.OrgID, w.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(stored, after) {
				t.Fatalf("%s: stored %+v, answered %+v", c.name, stored, after)
			}
		}
		got, _ := s.Workflow(ctx, u.OrgID, w.ID)
		if got.Name != name || got.Description != desc || !got.Enabled || got.Condition != w.Condition {
			t.Fatalf("after the updates: %+v", got)
		}
	})
}

func TestWorkflowsOfAnotherOrganisationAreNotFound(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")
		w := mustCreateWorkflow(t, s, ada, "Ada's", true)
		name := "Bob's now"
		for _, c := range []struct {
			name string
			call func() error
		}{
			{"get", func() error { _, err := s.Workflow(ctx, bob.OrgID, w.ID); return err }},
			{"update", func() error {
				_, _, err := s.UpdateWorkflow(ctx, bob.OrgID, w.ID, store.WorkflowUpdate{Name: &name})
				return err
			}},
			{"delete", func() error { _, err := s.DeleteWorkflow(ctx, bob.OrgID, w.ID); return err }},
			{"publish", func() error { _, err := s.PublishWorkflow(ctx, bob.OrgID, w.ID); return err }},
			{"runs", func() error { _, _, err := s.WorkflowRuns(ctx, bob.OrgID, w.ID, "", perch.Page{Limit: 10}); return err }},
			{"fork of an unpublished one", func() error { _, err := s.ForkWorkflow(ctx, bob.OrgID, w.ID, bob.ID); return err }},
			{"install of an unpublished one", func() error { _, err := s.InstallWorkflow(ctx, bob.OrgID, w.ID, bob.ID); return err }},
		} {
			t.Run(c.name, func(t *testing.T) { wantCode(t, c.call(), perch.ENOTFOUND) })
		}
		if ws, err := s.Workflows(ctx, bob.OrgID); err != nil || len(ws) != 0 {
			t.Fatalf("Bob's workflows = %v, %v; want none", workflowIDs(ws), err)
		}
		got, err := s.Workflow(ctx, ada.OrgID, w.ID)
		if err != nil || got.Name != "Ada's" {
			t.Fatalf("Ada's workflow after Bob's attempts: %+v, %v", got, err)
		}
	})
}

func TestEnabledWorkflowsOldestFirstAndOnlyEnabled(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")
		var made []*perch.Workflow
		for i, enabled := range []bool{true, false, true, true} {
			clock.Advance(time.Second)
			made = append(made, mustCreateWorkflow(t, s, ada, string(rune('A'+i)), enabled))
		}
		mustCreateWorkflow(t, s, bob, "Bob's", true)
		off := false
		if _, _, err := s.UpdateWorkflow(ctx, ada.OrgID, made[3].ID, store.WorkflowUpdate{Enabled: &off}); err != nil {
			t.Fatal(err)
		}
		enabled, err := s.EnabledWorkflows(ctx, ada.OrgID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := workflowIDs(enabled), []string{made[0].ID, made[2].ID}; !slices.Equal(got, want) {
			t.Fatalf("EnabledWorkflows = %v, want %v", got, want)
		}
		all, err := s.Workflows(ctx, ada.OrgID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := workflowIDs(all), []string{made[3].ID, made[2].ID, made[1].ID, made[0].ID}; !slices.Equal(got, want) {
			t.Fatalf("Workflows = %v, want newest first %v", got, want)
		}
	})
}

func TestWorkflowStatsAddUp(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u := mustCreateUser(t, s, "Ada", "ada@example.com")
		a := mustCreateWorkflow(t, s, u, "A", true)
		b := mustCreateWorkflow(t, s, u, "B", true)
		for _, d := range []map[string]perch.WorkflowStats{
			{a.ID: {Evaluated: 10, Matched: 4, Failed: 1}, b.ID: {Evaluated: 10}},
			{a.ID: {Evaluated: 5, Matched: 5}, "gone0000000000000000": {Evaluated: 7}},
			{},
		} {
			if err := s.AddWorkflowStats(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			w    *perch.Workflow
			want perch.WorkflowStats
		}{
			{a, perch.WorkflowStats{Evaluated: 15, Matched: 9, Failed: 1}},
			{b, perch.WorkflowStats{Evaluated: 10}},
		} {
			got, err := s.Workflow(ctx, u.OrgID, c.w.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Stats != c.want {
				t.Fatalf("%s: stats %+v, want %+v", c.w.Name, got.Stats, c.want)
			}
		}
	})
}
