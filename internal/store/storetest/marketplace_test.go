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

func mustPublish(tb testing.TB, s *store.Store, orgID, id string) *perch.Workflow {
	tb.Helper()
	w, err := s.PublishWorkflow(context.Background(), orgID, id)
	if err != nil {
		tb.Fatalf("PublishWorkflow(%s): %v", id, err)
	}
	return w
}

func mustInstall(tb testing.TB, s *store.Store, u *perch.User, sourceID string) (*perch.Workflow, bool) {
	tb.Helper()
	in, err := s.InstallWorkflow(context.Background(), u.OrgID, sourceID, u.ID)
	if err != nil {
		tb.Fatalf("InstallWorkflow(%s): %v", sourceID, err)
	}
	return in.Workflow, in.Updated
}

func listingIDs(s *store.Store, q, sort string) func(perch.Page) ([]string, string, error) {
	return func(p perch.Page) ([]string, string, error) {
		ls, next, err := s.Marketplace(context.Background(), q, sort, p)
		ids := make([]string, len(ls))
		for i, l := range ls {
			ids[i] = l.Workflow.ID
		}
		return ids, next, err
	}
}

func TestMarketplaceListsSearchesSortsAndPages(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")
		carol := mustCreateUser(t, s, "Carol", "carol@example.com")
		oncall := mustCreateWorkflow(t, s, ada, "On-call ESCALATION", true)
		quiet := mustCreateWorkflow(t, s, ada, "Quiet hours", true)
		digest := mustCreateWorkflow(t, s, bob, "Digest deploys", true)
		private := mustCreateWorkflow(t, s, bob, "Private escalation", true)
		_ = private // never published: never listed
		for _, w := range []*perch.Workflow{oncall, quiet, digest} {
			clock.Advance(time.Minute)
			mustPublish(t, s, w.OrgID, w.ID)
		}
		mustInstall(t, s, carol, quiet.ID)
		mustInstall(t, s, bob, quiet.ID)
		mustInstall(t, s, carol, oncall.ID)

		for _, c := range []struct {
			name, q, sort string
			want          []string
		}{
			{"popular: most installed first", "", "popular", []string{quiet.ID, oncall.ID, digest.ID}},
			{"popular is the default", "", "", []string{quiet.ID, oncall.ID, digest.ID}},
			{"recent: newest published first", "", "recent", []string{digest.ID, quiet.ID, oncall.ID}},
			{"q matches the name without regard to case", "escalation", "recent", []string{oncall.ID}},
			{"q matches the description", "about digest", "popular", []string{digest.ID}},
			{"q that matches nothing", "100%", "recent", nil},
		} {
			ids, _ := allPages(t, 1, listingIDs(s, c.q, c.sort))
			if !slices.Equal(ids, c.want) {
				t.Fatalf("%s: %v, want %v", c.name, ids, c.want)
			}
		}

		l, err := s.Listing(ctx, quiet.ID)
		if err != nil {
			t.Fatal(err)
		}
		if l.Installs != 2 || l.OrgName != perch.OrgNameFor("Ada") || l.Workflow.OrgID != ada.OrgID || l.Workflow.Name != "Quiet hours" ||
			l.Workflow.Version != 1 || !reflect.DeepEqual(l.Workflow.Steps, quiet.Steps) || !l.PublishedAt.Equal(quiet.CreatedAt.Add(2*time.Minute)) {
			t.Fatalf("Listing = %+v (workflow %+v)", l, l.Workflow)
		}

		off := false
		if _, _, err := s.UpdateWorkflow(ctx, ada.OrgID, quiet.ID, store.WorkflowUpdate{Published: &off}); err != nil {
			t.Fatal(err)
		}
		ids, _ := allPages(t, 10, listingIDs(s, "", "popular"))
		if want := []string{oncall.ID, digest.ID}; !slices.Equal(ids, want) {
			t.Fatalf("after withdrawing: %v, want %v", ids, want)
		}
		_, err = s.Listing(ctx, quiet.ID)
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.Listing(ctx, private.ID)
		wantCode(t, err, perch.ENOTFOUND)

		_, next, err := s.Marketplace(ctx, "", "recent", perch.Page{Limit: 1})
		if err != nil || next == "" {
			t.Fatalf("first page: next %q, %v", next, err)
		}
		for _, c := range []struct{ name, sort, cursor string }{
			{"a recent cursor used for popular", "popular", next},
			{"a cursor this store did not answer", "recent", "bm9wZQ"},
			{"an unknown sort", "random", ""},
		} {
			_, _, err := s.Marketplace(ctx, "", c.sort, perch.Page{Cursor: c.cursor, Limit: 1})
			wantCode(t, err, perch.EBADREQUEST)
		}
	})
}

func TestEditsAfterPublishingStayOutOfTheListingUntilRepublished(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		w := mustCreateWorkflow(t, s, ada, "Errors", true)
		published := mustPublish(t, s, ada.OrgID, w.ID)
		if !published.Published || published.Version != 1 {
			t.Fatalf("published = %+v, want version 1", published)
		}
		name, cond := "Errors, reworded", `event.tab == "ops"`
		if _, _, err := s.UpdateWorkflow(ctx, ada.OrgID, w.ID, store.WorkflowUpdate{Name: &name, Condition: &cond, Steps: &everyStep}); err != nil {
			t.Fatal(err)
		}
		l, err := s.Listing(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if l.Workflow.Name != "Errors" || l.Workflow.Condition != w.Condition || !reflect.DeepEqual(l.Workflow.Steps, w.Steps) || l.Workflow.Version != 1 {
			t.Fatalf("the listing shows unpublished edits: %+v", l.Workflow)
		}
		again := mustPublish(t, s, ada.OrgID, w.ID)
		l, _ = s.Listing(ctx, w.ID)
		if again.Version != 2 || l.Workflow.Version != 2 || l.Workflow.Name != name || !reflect.DeepEqual(l.Workflow.Steps, withoutTargets(everyStep)) {
			t.Fatalf("republished %+v; listing %+v", again, l.Workflow)
		}

		// A new name alone does not bump the version when edited, so
		// republishing it does: installers see an update.
		name = "Errors, once more"
		if _, _, err := s.UpdateWorkflow(ctx, ada.OrgID, w.ID, store.WorkflowUpdate{Name: &name}); err != nil {
			t.Fatal(err)
		}
		if again = mustPublish(t, s, ada.OrgID, w.ID); again.Version != 3 {
			t.Fatalf("republishing a renamed workflow: version %d, want 3", again.Version)
		}
		if again = mustPublish(t, s, ada.OrgID, w.ID); again.Version != 3 {
			t.Fatalf("republishing an unchanged workflow: version %d, want 3", again.Version)
		}

		// PATCH {published: false} withdraws; {published: true} publishes
		// the edits it carries.
		off, on, desc := false, true, "Now with a description"
		if _, after, err := s.UpdateWorkflow(ctx, ada.OrgID, w.ID, store.WorkflowUpdate{Published: &off}); err != nil || after.Published {
			t.Fatalf("withdrawing: %+v, %v", after, err)
		}
		_, after, err := s.UpdateWorkflow(ctx, ada.OrgID, w.ID, store.WorkflowUpdate{Description: &desc, Published: &on})
		if err != nil || !after.Published || after.Version != 4 {
			t.Fatalf("publishing through an update: %+v, %v; want published at version 4", after, err)
		}
		if l, err = s.Listing(ctx, w.ID); err != nil || l.Workflow.Description != desc || l.Workflow.Version != 4 {
			t.Fatalf("listing after publishing through an update: %+v, %v", l, err)
		}
	})
}

func TestInstallLinksCountsAndUpdates(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")
		src := mustCreateWorkflow(t, s, ada, "Errors", true)
		mustPublish(t, s, ada.OrgID, src.ID)

		copied, updated := mustInstall(t, s, bob, src.ID)
		if updated || copied.OrgID != bob.OrgID || copied.Enabled || copied.Version != 1 || copied.CreatedBy != bob.ID ||
			copied.Source == nil || *copied.Source != (perch.WorkflowSource{WorkflowID: src.ID, Version: 1}) ||
			copied.Condition != src.Condition || !reflect.DeepEqual(copied.Steps, src.Steps) {
			t.Fatalf("installed copy = %+v (updated %v)", copied, updated)
		}
		stored, err := s.Workflow(ctx, bob.OrgID, copied.ID)
		if err != nil || !reflect.DeepEqual(stored, copied) {
			t.Fatalf("stored copy = %+v, %v; want %+v", stored, err, copied)
		}
		if l, _ := s.Listing(ctx, src.ID); l.Installs != 1 {
			t.Fatalf("installs = %d, want 1", l.Installs)
		}
		versions, err := s.SourceVersions(ctx, bob.OrgID)
		if err != nil || !reflect.DeepEqual(versions, map[string]int{copied.ID: 1}) {
			t.Fatalf("SourceVersions = %v, %v; want the copy at 1", versions, err)
		}

		on := true
		if _, _, err := s.UpdateWorkflow(ctx, bob.OrgID, copied.ID, store.WorkflowUpdate{Enabled: &on}); err != nil {
			t.Fatal(err)
		}
		cond := `event.severity != "info"`
		if _, _, err := s.UpdateWorkflow(ctx, ada.OrgID, src.ID, store.WorkflowUpdate{Condition: &cond, Steps: &everyStep}); err != nil {
			t.Fatal(err)
		}
		if versions, _ := s.SourceVersions(ctx, bob.OrgID); versions[copied.ID] != 1 {
			t.Fatalf("an unpublished edit shows as version %d, want 1", versions[copied.ID])
		}
		mustPublish(t, s, ada.OrgID, src.ID)
		if versions, _ := s.SourceVersions(ctx, bob.OrgID); versions[copied.ID] != 2 {
			t.Fatalf("after republishing, SourceVersions = %v, want the copy's source at 2", versions)
		}

		// Taking the update switches the copy off (TestTakingAnUpdateSwitchesTheCopyOff).
		again, updated := mustInstall(t, s, bob, src.ID)
		if !updated || again.ID != copied.ID || again.Enabled || again.Version != 2 || again.Condition != cond ||
			!reflect.DeepEqual(again.Steps, withoutTargets(everyStep)) || again.Source.Version != 2 {
			t.Fatalf("installing again = %+v (updated %v)", again, updated)
		}
		if l, _ := s.Listing(ctx, src.ID); l.Installs != 1 {
			t.Fatalf("installs after an update = %d, want still 1", l.Installs)
		}
		if ws, _ := s.Workflows(ctx, bob.OrgID); len(ws) != 1 {
			t.Fatalf("Bob has %d workflows, want the one copy", len(ws))
		}
		if ws, _ := s.Workflows(ctx, bob.OrgID); !reflect.DeepEqual(ws[0], again) {
			t.Fatalf("stored %+v, answered %+v", ws[0], again)
		}
	})
}

// TestTakingAnUpdateSwitchesTheCopyOff: an author's new version never runs
// on an installer's notifications before the installer switches it on.
// Taking an update that changes the condition or steps of a copy that was
// on leaves it off (and says so); one that changes neither leaves the copy
// as it was; a copy that was off stays off without being reported as
// switched off.
func TestTakingAnUpdateSwitchesTheCopyOff(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")
		src := mustCreateWorkflow(t, s, ada, "Errors", true)
		mustPublish(t, s, ada.OrgID, src.ID)
		copied, _ := mustInstall(t, s, bob, src.ID)
		on, off := true, false
		enable := func(enabled *bool) {
			t.Helper()
			if _, _, err := s.UpdateWorkflow(ctx, bob.OrgID, copied.ID, store.WorkflowUpdate{Enabled: enabled}); err != nil {
				t.Fatal(err)
			}
		}
		republish := func(steps []perch.Step) {
			t.Helper()
			if _, _, err := s.UpdateWorkflow(ctx, ada.OrgID, src.ID, store.WorkflowUpdate{Steps: &steps}); err != nil {
				t.Fatal(err)
			}
			mustPublish(t, s, ada.OrgID, src.ID)
		}
		install := func(what string, enabled, switchedOff bool, version int) {
			t.Helper()
			in, err := s.InstallWorkflow(ctx, bob.OrgID, src.ID, bob.ID)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if !in.Updated || in.Workflow.Enabled != enabled || in.SwitchedOff != switchedOff || in.Workflow.Version != version {
				t.Fatalf("%s: updated %v, enabled %v, switched off %v, version %d; want enabled %v, switched off %v, version %d",
					what, in.Updated, in.Workflow.Enabled, in.SwitchedOff, in.Workflow.Version, enabled, switchedOff, version)
			}
			if stored, err := s.Workflow(ctx, bob.OrgID, copied.ID); err != nil || stored.Enabled != enabled {
				t.Fatalf("%s: stored %+v, %v; want enabled %v", what, stored, err, enabled)
			}
			if ws, err := s.EnabledWorkflows(ctx, bob.OrgID); err != nil || len(ws) != map[bool]int{true: 1}[enabled] {
				t.Fatalf("%s: EnabledWorkflows = %d, %v", what, len(ws), err)
			}
		}

		// The author adds a forward step to a copy Bob runs: it stops.
		enable(&on)
		republish([]perch.Step{{Forward: &perch.ForwardStep{URL: "https://ada.example.com/collect", Secret: "s"}}})
		install("an update that adds a forward step", false, true, 2)

		// Installing again with nothing new leaves Bob's choice alone.
		enable(&on)
		install("installing the same version again", true, false, 2)

		// An update of a copy Bob had switched off: off, nothing to report.
		enable(&off)
		republish([]perch.Step{{Drop: &perch.DropStep{}}})
		install("an update of a copy that was off", false, false, 3)
	})
}

func TestForkOfOwnAndOfPublishedWorkflows(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")
		own := mustCreateWorkflow(t, s, bob, "Bob's", true)
		cond := `event.tab == "ops"`
		if _, _, err := s.UpdateWorkflow(ctx, bob.OrgID, own.ID, store.WorkflowUpdate{Condition: &cond}); err != nil {
			t.Fatal(err)
		}
		pub := mustCreateWorkflow(t, s, ada, "Ada's", true)
		mustPublish(t, s, ada.OrgID, pub.ID)
		if _, _, err := s.UpdateWorkflow(ctx, ada.OrgID, pub.ID, store.WorkflowUpdate{Steps: &everyStep}); err != nil {
			t.Fatal(err)
		}

		for _, c := range []struct {
			name      string
			id        string
			condition string
			steps     []perch.Step
		}{
			{"one's own, as it is now", own.ID, cond, own.Steps},
			{"a published one, as published", pub.ID, pub.Condition, pub.Steps},
		} {
			f, err := s.ForkWorkflow(ctx, bob.OrgID, c.id, bob.ID)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if f.ID == c.id || f.OrgID != bob.OrgID || f.Enabled || f.Source != nil || f.ForkedFrom == nil || *f.ForkedFrom != c.id ||
				f.Version != 1 || f.Condition != c.condition || !reflect.DeepEqual(f.Steps, c.steps) || f.CreatedBy != bob.ID {
				t.Fatalf("%s: fork = %+v", c.name, f)
			}
			stored, err := s.Workflow(ctx, bob.OrgID, f.ID)
			if err != nil || !reflect.DeepEqual(stored, f) {
				t.Fatalf("%s: stored %+v, %v; answered %+v", c.name, stored, err, f)
			}
		}
		if versions, _ := s.SourceVersions(ctx, bob.OrgID); len(versions) != 0 {
			t.Fatalf("forks are not installed copies: SourceVersions = %v", versions)
		}
		if l, _ := s.Listing(ctx, pub.ID); l.Installs != 0 {
			t.Fatalf("a fork counted as an install: %d", l.Installs)
		}
	})
}

// withoutTargets is steps as the marketplace shows them: forward steps
// without URL or secret, e-mail steps without a target.
func withoutTargets(steps []perch.Step) []perch.Step {
	out := make([]perch.Step, len(steps))
	for i, st := range steps {
		if st.Forward != nil {
			st.Forward = &perch.ForwardStep{}
		}
		if st.Email != nil {
			st.Email = &perch.EmailStep{}
		}
		out[i] = st
	}
	return out
}

// TestTheAuthorsTargetsStayInTheAuthorsOrganisation: a forward step's URL
// and secret and an e-mail step's target are the author's; the listing, an
// install and a fork of a listing leave them blank, a fork of one's own
// keeps them, and updating an install keeps what the installer filled in.
func TestTheAuthorsTargetsStayInTheAuthorsOrganisation(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")
		src, err := s.CreateWorkflow(ctx, &perch.Workflow{OrgID: ada.OrgID, Name: "Out", Steps: everyStep, CreatedBy: ada.ID})
		if err != nil {
			t.Fatal(err)
		}
		mustPublish(t, s, ada.OrgID, src.ID)
		blank := withoutTargets(everyStep)

		l, err := s.Listing(ctx, src.ID)
		if err != nil || !reflect.DeepEqual(l.Workflow.Steps, blank) {
			t.Fatalf("listing steps = %+v, %v; want %+v", l.Workflow.Steps, err, blank)
		}
		page, _, err := s.Marketplace(ctx, "", store.SortRecent, perch.Page{})
		if err != nil || len(page) != 1 || !reflect.DeepEqual(page[0].Workflow.Steps, blank) {
			t.Fatalf("marketplace = %+v, %v", page, err)
		}
		copied, _ := mustInstall(t, s, bob, src.ID)
		if !reflect.DeepEqual(copied.Steps, blank) {
			t.Fatalf("installed steps = %+v, want %+v", copied.Steps, blank)
		}
		if stored, _ := s.Workflow(ctx, bob.OrgID, copied.ID); !reflect.DeepEqual(stored.Steps, blank) {
			t.Fatalf("stored installed steps = %+v", stored.Steps)
		}
		fork, err := s.ForkWorkflow(ctx, bob.OrgID, src.ID, bob.ID)
		if err != nil || !reflect.DeepEqual(fork.Steps, blank) {
			t.Fatalf("fork of the listing = %+v, %v", fork, err)
		}
		own, err := s.ForkWorkflow(ctx, ada.OrgID, src.ID, ada.ID)
		if err != nil || !reflect.DeepEqual(own.Steps, everyStep) {
			t.Fatalf("fork of one's own = %+v, %v; want the targets kept", own, err)
		}

		// Bob fills in his own targets; Ada republishes with one step more;
		// the update keeps Bob's.
		mine := slices.Clone(blank)
		mine[4] = perch.Step{Forward: &perch.ForwardStep{URL: "https://bob.example.com/in", Secret: "bobs"}}
		mine[5] = perch.Step{Email: &perch.EmailStep{To: "owners"}}
		if _, _, err := s.UpdateWorkflow(ctx, bob.OrgID, copied.ID, store.WorkflowUpdate{Steps: &mine}); err != nil {
			t.Fatal(err)
		}
		next := append([]perch.Step{{Drop: &perch.DropStep{}}}, everyStep...)
		if _, _, err := s.UpdateWorkflow(ctx, ada.OrgID, src.ID, store.WorkflowUpdate{Steps: &next}); err != nil {
			t.Fatal(err)
		}
		mustPublish(t, s, ada.OrgID, src.ID)
		updated, ok := mustInstall(t, s, bob, src.ID)
		want := append([]perch.Step{{Drop: &perch.DropStep{}}}, mine...)
		if !ok || !reflect.DeepEqual(updated.Steps, want) {
			t.Fatalf("updated install = %+v (updated %v); want %+v", updated.Steps, ok, want)
		}
	})
}
