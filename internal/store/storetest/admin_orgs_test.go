package storetest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func orgIDs(s *store.Store, q string) func(perch.Page) ([]string, string, error) {
	return idsOf(s.Orgs, q, func(o *perch.AdminOrg) string { return o.ID })
}

func TestAdminOrgsNewestFirstSearchedAndPaged(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		var owners []*perch.User
		for _, name := range []string{"Ada", "Bob", "Carol", "Dan", "Ada Two"} {
			clock.Advance(time.Second)
			owners = append(owners, mustCreateUser(t, s, name, name+"@example.com"))
		}
		join(t, s, owners[0], "Erin", "erin@example.com", perch.RoleMember)
		ids, pages := allPages(t, 2, orgIDs(s, ""))
		want := []string{owners[4].OrgID, owners[3].OrgID, owners[2].OrgID, owners[1].OrgID, owners[0].OrgID}
		if !slices.Equal(ids, want) || pages != 3 {
			t.Fatalf("paged %v in %d pages, want %v in 3", ids, pages, want)
		}
		if got, _ := allPages(t, 50, orgIDs(s, "ADA")); !slices.Equal(got, []string{owners[4].OrgID, owners[0].OrgID}) {
			t.Fatalf("q=ADA found %v", got)
		}
		if got, _ := allPages(t, 50, orgIDs(s, owners[2].OrgID)); !slices.Equal(got, []string{owners[2].OrgID}) {
			t.Fatalf("q=<id> found %v", got)
		}
		orgs, _, err := s.Orgs(ctx, "ada's", perch.Page{Limit: 50})
		if err != nil || len(orgs) != 1 {
			t.Fatalf("Orgs = %v, %v", orgs, err)
		}
		o := orgs[0]
		if o.ID != owners[0].OrgID || o.Name != "Ada's organisation" || o.Plan != "team" || o.Status != perch.PlanTrialing ||
			o.SeatCount != 2 || o.MaxSeats != 25 || !o.CreatedAt.Equal(owners[0].CreatedAt) {
			t.Fatalf("org = %+v", o)
		}
		_, _, err = s.Orgs(ctx, "", perch.Page{Cursor: "MTIzOmFi!", Limit: 2})
		wantCode(t, err, perch.EBADREQUEST)
	})
}

func TestAdminOrgDetailAndUpdate(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		clock.Advance(time.Second) // owners are listed by when they joined
		bob := join(t, s, ada, "Bob", "bob@example.com", perch.RoleOwner)
		join(t, s, ada, "Carol", "carol@example.com", perch.RoleMember)
		invite(t, s, ada, "dan@example.com", perch.RoleMember, "inv-dan")
		if _, err := s.CreateTeam(ctx, ada.OrgID, "Ops", ""); err != nil {
			t.Fatal(err)
		}
		d, err := s.AdminOrg(ctx, ada.OrgID)
		if err != nil {
			t.Fatal(err)
		}
		wantOwners := []perch.OrgOwner{{ID: ada.ID, Name: "Ada", Email: "ada@example.com"}, {ID: bob.ID, Name: "Bob", Email: "bob@example.com"}}
		if d.SeatCount != 3 || d.PendingInvitations != 1 || d.Teams != 1 || d.TrialEndsAt == nil || d.Slug == "" ||
			!slices.Equal(d.Owners, wantOwners) {
			t.Fatalf("detail = %+v", d)
		}

		ends := clock.Now().Add(30 * 24 * time.Hour)
		before, after, err := s.UpdateOrgAsAdmin(ctx, ada.OrgID, perch.AdminOrgUpdate{
			Plan: new("enterprise"), Status: new(perch.PlanActive), SetTrialEndsAt: true, TrialEndsAt: &ends})
		if err != nil {
			t.Fatal(err)
		}
		if before.Plan != "team" || after.Plan != "enterprise" || after.Status != perch.PlanActive || after.MaxSeats != 1000 ||
			!after.TrialEndsAt.Equal(ends) {
			t.Fatalf("before %+v, after %+v", before, after)
		}
		_, after, err = s.UpdateOrgAsAdmin(ctx, ada.OrgID, perch.AdminOrgUpdate{SetTrialEndsAt: true})
		if err != nil || after.TrialEndsAt != nil || after.Plan != "enterprise" {
			t.Fatalf("clearing the trial = %+v, %v", after, err)
		}
		if org := mustOrg(t, s, ada.OrgID); org.Plan != "enterprise" || org.PlanStatus != perch.PlanActive || org.TrialEndsAt != nil {
			t.Fatalf("org = %+v", org)
		}
		_, _, err = s.UpdateOrgAsAdmin(ctx, "nope", perch.AdminOrgUpdate{Status: new(perch.PlanActive)})
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.AdminOrg(ctx, "nope")
		wantCode(t, err, perch.ENOTFOUND)
	})
}

func TestPlansCountSubscribersButNotCanceled(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var orgs []string
		for _, e := range []string{"a@example.com", "b@example.com", "c@example.com", "d@example.com"} {
			orgs = append(orgs, mustCreateUser(t, s, "X", e).OrgID)
		}
		set := func(org, plan, status string) {
			t.Helper()
			if _, _, err := s.UpdateOrgAsAdmin(ctx, org, perch.AdminOrgUpdate{Plan: &plan, Status: &status}); err != nil {
				t.Fatal(err)
			}
		}
		set(orgs[0], "solo", perch.PlanActive)
		set(orgs[1], "solo", perch.PlanCanceled)
		set(orgs[2], "enterprise", perch.PlanPastDue)
		plans, err := s.PlansWithSubscribers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		var order []string
		for _, p := range plans {
			got[p.Slug] = p.Subscribers
			order = append(order, p.Slug)
		}
		if !slices.Equal(order, []string{"solo", "team", "enterprise"}) || got["solo"] != 1 || got["team"] != 1 || got["enterprise"] != 1 {
			t.Fatalf("plans %v, subscribers %v", order, got)
		}
		if plans[0].Name != "Solo" || plans[0].PriceMonthly != 9 || plans[0].MaxSeats != 1 {
			t.Fatalf("plan = %+v", plans[0])
		}
	})
}
