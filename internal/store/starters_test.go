package store_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// starter is a starter workflow as a release might ship it.
func starter(id, name, condition string) *perch.Workflow {
	return &perch.Workflow{ID: id, Name: name, Description: "What " + name + " does.", Condition: condition,
		Steps: []perch.Step{{Drop: &perch.DropStep{}}}}
}

func starters() []*perch.Workflow {
	return []*perch.Workflow{
		starter("starterquiet", "Quiet", `event.severity == "info"`),
		starter("starterloud", "Loud", `event.severity == "error"`),
		starter("starterdeploys", "Deploys", `event.tab == "Code"`),
	}
}

func mustSeed(tb testing.TB, s *store.Store, ws []*perch.Workflow) {
	tb.Helper()
	if err := s.SeedStarterWorkflows(context.Background(), "Perch", ws); err != nil {
		tb.Fatalf("SeedStarterWorkflows: %v", err)
	}
}

// marketplace answers every listing of the marketplace by workflow id,
// failing when one is listed twice.
func marketplace(tb testing.TB, s *store.Store) map[string]*store.Listing {
	tb.Helper()
	ls, next, err := s.Marketplace(context.Background(), "", store.SortPopular, perch.Page{Limit: perch.MaxPageLimit})
	if err != nil || next != "" {
		tb.Fatalf("Marketplace: %d listings, next %q, %v", len(ls), next, err)
	}
	out := map[string]*store.Listing{}
	for _, l := range ls {
		if out[l.Workflow.ID] != nil {
			tb.Fatalf("%s is listed twice", l.Workflow.ID)
		}
		out[l.Workflow.ID] = l
	}
	return out
}

func TestSeedStarterWorkflowsListsEachOnceAuthoredByPerch(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		mustSeed(t, s, starters())
		seeded := clock.Now()
		clock.Advance(time.Hour)
		mustSeed(t, s, starters()) // the next start: nothing to do

		listed := marketplace(t, s)
		if len(listed) != len(starters()) {
			t.Fatalf("%d listings, want %d", len(listed), len(starters()))
		}
		for _, want := range starters() {
			l := listed[want.ID]
			if l == nil {
				t.Fatalf("%s is not listed", want.ID)
			}
			w := l.Workflow
			if l.OrgName != "Perch" || w.OrgID != store.StarterOrgID || w.Name != want.Name || w.Description != want.Description ||
				w.Condition != want.Condition || w.Version != 1 || !l.PublishedAt.Equal(seeded) {
				t.Errorf("%s listed as %+v by %q at %v, want %+v by Perch at version 1, %v", want.ID, w, l.OrgName, l.PublishedAt, want, seeded)
			}
			stored, err := s.Workflow(ctx, store.StarterOrgID, want.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !stored.UpdatedAt.Equal(seeded) || !stored.Published || stored.Enabled {
				t.Errorf("%s stored as updated %v, published %v, enabled %v: want untouched since %v, published, disabled",
					want.ID, stored.UpdatedAt, stored.Published, stored.Enabled, seeded)
			}
		}

		// The author is an organisation no one belongs to, with nothing
		// to bill: the operators see it without seats or owners.
		org, err := s.AdminOrg(ctx, store.StarterOrgID)
		if err != nil {
			t.Fatal(err)
		}
		if org.Name != "Perch" || org.SeatCount != 0 || len(org.Owners) != 0 || org.Status != perch.PlanNone || org.TrialEndsAt != nil {
			t.Errorf("the starter organisation is %+v, want Perch with no members, no subscription and no trial", org)
		}
		if ms, err := s.Members(ctx, store.StarterOrgID); err != nil || len(ms) != 0 {
			t.Errorf("members %v, %v; want none", ms, err)
		}
	})
}

func TestSeedStarterWorkflowsRepublishesAChangedStarter(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		mustSeed(t, s, starters())
		first := clock.Now()
		u, err := s.CreateUser(ctx, "Ada", "ada@example.com", "hash")
		if err != nil {
			t.Fatal(err)
		}
		installed := map[string]*perch.Workflow{}
		for _, w := range starters() {
			in, err := s.InstallWorkflow(ctx, u.OrgID, w.ID, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			installed[w.ID] = in.Workflow
		}

		// The next release changes one starter's condition and another's
		// description.
		clock.Advance(time.Hour)
		next := starters()
		next[0].Condition = `event.severity == "info" && event.tab != "Incidents"`
		next[1].Description = "Clearer words."
		mustSeed(t, s, next)

		listed := marketplace(t, s)
		for _, c := range []struct {
			w         *perch.Workflow
			version   int
			published time.Time
		}{
			{next[0], 2, clock.Now()},
			{next[1], 2, clock.Now()},
			{next[2], 1, first},
		} {
			l := listed[c.w.ID]
			if l == nil {
				t.Fatalf("%s is not listed", c.w.ID)
			}
			if l.Workflow.Version != c.version || l.Workflow.Condition != c.w.Condition || l.Workflow.Description != c.w.Description ||
				!l.PublishedAt.Equal(c.published) {
				t.Errorf("%s listed at version %d, published %v, as %+v; want version %d, %v, %+v",
					c.w.ID, l.Workflow.Version, l.PublishedAt, l.Workflow, c.version, c.published, c.w)
			}
		}

		// Ada's copies of the changed starters have an update.
		latest, err := s.SourceVersions(ctx, u.OrgID)
		if err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]int{next[0].ID: 2, next[1].ID: 2, next[2].ID: 1} {
			if got := latest[installed[id].ID]; got != want {
				t.Errorf("the source version of Ada's copy of %s is %d, want %d", id, got, want)
			}
		}
	})
}

func TestSeedStarterWorkflowsWithdrawsAStarterNoLongerShipped(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		mustSeed(t, s, starters())
		mustSeed(t, s, starters()[:2])
		listed := marketplace(t, s)
		gone := starters()[2].ID
		if len(listed) != 2 || listed[gone] != nil {
			t.Fatalf("listed %v, want the first two starters only", slices.Sorted(maps.Keys(listed)))
		}
		if _, err := s.Listing(ctx, gone); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Errorf("Listing(%s) = %v, want ENOTFOUND", gone, err)
		}

		// A later release that ships it again lists it again, unchanged.
		mustSeed(t, s, starters())
		if l := marketplace(t, s)[gone]; l == nil || l.Workflow.Version != 1 {
			t.Errorf("%s listed as %+v, want version 1 again", gone, l)
		}
	})
}

func TestSeedStarterWorkflowsOnEveryInstanceAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() { errs <- s.SeedStarterWorkflows(context.Background(), "Perch", starters()) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("SeedStarterWorkflows: %v", err)
			}
		}
		listed := marketplace(t, s)
		for _, w := range starters() {
			if l := listed[w.ID]; l == nil || l.Workflow.Version != 1 {
				t.Errorf("%s listed as %+v, want once at version 1", w.ID, l)
			}
		}
	})
}

func TestSeedStarterWorkflowsRefusesIDsTheStoreCannotPage(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		bad := starter("wf_starter_quiet", "Quiet", "")
		err := s.SeedStarterWorkflows(context.Background(), "Perch", []*perch.Workflow{bad})
		if perch.ErrorCode(err) != perch.EBADREQUEST {
			t.Fatalf("SeedStarterWorkflows(%q) = %v, want EBADREQUEST", bad.ID, err)
		}
		if listed := marketplace(t, s); len(listed) != 0 {
			t.Errorf("%d listings, want none", len(listed))
		}
	})
}
