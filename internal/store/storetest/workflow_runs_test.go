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

func runIDs(s *store.Store, orgID, workflowID, status string) func(perch.Page) ([]string, string, error) {
	return func(p perch.Page) ([]string, string, error) {
		runs, next, err := s.WorkflowRuns(context.Background(), orgID, workflowID, status, p)
		ids := make([]string, len(runs))
		for i, r := range runs {
			ids[i] = r.ID
		}
		return ids, next, err
	}
}

func TestWorkflowRunsNewestFirstFilteredAndPaged(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		u := mustCreateUser(t, s, "Ada", "ada@example.com")
		w := mustCreateWorkflow(t, s, u, "Errors", true)
		other := mustCreateWorkflow(t, s, u, "Other", true)
		statuses := []string{perch.RunDelivered, perch.RunDropped, perch.RunFailed, perch.RunDelivered, perch.RunDelivered}
		var runs []*perch.WorkflowRun
		for i, status := range statuses {
			runs = append(runs, &perch.WorkflowRun{WorkflowID: w.ID, WorkflowVersion: 1, NotificationID: "42", Status: status,
				Steps:      []perch.RunStep{{Type: perch.StepDrop, Status: "ok"}, {Type: perch.StepForward, Status: "failed", Detail: "timeout"}},
				DurationUS: int64(100 + i), CreatedAt: clock.Now().Add(time.Duration(i) * time.Second)})
		}
		runs = append(runs, &perch.WorkflowRun{WorkflowID: other.ID, WorkflowVersion: 1, Status: perch.RunDelivered},
			&perch.WorkflowRun{WorkflowID: "gone0000000000000000", Status: perch.RunDelivered}) // deleted meanwhile: left out
		if err := s.AddWorkflowRuns(ctx, u.OrgID, runs); err != nil {
			t.Fatal(err)
		}

		got, _, err := s.WorkflowRuns(ctx, u.OrgID, w.ID, "", perch.Page{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if want := runs[4]; len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Fatalf("newest run = %+v, want %+v", got, want)
		}
		for _, c := range []struct {
			status string
			want   []string
		}{
			{"", []string{runs[4].ID, runs[3].ID, runs[2].ID, runs[1].ID, runs[0].ID}},
			{perch.RunDelivered, []string{runs[4].ID, runs[3].ID, runs[0].ID}},
			{perch.RunFailed, []string{runs[2].ID}},
			{perch.RunDigested, nil},
		} {
			ids, _ := allPages(t, 2, runIDs(s, u.OrgID, w.ID, c.status))
			if !slices.Equal(ids, c.want) {
				t.Fatalf("status %q: runs %v, want %v", c.status, ids, c.want)
			}
		}
		ids, _ := allPages(t, 2, runIDs(s, u.OrgID, other.ID, ""))
		if len(ids) != 1 || ids[0] != runs[5].ID {
			t.Fatalf("the other workflow's runs = %v, want only its own", ids)
		}

		for _, c := range []struct {
			name   string
			status string
			cursor string
		}{
			{"a cursor this store did not answer", "", "not-a-cursor!"},
			{"a cursor of the wrong shape", "", "MTIzNDU"},
			{"an unknown status", "exploded", ""},
		} {
			_, _, err := s.WorkflowRuns(ctx, u.OrgID, w.ID, c.status, perch.Page{Cursor: c.cursor, Limit: 2})
			wantCode(t, err, perch.EBADREQUEST)
		}
		err = s.AddWorkflowRuns(ctx, u.OrgID, []*perch.WorkflowRun{{WorkflowID: w.ID, Status: "exploded"}})
		wantCode(t, err, perch.EBADREQUEST)
	})
}

func TestAddWorkflowRunsLeavesOutAnotherOrganisationsWorkflows(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")
		w := mustCreateWorkflow(t, s, ada, "Ada's", true)
		if err := s.AddWorkflowRuns(ctx, bob.OrgID, []*perch.WorkflowRun{{WorkflowID: w.ID, Status: perch.RunDelivered}}); err != nil {
			t.Fatal(err)
		}
		runs, _, err := s.WorkflowRuns(ctx, ada.OrgID, w.ID, "", perch.Page{Limit: 10})
		if err != nil || len(runs) != 0 {
			t.Fatalf("Ada's runs = %d, %v; want none from Bob's organisation", len(runs), err)
		}
	})
}

func TestPruneWorkflowRuns(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		u := mustCreateUser(t, s, "Ada", "ada@example.com")
		w := mustCreateWorkflow(t, s, u, "Errors", true)
		start := clock.Now()
		var runs []*perch.WorkflowRun
		for i := range 5 {
			runs = append(runs, &perch.WorkflowRun{WorkflowID: w.ID, Status: perch.RunDelivered, CreatedAt: start.Add(time.Duration(i) * time.Hour)})
		}
		if err := s.AddWorkflowRuns(ctx, u.OrgID, runs); err != nil {
			t.Fatal(err)
		}
		n, err := s.PruneWorkflowRuns(ctx, start.Add(2*time.Hour))
		if err != nil || n != 2 {
			t.Fatalf("PruneWorkflowRuns = %d, %v; want 2", n, err)
		}
		ids, _ := allPages(t, 10, runIDs(s, u.OrgID, w.ID, ""))
		if want := []string{runs[4].ID, runs[3].ID, runs[2].ID}; !slices.Equal(ids, want) {
			t.Fatalf("runs left %v, want %v", ids, want)
		}
		if _, err := s.DeleteWorkflow(ctx, u.OrgID, w.ID); err != nil {
			t.Fatal(err)
		}
		if n, err := s.PruneWorkflowRuns(ctx, start.Add(24*time.Hour)); err != nil || n != 0 {
			t.Fatalf("after deleting the workflow, PruneWorkflowRuns = %d, %v; want 0 (its runs went with it)", n, err)
		}
	})
}
