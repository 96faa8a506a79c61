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

// sameIDs reports whether got and want hold the same ids, in any order:
// members who joined at the same millisecond come by id.
func sameIDs(got []string, want ...string) bool {
	got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	return slices.Equal(got, want)
}

// setGroup is an UpdateSCIMGroup change that writes w whatever the team is.
func setGroup(w store.SCIMGroupWrite) func(*store.SCIMGroup) (store.SCIMGroupWrite, error) {
	return func(*store.SCIMGroup) (store.SCIMGroupWrite, error) { return w, nil }
}

// TestSCIMGroupsAreTheOrganisationsTeams: SCIM groups are teams, made,
// found, filtered, paged and changed with their members in one go, and
// never reach another organisation's people or teams.
func TestSCIMGroupsAreTheOrganisationsTeams(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := join(t, s, ada, "Bob", "bob@example.com", perch.RoleMember)
		cy := join(t, s, ada, "Cy", "cy@example.com", perch.RoleMember)
		eve := mustCreateUser(t, s, "Eve", "eve@example.com") // another organisation
		theirs := mustTeam(t, s, eve.OrgID, "Theirs", eve)
		made := clock.Now()

		g, err := s.CreateSCIMGroup(ctx, ada.OrgID, store.SCIMGroupWrite{Name: " Ops ", ExternalID: "ext-1", Members: []string{bob.ID, ada.ID}})
		if err != nil {
			t.Fatal(err)
		}
		if g.Name != "Ops" || g.ExternalID != "ext-1" || !sameIDs(g.MemberIDs(), bob.ID, ada.ID) ||
			!g.CreatedAt.Equal(made) || !g.UpdatedAt.Equal(made) || g.Members[0].Email == "" {
			t.Fatalf("CreateSCIMGroup = %+v", g)
		}
		if team, err := s.Team(ctx, ada.OrgID, g.ID); err != nil || team.MemberCount != 2 {
			t.Fatalf("the team: %+v, %v", team, err)
		}
		clock.Advance(time.Minute)
		mustTeam(t, s, ada.OrgID, "Dashboard-made")

		for _, c := range []struct {
			name string
			w    store.SCIMGroupWrite
			code string
		}{
			{"a name taken, without regard to case", store.SCIMGroupWrite{Name: "OPS"}, perch.ECONFLICT},
			{"another organisation's user", store.SCIMGroupWrite{Name: "X", Members: []string{bob.ID, eve.ID}}, perch.EBADREQUEST},
			{"nobody's id", store.SCIMGroupWrite{Name: "Y", Members: []string{"nobody"}}, perch.EBADREQUEST},
		} {
			_, err := s.CreateSCIMGroup(ctx, ada.OrgID, c.w)
			pe, _ := err.(*perch.Error)
			if perch.ErrorCode(err) != c.code || pe == nil || len(pe.Fields) != 1 {
				t.Errorf("%s: %v", c.name, err)
			}
		}

		// Lists: in the order teams were made, filtered and paged.
		all, total, err := s.SCIMGroups(ctx, ada.OrgID, nil, 0, 10)
		if err != nil || total != 2 || len(all) != 2 || all[0].ID != g.ID || all[1].Name != "Dashboard-made" || all[1].Members == nil || len(all[0].Members) != 2 {
			t.Fatalf("SCIMGroups = %+v, %d, %v", all, total, err)
		}
		for _, c := range []struct {
			conds []store.SCIMGroupCondition
			want  int
		}{
			{[]store.SCIMGroupCondition{{Field: store.SCIMGroupName, Value: "ops"}}, 1},
			{[]store.SCIMGroupCondition{{Field: store.SCIMGroupExternalID, Value: "ext-1"}}, 1},
			{[]store.SCIMGroupCondition{{Field: store.SCIMGroupExternalID, Value: "EXT-1"}}, 0},
			{[]store.SCIMGroupCondition{{Field: store.SCIMGroupName, Value: "Ops"}, {Field: store.SCIMGroupExternalID, Value: "x"}}, 0},
			{[]store.SCIMGroupCondition{{Field: store.SCIMGroupName, Value: "Theirs"}}, 0},
		} {
			if _, n, err := s.SCIMGroups(ctx, ada.OrgID, c.conds, 0, 10); err != nil || n != c.want {
				t.Errorf("%+v: %d, %v; want %d", c.conds, n, err, c.want)
			}
		}
		page, total, err := s.SCIMGroups(ctx, ada.OrgID, nil, 1, 1)
		if err != nil || total != 2 || len(page) != 1 || page[0].Name != "Dashboard-made" || page[0].Members == nil || len(page[0].Members) != 0 {
			t.Errorf("the second page: %+v, %d, %v", page, total, err)
		}
		if _, err := s.SCIMGroup(ctx, ada.OrgID, theirs.ID); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Errorf("another organisation's team: %v", err)
		}

		// An update: rename, and the members become those listed.
		clock.Advance(time.Minute)
		ch, err := s.UpdateSCIMGroup(ctx, ada.OrgID, g.ID, setGroup(store.SCIMGroupWrite{Name: "Ops EU", ExternalID: "ext-2", Members: []string{ada.ID, cy.ID, cy.ID}}))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ch.Added, []string{cy.ID}) || !slices.Equal(ch.Removed, []string{bob.ID}) || ch.Before.Name != "Ops" ||
			ch.After.Name != "Ops EU" || ch.After.ExternalID != "ext-2" || !sameIDs(ch.After.MemberIDs(), ada.ID, cy.ID) ||
			!ch.After.UpdatedAt.Equal(clock.Now()) || !ch.After.CreatedAt.Equal(made) {
			t.Fatalf("UpdateSCIMGroup = %+v", ch)
		}
		if ids, _ := s.UserTeamIDs(ctx, bob.ID); slices.Contains(ids, g.ID) {
			t.Error("bob is still in the team")
		}
		// Refused updates change nothing.
		for _, w := range []store.SCIMGroupWrite{{Name: "dashboard-made"}, {Name: "Ops EU", Members: []string{eve.ID}}} {
			if _, err := s.UpdateSCIMGroup(ctx, ada.OrgID, g.ID, setGroup(w)); err == nil {
				t.Errorf("%+v: no error", w)
			}
		}
		if _, err := s.UpdateSCIMGroup(ctx, eve.OrgID, g.ID, setGroup(store.SCIMGroupWrite{Name: "Taken"})); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Errorf("another organisation's update: %v", err)
		}
		if now, err := s.SCIMGroup(ctx, ada.OrgID, g.ID); err != nil || !sameIDs(now.MemberIDs(), ada.ID, cy.ID) || now.Name != "Ops EU" {
			t.Errorf("after refusals: %+v, %v", now, err)
		}

		// A dashboard change of members moves lastModified too.
		clock.Advance(time.Minute)
		if err := s.RemoveTeamMember(ctx, ada.OrgID, g.ID, cy.ID); err != nil {
			t.Fatal(err)
		}
		if now, _ := s.SCIMGroup(ctx, ada.OrgID, g.ID); !now.UpdatedAt.Equal(clock.Now()) {
			t.Errorf("lastModified %v after a removal at %v", now.UpdatedAt, clock.Now())
		}
		if err := s.RemoveTeamMember(ctx, ada.OrgID, g.ID, cy.ID); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Errorf("removing a non-member: %v", err)
		}
		if err := s.RemoveTeamMember(ctx, eve.OrgID, g.ID, ada.ID); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Errorf("removing from another organisation's team: %v", err)
		}
	})
}

// TestSCIMRoles: a SCIM create takes a role, an update changes it, and the
// last owner cannot be demoted.
func TestSCIMRoles(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		w := scimWrite("bob", "bob@example.com", true)
		w.Role = perch.RoleAdmin
		bob, err := s.CreateSCIMUser(ctx, ada.OrgID, w)
		if err != nil || bob.Role != perch.RoleAdmin {
			t.Fatalf("CreateSCIMUser = %+v, %v", bob, err)
		}
		cy, err := s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("cy", "cy@example.com", true))
		if err != nil || cy.Role != perch.RoleMember {
			t.Fatalf("without a role: %+v, %v", cy, err)
		}
		w.Role = ""
		if ch, err := s.UpdateSCIMUser(ctx, ada.OrgID, bob.ID, replace(w)); err != nil || ch.After.Role != perch.RoleAdmin {
			t.Fatalf("no role keeps it: %+v, %v", ch, err)
		}
		// Ada is the only owner.
		demote := store.SCIMWrite{Email: ada.Email, Name: ada.Name, UserName: ada.Email, Active: true, Role: perch.RoleMember}
		if _, err := s.UpdateSCIMUser(ctx, ada.OrgID, ada.ID, replace(demote)); perch.ErrorCode(err) != perch.ECONFLICT {
			t.Fatalf("demoting the last owner: %v", err)
		}
		if u, _ := s.User(ctx, ada.ID); u.OrgRole != perch.RoleOwner || u.Name != "Ada" {
			t.Fatalf("after the refusal: %+v", u)
		}
		w.Role = perch.RoleOwner
		if ch, err := s.UpdateSCIMUser(ctx, ada.OrgID, bob.ID, replace(w)); err != nil || ch.Before.Role != perch.RoleAdmin || ch.After.Role != perch.RoleOwner {
			t.Fatalf("promoting: %+v, %v", ch, err)
		}
		if ch, err := s.UpdateSCIMUser(ctx, ada.OrgID, ada.ID, replace(demote)); err != nil || ch.After.Role != perch.RoleMember {
			t.Fatalf("demoting an owner who is not the last: %+v, %v", ch, err)
		}
		if u, _ := s.User(ctx, bob.ID); u.IsAdmin {
			t.Error("a SCIM role made a platform admin")
		}
		w.Role = "platform_admin"
		if _, err := s.UpdateSCIMUser(ctx, ada.OrgID, bob.ID, replace(w)); perch.ErrorCode(err) != perch.EBADREQUEST {
			t.Errorf("a role that is none of the organisation's: %v", err)
		}
		other := scimWrite("dee", "dee@example.com", true)
		other.Role = "root"
		if _, err := s.CreateSCIMUser(ctx, ada.OrgID, other); perch.ErrorCode(err) != perch.EBADREQUEST {
			t.Errorf("creating with a role that is none of the organisation's: %v", err)
		}
	})
}

// TestSCIMGroupsDoNotSeeDeletedMembers: a member the identity provider
// deleted is gone from SCIM's groups too (RFC 7644 §3.6), cannot be put in
// one, and is not taken out of the team by a group write that leaves them
// out, so a restore finds their teams as they were.
func TestSCIMGroupsDoNotSeeDeletedMembers(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob, err := s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("bob", "bob@example.com", true))
		if err != nil {
			t.Fatal(err)
		}
		g, err := s.CreateSCIMGroup(ctx, ada.OrgID, store.SCIMGroupWrite{Name: "Ops", Members: []string{ada.ID, bob.ID}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteSCIMUser(ctx, ada.OrgID, bob.ID, func(*store.SCIMUser) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if got, err := s.SCIMGroup(ctx, ada.OrgID, g.ID); err != nil || !sameIDs(got.MemberIDs(), ada.ID) {
			t.Fatalf("the group after the member's deletion = %+v, %v", got, err)
		}
		_, err = s.UpdateSCIMGroup(ctx, ada.OrgID, g.ID, setGroup(store.SCIMGroupWrite{Name: "Ops", Members: []string{ada.ID, bob.ID}}))
		wantCode(t, err, perch.EBADREQUEST)
		if _, err := s.UpdateSCIMGroup(ctx, ada.OrgID, g.ID, setGroup(store.SCIMGroupWrite{Name: "Ops", Members: []string{ada.ID}})); err != nil {
			t.Fatal(err)
		}
		if team, err := s.Team(ctx, ada.OrgID, g.ID); err != nil || team.MemberCount != 2 {
			t.Fatalf("the team kept %+v, %v; want the deleted member still in it", team, err)
		}
	})
}
