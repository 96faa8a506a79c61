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

func teamNames(list []*perch.Team) []string {
	names := []string{}
	for _, t := range list {
		names = append(names, t.Name)
	}
	return names
}

func TestTeamLifecycle(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		bob := join(t, s, ada, "Bob Babbage", "bob@example.com", perch.RoleMember)

		if list, err := s.Teams(ctx, ada.OrgID); err != nil || list == nil || len(list) != 0 {
			t.Fatalf("Teams of a new organisation = %v, %v; want an empty list", list, err)
		}
		ops, err := s.CreateTeam(ctx, ada.OrgID, "  Ops  ", "  On call  ")
		if err != nil {
			t.Fatal(err)
		}
		if ops.Name != "Ops" || ops.Description != "On call" || ops.OrgID != ada.OrgID || ops.MemberCount != 0 ||
			ops.Members == nil || len(ops.Members) != 0 || !ops.CreatedAt.Equal(clock.Now()) {
			t.Fatalf("CreateTeam = %+v", ops)
		}
		clock.Advance(time.Minute)
		backend := mustTeam(t, s, ada.OrgID, "backend")
		zebra := mustTeam(t, s, ada.OrgID, "Zebra")

		list, err := s.Teams(ctx, ada.OrgID)
		if got := teamNames(list); err != nil || !slices.Equal(got, []string{"backend", "Ops", "Zebra"}) {
			t.Fatalf("Teams = %v, %v; want them by name, ignoring case", got, err)
		}
		if got := *list[1]; got.ID != ops.ID || got.Description != "On call" || !got.CreatedAt.Equal(ops.CreatedAt) {
			t.Fatalf("listed %+v, created %+v", got, ops)
		}

		// Team members come by name, each with when they were added.
		if err := s.AddTeamMember(ctx, ada.OrgID, ops.ID, bob.ID); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		if err := s.AddTeamMember(ctx, ada.OrgID, ops.ID, ada.ID); err != nil {
			t.Fatal(err)
		}
		got, err := s.Team(ctx, ada.OrgID, ops.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := []perch.TeamMember{
			{ID: ada.ID, Name: "Ada Lovelace", Email: "ada@example.com", AddedAt: clock.Now()},
			{ID: bob.ID, Name: "Bob Babbage", Email: "bob@example.com", AddedAt: clock.Now().Add(-time.Minute)},
		}
		if got.Name != "Ops" || got.MemberCount != 2 || len(got.Members) != 2 {
			t.Fatalf("Team = %+v", got)
		}
		for i := range want {
			if m := got.Members[i]; m.ID != want[i].ID || m.Name != want[i].Name || m.Email != want[i].Email || !m.AddedAt.Equal(want[i].AddedAt) {
				t.Errorf("team member %d = %+v, want %+v", i, m, want[i])
			}
		}
		if list, _ := s.Teams(ctx, ada.OrgID); list[1].MemberCount != 2 || list[0].MemberCount != 0 {
			t.Fatalf("Teams member counts = %d, %d", list[0].MemberCount, list[1].MemberCount)
		}

		// An update changes only the fields it names.
		upd, err := s.UpdateTeam(ctx, ada.OrgID, ops.ID, perch.TeamUpdate{Name: new("  Operations ")})
		if err != nil || upd.Name != "Operations" || upd.Description != "On call" || upd.MemberCount != 2 || len(upd.Members) != 2 {
			t.Fatalf("rename = %+v, %v", upd, err)
		}
		upd, err = s.UpdateTeam(ctx, ada.OrgID, ops.ID, perch.TeamUpdate{Description: new("")})
		if err != nil || upd.Name != "Operations" || upd.Description != "" {
			t.Fatalf("clear description = %+v, %v", upd, err)
		}
		if got, _ := s.Team(ctx, ada.OrgID, ops.ID); got.Name != "Operations" || got.Description != "" {
			t.Fatalf("Team after updates = %+v", got)
		}
		_, err = s.UpdateTeam(ctx, ada.OrgID, "nope", perch.TeamUpdate{Name: new("x")})
		wantCode(t, err, perch.ENOTFOUND)

		// Deleting a team takes its memberships along.
		if err := s.DeleteTeam(ctx, ada.OrgID, ops.ID); err != nil {
			t.Fatal(err)
		}
		_, err = s.Team(ctx, ada.OrgID, ops.ID)
		wantCode(t, err, perch.ENOTFOUND)
		wantCode(t, s.DeleteTeam(ctx, ada.OrgID, ops.ID), perch.ENOTFOUND)
		if ids, _ := s.UserTeamIDs(ctx, bob.ID); len(ids) != 0 {
			t.Fatalf("Bob is still in teams %v", ids)
		}
		if list, _ := s.Teams(ctx, ada.OrgID); !slices.Equal(teamNames(list), []string{backend.Name, zebra.Name}) {
			t.Fatalf("Teams after delete = %v", teamNames(list))
		}
	})
}

func TestTeamNamesAreUniqueIgnoringCase(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		dora := mustCreateUser(t, s, "Dora Somerville", "dora@example.com")
		ops := mustTeam(t, s, ada.OrgID, "Ops")
		backend := mustTeam(t, s, ada.OrgID, "Backend")

		_, err := s.CreateTeam(ctx, ada.OrgID, " oPS ", "")
		wantCode(t, err, perch.ECONFLICT)
		_, err = s.UpdateTeam(ctx, ada.OrgID, backend.ID, perch.TeamUpdate{Name: new("OPS"), Description: new("changed")})
		wantCode(t, err, perch.ECONFLICT)
		if got, _ := s.Team(ctx, ada.OrgID, backend.ID); got.Name != "Backend" || got.Description != "" {
			t.Fatalf("the refused rename changed the team: %+v", got)
		}
		if list, _ := s.Teams(ctx, ada.OrgID); len(list) != 2 {
			t.Fatalf("Teams = %v", teamNames(list))
		}

		// A team may change the case of its own name, and another
		// organisation may use the same name.
		if upd, err := s.UpdateTeam(ctx, ada.OrgID, ops.ID, perch.TeamUpdate{Name: new("OPS")}); err != nil || upd.Name != "OPS" {
			t.Fatalf("UpdateTeam(own name, new case) = %+v, %v", upd, err)
		}
		if _, err := s.CreateTeam(ctx, dora.OrgID, "Ops", ""); err != nil {
			t.Fatalf("the same name in another organisation: %v", err)
		}
	})
}

func TestTeamsOfAnotherOrgAreNotFound(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		dora := mustCreateUser(t, s, "Dora Somerville", "dora@example.com")
		ops := mustTeam(t, s, ada.OrgID, "Ops", ada)

		_, err := s.Team(ctx, dora.OrgID, ops.ID)
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.UpdateTeam(ctx, dora.OrgID, ops.ID, perch.TeamUpdate{Name: new("Stolen")})
		wantCode(t, err, perch.ENOTFOUND)
		wantCode(t, s.DeleteTeam(ctx, dora.OrgID, ops.ID), perch.ENOTFOUND)
		wantCode(t, s.AddTeamMember(ctx, dora.OrgID, ops.ID, dora.ID), perch.ENOTFOUND)
		wantCode(t, s.RemoveTeamMember(ctx, dora.OrgID, ops.ID, ada.ID), perch.ENOTFOUND)
		if list, err := s.Teams(ctx, dora.OrgID); err != nil || len(list) != 0 {
			t.Fatalf("Teams(Dora's org) = %v, %v", teamNames(list), err)
		}

		// A user of another organisation cannot join the team either.
		wantCode(t, s.AddTeamMember(ctx, ada.OrgID, ops.ID, dora.ID), perch.ENOTFOUND)
		wantCode(t, s.AddTeamMember(ctx, ada.OrgID, ops.ID, "nope"), perch.ENOTFOUND)
		wantCode(t, s.AddTeamMember(ctx, ada.OrgID, "nope", ada.ID), perch.ENOTFOUND)

		got, err := s.Team(ctx, ada.OrgID, ops.ID)
		if err != nil || got.Name != "Ops" || got.MemberCount != 1 || got.Members[0].ID != ada.ID {
			t.Fatalf("Ops after the refusals = %+v, %v", got, err)
		}
		if ids, _ := s.UserTeamIDs(ctx, dora.ID); len(ids) != 0 {
			t.Fatalf("Dora is in teams %v", ids)
		}
	})
}

func TestTeamMembership(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		bob := join(t, s, ada, "Bob Babbage", "bob@example.com", perch.RoleMember)
		ops := mustTeam(t, s, ada.OrgID, "Ops")
		backend := mustTeam(t, s, ada.OrgID, "Backend")

		for range 2 {
			if err := s.AddTeamMember(ctx, ada.OrgID, ops.ID, ada.ID); err != nil {
				t.Fatalf("AddTeamMember: %v", err)
			}
		}
		if got, _ := s.Team(ctx, ada.OrgID, ops.ID); got.MemberCount != 1 || len(got.Members) != 1 {
			t.Fatalf("added twice: %+v; want one member", got)
		}
		if err := s.AddTeamMember(ctx, ada.OrgID, backend.ID, ada.ID); err != nil {
			t.Fatal(err)
		}
		ids, err := s.UserTeamIDs(ctx, ada.ID)
		if want := []string{ops.ID, backend.ID}; err != nil || !slices.Equal(slices.Sorted(slices.Values(ids)), slices.Sorted(slices.Values(want))) {
			t.Fatalf("UserTeamIDs(Ada) = %v, %v; want %v", ids, err, want)
		}
		if ids, err := s.UserTeamIDs(ctx, bob.ID); err != nil || ids == nil || len(ids) != 0 {
			t.Fatalf("UserTeamIDs(Bob) = %v, %v; want an empty list", ids, err)
		}

		wantCode(t, s.RemoveTeamMember(ctx, ada.OrgID, ops.ID, bob.ID), perch.ENOTFOUND)
		if err := s.RemoveTeamMember(ctx, ada.OrgID, ops.ID, ada.ID); err != nil {
			t.Fatal(err)
		}
		wantCode(t, s.RemoveTeamMember(ctx, ada.OrgID, ops.ID, ada.ID), perch.ENOTFOUND)
		if got, _ := s.Team(ctx, ada.OrgID, ops.ID); got.MemberCount != 0 || len(got.Members) != 0 {
			t.Fatalf("Ops after removal = %+v", got)
		}
		if ids, _ := s.UserTeamIDs(ctx, ada.ID); !slices.Equal(ids, []string{backend.ID}) {
			t.Fatalf("UserTeamIDs(Ada) = %v, want only Backend", ids)
		}
	})
}

// A member's teams in Members come in the order Teams lists them: by name,
// ignoring case, whatever the database's collation.
func TestMemberTeamsAreOrderedLikeTeams(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		mustTeam(t, s, ada.OrgID, "Ops", ada)
		mustTeam(t, s, ada.OrgID, "backend", ada)
		teams, _ := s.Teams(ctx, ada.OrgID)
		members, err := s.Members(ctx, ada.OrgID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range members[0].Teams {
			got = append(got, r.Name)
		}
		if want := teamNames(teams); !slices.Equal(got, want) {
			t.Fatalf("Ada's teams in Members = %v; Teams lists %v", got, want)
		}
	})
}

// Member describes a member the way Members does, teams included: it is what
// SetMemberRole returns to the client.
func TestMemberIncludesTheirTeams(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		bob := join(t, s, ada, "Bob Babbage", "bob@example.com", perch.RoleMember)
		ops := mustTeam(t, s, ada.OrgID, "Ops", bob)
		want := []perch.TeamRef{{ID: ops.ID, Name: "Ops"}}
		m, err := s.Member(ctx, ada.OrgID, bob.ID)
		if err != nil || !slices.Equal(m.Teams, want) {
			t.Fatalf("Member(Bob).Teams = %v, %v; want %v", m.Teams, err, want)
		}
		m, err = s.SetMemberRole(ctx, ada.OrgID, bob.ID, perch.RoleAdmin)
		if err != nil || !slices.Equal(m.Teams, want) {
			t.Fatalf("SetMemberRole(Bob).Teams = %v, %v; want %v", m.Teams, err, want)
		}
	})
}
