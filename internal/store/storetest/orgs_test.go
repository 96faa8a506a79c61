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

// invite has inviter invite email into their organisation with role; the
// hash of the link the inviter is shown is hash, of the mailed one
// "mail-"+hash.
func invite(tb testing.TB, s *store.Store, inviter *perch.User, email, role, hash string) *perch.Invitation {
	tb.Helper()
	inv, err := s.CreateInvitation(context.Background(), inviter.OrgID, inviter.ID, email, role, hash, "mail-"+hash)
	if err != nil {
		tb.Fatalf("CreateInvitation(%q): %v", email, err)
	}
	return inv
}

// join signs a new account up through an invitation from inviter, with role:
// the way a second member gets into an organisation.
func join(tb testing.TB, s *store.Store, inviter *perch.User, name, email, role string) *perch.User {
	tb.Helper()
	invite(tb, s, inviter, email, role, "join-"+email)
	u, err := s.CreateInvitedUser(context.Background(), name, email, "hash-of-"+email, "join-"+email)
	if err != nil {
		tb.Fatalf("CreateInvitedUser(%q): %v", email, err)
	}
	return u
}

func mustOrg(tb testing.TB, s *store.Store, id string) *perch.Org {
	tb.Helper()
	o, err := s.Org(context.Background(), id)
	if err != nil {
		tb.Fatalf("Org(%q): %v", id, err)
	}
	return o
}

func mustTeam(tb testing.TB, s *store.Store, orgID, name string, members ...*perch.User) *perch.Team {
	tb.Helper()
	ctx := context.Background()
	t, err := s.CreateTeam(ctx, orgID, name, "")
	if err != nil {
		tb.Fatalf("CreateTeam(%q): %v", name, err)
	}
	for _, u := range members {
		if err := s.AddTeamMember(ctx, orgID, t.ID, u.ID); err != nil {
			tb.Fatalf("AddTeamMember(%q, %q): %v", name, u.Name, err)
		}
	}
	return t
}

func memberRole(tb testing.TB, s *store.Store, orgID, userID string) string {
	tb.Helper()
	m, err := s.Member(context.Background(), orgID, userID)
	if err != nil {
		tb.Fatalf("Member(%q): %v", userID, err)
	}
	return m.Role
}

func memberIDs(list []*perch.Member) []string {
	ids := []string{}
	for _, m := range list {
		ids = append(ids, m.ID)
	}
	return ids
}

func TestOrgCountsMembersAndLiveInvitations(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		seats := func(wantMembers, wantPending int) {
			t.Helper()
			o := mustOrg(t, s, ada.OrgID)
			if o.SeatCount != wantMembers || o.PendingInvitations != wantPending || o.MaxSeats != 25 {
				t.Fatalf("seats = %d members, %d pending of %d; want %d, %d of 25",
					o.SeatCount, o.PendingInvitations, o.MaxSeats, wantMembers, wantPending)
			}
		}
		seats(1, 0)
		join(t, s, ada, "Bob Babbage", "bob@example.com", perch.RoleMember)
		seats(2, 0) // an accepted invitation holds no seat of its own
		invite(t, s, ada, "carol@example.com", perch.RoleMember, "inv-carol")
		invite(t, s, ada, "dora@example.com", perch.RoleAdmin, "inv-dora")
		seats(2, 2)
		clock.Advance(time.Hour)
		invite(t, s, ada, "erin@example.com", perch.RoleMember, "inv-erin")
		seats(2, 3)
		clock.Advance(perch.InvitationTTL - time.Hour - time.Millisecond)
		seats(2, 3)
		clock.Advance(time.Millisecond) // Carol's and Dora's invitations end now
		seats(2, 1)
		clock.Advance(time.Hour)
		seats(2, 0)
	})
}

func TestRenameOrg(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		before := mustOrg(t, s, ada.OrgID)
		got, err := s.RenameOrg(ctx, ada.OrgID, "  Analytical Engines  ")
		if err != nil {
			t.Fatal(err)
		}
		want := *before
		want.Name = "Analytical Engines"
		if !equalOrgs(got, &want) {
			t.Fatalf("RenameOrg = %+v, want %+v", got, want)
		}
		if o := mustOrg(t, s, ada.OrgID); o.Name != "Analytical Engines" {
			t.Fatalf("Org().Name = %q after rename", o.Name)
		}
		_, err = s.RenameOrg(ctx, "nope", "Nothing")
		wantCode(t, err, perch.ENOTFOUND)
	})
}

func equalOrgs(a, b *perch.Org) bool {
	ta, tb := *a, *b
	ta.TrialEndsAt, tb.TrialEndsAt = nil, nil
	ta.Subscription, tb.Subscription = nil, nil
	sameTrial := (a.TrialEndsAt == nil) == (b.TrialEndsAt == nil) && (a.TrialEndsAt == nil || a.TrialEndsAt.Equal(*b.TrialEndsAt))
	return ta == tb && sameTrial && describe(a.Subscription) == describe(b.Subscription)
}

func TestMembersOldestFirstWithTheirTeams(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		clock.Advance(time.Minute)
		bob := join(t, s, ada, "Bob Babbage", "bob@example.com", perch.RoleMember)
		clock.Advance(time.Minute)
		carol := join(t, s, ada, "Carol Herschel", "carol@example.com", perch.RoleAdmin)
		dora := mustCreateUser(t, s, "Dora Somerville", "dora@example.com")
		ops := mustTeam(t, s, ada.OrgID, "Ops", ada, bob)
		backend := mustTeam(t, s, ada.OrgID, "Backend", ada)
		mustTeam(t, s, dora.OrgID, "Astronomy", dora)

		list, err := s.Members(ctx, ada.OrgID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := memberIDs(list), []string{ada.ID, bob.ID, carol.ID}; !slices.Equal(got, want) {
			t.Fatalf("Members = %v, want Ada, Bob, Carol (oldest first)", list)
		}
		start := storetest.NewClock().Now()
		want := []perch.Member{
			{ID: ada.ID, Name: "Ada Lovelace", Email: "ada@example.com", Role: perch.RoleOwner, JoinedAt: start,
				Teams: []perch.TeamRef{{ID: backend.ID, Name: "Backend"}, {ID: ops.ID, Name: "Ops"}}},
			{ID: bob.ID, Name: "Bob Babbage", Email: "bob@example.com", Role: perch.RoleMember, JoinedAt: start.Add(time.Minute),
				Teams: []perch.TeamRef{{ID: ops.ID, Name: "Ops"}}},
			{ID: carol.ID, Name: "Carol Herschel", Email: "carol@example.com", Role: perch.RoleAdmin, JoinedAt: start.Add(2 * time.Minute),
				Teams: []perch.TeamRef{}},
		}
		for i, m := range list {
			w := want[i]
			if m.Name != w.Name || m.Email != w.Email || m.Role != w.Role || !m.JoinedAt.Equal(w.JoinedAt) || !slices.Equal(m.Teams, w.Teams) {
				t.Errorf("member %d = %+v, want %+v", i, *m, w)
			}
		}
		if carolTeams := list[2].Teams; carolTeams == nil {
			t.Error("a member in no team has nil Teams; want an empty list")
		}

		others, err := s.Members(ctx, dora.OrgID)
		if err != nil || len(others) != 1 || others[0].ID != dora.ID {
			t.Fatalf("Members(Dora's org) = %v, %v", others, err)
		}

		m, err := s.Member(ctx, ada.OrgID, bob.ID)
		if err != nil || m.Name != "Bob Babbage" || m.Email != "bob@example.com" || m.Role != perch.RoleMember {
			t.Fatalf("Member(Bob) = %+v, %v", m, err)
		}
		_, err = s.Member(ctx, ada.OrgID, dora.ID)
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.Member(ctx, dora.OrgID, ada.ID)
		wantCode(t, err, perch.ENOTFOUND)
	})
}

func TestSetMemberRole(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		bob := join(t, s, ada, "Bob Babbage", "bob@example.com", perch.RoleMember)
		dora := mustCreateUser(t, s, "Dora Somerville", "dora@example.com")

		for _, role := range []string{perch.RoleAdmin, perch.RoleOwner, perch.RoleMember} {
			m, err := s.SetMemberRole(ctx, ada.OrgID, bob.ID, role)
			if err != nil || m.ID != bob.ID || m.Role != role {
				t.Fatalf("SetMemberRole(Bob, %s) = %+v, %v", role, m, err)
			}
			if got := memberRole(t, s, ada.OrgID, bob.ID); got != role {
				t.Fatalf("Bob's role = %s, want %s", got, role)
			}
		}

		// Ada is the only owner: demoting her would leave nobody in charge.
		for _, role := range []string{perch.RoleAdmin, perch.RoleMember} {
			_, err := s.SetMemberRole(ctx, ada.OrgID, ada.ID, role)
			wantCode(t, err, perch.ECONFLICT)
		}
		if got := memberRole(t, s, ada.OrgID, ada.ID); got != perch.RoleOwner {
			t.Fatalf("the refused demotion changed Ada's role to %s", got)
		}

		// With a second owner, either one may step down.
		if _, err := s.SetMemberRole(ctx, ada.OrgID, bob.ID, perch.RoleOwner); err != nil {
			t.Fatal(err)
		}
		m, err := s.SetMemberRole(ctx, ada.OrgID, ada.ID, perch.RoleAdmin)
		if err != nil || m.Role != perch.RoleAdmin {
			t.Fatalf("demoting one of two owners = %+v, %v", m, err)
		}
		_, err = s.SetMemberRole(ctx, ada.OrgID, bob.ID, perch.RoleMember)
		wantCode(t, err, perch.ECONFLICT) // Bob is the only owner now

		_, err = s.SetMemberRole(ctx, ada.OrgID, dora.ID, perch.RoleMember)
		wantCode(t, err, perch.ENOTFOUND)
		if got := memberRole(t, s, dora.OrgID, dora.ID); got != perch.RoleOwner {
			t.Fatalf("Dora's role in her own organisation = %s", got)
		}
	})
}

func TestRemoveMemberGivesThemAnOrganisationOfTheirOwn(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		bob := join(t, s, ada, "Bob Babbage", "bob@example.com", perch.RoleAdmin)
		ops := mustTeam(t, s, ada.OrgID, "Ops", ada, bob)
		mustTeam(t, s, ada.OrgID, "Backend", bob)
		clock.Advance(time.Hour)

		if err := s.RemoveMember(ctx, ada.OrgID, bob.ID); err != nil {
			t.Fatal(err)
		}
		got, err := s.User(ctx, bob.ID)
		if err != nil || got.OrgID == ada.OrgID || got.OrgRole != perch.RoleOwner {
			t.Fatalf("removed user = %+v, %v; want the owner of another organisation", got, err)
		}
		org := mustOrg(t, s, got.OrgID)
		if org.Name != "Bob Babbage's organisation" || org.Plan != "team" || org.PlanStatus != perch.PlanTrialing || org.SeatCount != 1 {
			t.Fatalf("new organisation = %+v", org)
		}
		if want := clock.Now().Add(perch.TrialDays * 24 * time.Hour); org.TrialEndsAt == nil || !org.TrialEndsAt.Equal(want) {
			t.Fatalf("trial ends %v, want %v", org.TrialEndsAt, want)
		}
		if own, _ := s.Members(ctx, got.OrgID); len(own) != 1 || own[0].ID != bob.ID || !own[0].JoinedAt.Equal(clock.Now()) {
			t.Fatalf("Members(new organisation) = %+v", own)
		}

		if ids, err := s.UserTeamIDs(ctx, bob.ID); err != nil || len(ids) != 0 {
			t.Fatalf("UserTeamIDs(Bob) = %v, %v; want none", ids, err)
		}
		if team, _ := s.Team(ctx, ada.OrgID, ops.ID); team.MemberCount != 1 || team.Members[0].ID != ada.ID {
			t.Fatalf("Ops after removal = %+v", team)
		}
		list, _ := s.Members(ctx, ada.OrgID)
		if ids := memberIDs(list); !slices.Equal(ids, []string{ada.ID}) {
			t.Fatalf("Members(old organisation) = %v, want only Ada", list)
		}
		if o := mustOrg(t, s, ada.OrgID); o.SeatCount != 1 {
			t.Fatalf("old organisation has %d seats taken, want 1", o.SeatCount)
		}
	})
}

func TestRemoveMemberKeepsAnOwnerAndStaysInTheOrg(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		bob := join(t, s, ada, "Bob Babbage", "bob@example.com", perch.RoleMember)
		dora := mustCreateUser(t, s, "Dora Somerville", "dora@example.com")

		wantCode(t, s.RemoveMember(ctx, ada.OrgID, ada.ID), perch.ECONFLICT)
		if got, _ := s.User(ctx, ada.ID); got.OrgID != ada.OrgID || got.OrgRole != perch.RoleOwner {
			t.Fatalf("the refused removal moved Ada: %+v", got)
		}
		wantCode(t, s.RemoveMember(ctx, ada.OrgID, dora.ID), perch.ENOTFOUND)
		wantCode(t, s.RemoveMember(ctx, ada.OrgID, "nope"), perch.ENOTFOUND)
		if got, _ := s.User(ctx, dora.ID); got.OrgID != dora.OrgID || got.OrgRole != perch.RoleOwner {
			t.Fatalf("Dora moved: %+v", got)
		}

		if _, err := s.SetMemberRole(ctx, ada.OrgID, bob.ID, perch.RoleOwner); err != nil {
			t.Fatal(err)
		}
		if err := s.RemoveMember(ctx, ada.OrgID, ada.ID); err != nil {
			t.Fatalf("removing one of two owners: %v", err)
		}
		list, _ := s.Members(ctx, ada.OrgID)
		if ids := memberIDs(list); !slices.Equal(ids, []string{bob.ID}) {
			t.Fatalf("Members = %v, want only Bob", list)
		}
	})
}
