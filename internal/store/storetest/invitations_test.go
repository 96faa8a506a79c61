package storetest_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// invitationStatus returns the status Invitations shows for the invitation
// with the given ID.
func invitationStatus(tb testing.TB, s *store.Store, orgID, id string) string {
	tb.Helper()
	list, err := s.Invitations(context.Background(), orgID)
	if err != nil {
		tb.Fatal(err)
	}
	for _, inv := range list {
		if inv.ID == id {
			return inv.Status
		}
	}
	tb.Fatalf("invitation %s not listed", id)
	return ""
}

func TestInvitationsNewestFirstWithStatusAndInviter(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		dora := mustCreateUser(t, s, "Dora Somerville", "dora@example.com")

		bob := invite(t, s, ada, "  Bob@Example.com ", perch.RoleMember, "inv-bob")
		wantBy := &perch.TeamRef{ID: ada.ID, Name: "Ada Lovelace"}
		if bob.Email != "Bob@Example.com" || bob.Role != perch.RoleMember || bob.Status != perch.InvitationPending || bob.OrgID != ada.OrgID ||
			!reflect.DeepEqual(bob.InvitedBy, wantBy) || !bob.CreatedAt.Equal(clock.Now()) ||
			!bob.ExpiresAt.Equal(clock.Now().Add(perch.InvitationTTL)) || bob.AcceptedAt != nil {
			t.Fatalf("CreateInvitation = %+v", bob)
		}
		clock.Advance(time.Hour)
		carol := invite(t, s, ada, "carol@example.com", perch.RoleAdmin, "inv-carol")
		clock.Advance(time.Hour)
		erin := invite(t, s, ada, "erin@example.com", perch.RoleMember, "inv-erin")
		invite(t, s, dora, "frank@example.com", perch.RoleMember, "inv-frank")

		list, err := s.Invitations(ctx, ada.OrgID)
		if err != nil || len(list) != 3 {
			t.Fatalf("Invitations = %v, %v", list, err)
		}
		for i, want := range []*perch.Invitation{erin, carol, bob} {
			if !reflect.DeepEqual(list[i], want) {
				t.Errorf("invitation %d = %+v, want %+v", i, list[i], want)
			}
		}

		clock.Advance(time.Hour)
		if _, err := s.CreateInvitedUser(ctx, "Bob Babbage", "bob@example.com", "h", "inv-bob"); err != nil {
			t.Fatal(err)
		}
		acceptedAt := clock.Now()
		if err := s.RevokeInvitation(ctx, ada.OrgID, erin.ID); err != nil {
			t.Fatal(err)
		}
		status := func(wantErin, wantCarol, wantBob string) {
			t.Helper()
			list, _ := s.Invitations(ctx, ada.OrgID)
			got := []string{list[0].Status, list[1].Status, list[2].Status}
			if want := []string{wantErin, wantCarol, wantBob}; !reflect.DeepEqual(got, want) {
				t.Fatalf("statuses = %v, want %v", got, want)
			}
			if at := list[2].AcceptedAt; at == nil || !at.Equal(acceptedAt) {
				t.Fatalf("Bob's invitation accepted at %v, want %v", at, acceptedAt)
			}
		}
		status(perch.InvitationRevoked, perch.InvitationPending, perch.InvitationAccepted)
		clock.Advance(perch.InvitationTTL - 2*time.Hour) // Carol's invitation ends now
		status(perch.InvitationRevoked, perch.InvitationExpired, perch.InvitationAccepted)

		if others, _ := s.Invitations(ctx, dora.OrgID); len(others) != 1 || others[0].Email != "frank@example.com" {
			t.Fatalf("Invitations(Dora's org) = %v", others)
		}
	})
}

func TestInvitingAMemberOrAnInviteeAgainIsConflict(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		join(t, s, ada, "Bob Babbage", "bob@example.com", perch.RoleMember)
		dora := mustCreateUser(t, s, "Dora Somerville", "dora@example.com")

		for _, email := range []string{"BOB@example.COM", " Ada@Example.com "} {
			_, err := s.CreateInvitation(ctx, ada.OrgID, ada.ID, email, perch.RoleMember, "inv-"+email, "mail-inv-"+email)
			wantCode(t, err, perch.ECONFLICT)
		}

		first := invite(t, s, ada, "carol@example.com", perch.RoleMember, "inv-carol-1")
		_, err := s.CreateInvitation(ctx, ada.OrgID, ada.ID, "Carol@Example.COM", perch.RoleAdmin, "inv-carol-2", "mail-inv-carol-2")
		wantCode(t, err, perch.ECONFLICT)
		// Another organisation may invite her at the same time.
		invite(t, s, dora, "carol@example.com", perch.RoleMember, "inv-carol-dora")

		clock.Advance(perch.InvitationTTL)
		second := invite(t, s, ada, "Carol@Example.COM", perch.RoleAdmin, "inv-carol-2")
		if got := invitationStatus(t, s, ada.OrgID, first.ID); got != perch.InvitationExpired {
			t.Fatalf("first invitation is %s", got)
		}
		if got := invitationStatus(t, s, ada.OrgID, second.ID); got != perch.InvitationPending {
			t.Fatalf("second invitation is %s", got)
		}
	})
}

func TestSeatCapCountsMembersAndPendingInvitations(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		join(t, s, ada, "Bob Babbage", "bob@example.com", perch.RoleMember)
		if o := mustOrg(t, s, ada.OrgID); o.Plan != "team" || o.MaxSeats != 25 {
			t.Fatalf("org = %+v; want the team plan's 25 seats", o)
		}
		var invs []*perch.Invitation
		for i := 3; i <= 25; i++ { // seats 1 and 2 are Ada and Bob
			email := fmt.Sprintf("user%d@example.com", i)
			invs = append(invs, invite(t, s, ada, email, perch.RoleMember, "inv-"+email))
		}
		if o := mustOrg(t, s, ada.OrgID); o.SeatCount != 2 || o.PendingInvitations != 23 {
			t.Fatalf("seats = %d members + %d pending", o.SeatCount, o.PendingInvitations)
		}
		_, err := s.CreateInvitation(ctx, ada.OrgID, ada.ID, "user26@example.com", perch.RoleMember, "inv-26", "mail-inv-26")
		wantCode(t, err, perch.ECONFLICT)

		if err := s.RevokeInvitation(ctx, ada.OrgID, invs[0].ID); err != nil {
			t.Fatal(err)
		}
		invite(t, s, ada, "user26@example.com", perch.RoleMember, "inv-26")
		_, err = s.CreateInvitation(ctx, ada.OrgID, ada.ID, "user27@example.com", perch.RoleMember, "inv-27", "mail-inv-27")
		wantCode(t, err, perch.ECONFLICT)
	})
}

func TestRevokeInvitation(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		dora := mustCreateUser(t, s, "Dora Somerville", "dora@example.com")
		carol := invite(t, s, ada, "carol@example.com", perch.RoleMember, "inv-carol")
		frank := invite(t, s, dora, "frank@example.com", perch.RoleMember, "inv-frank")
		accepted := invite(t, s, ada, "bob@example.com", perch.RoleMember, "inv-bob")
		if _, err := s.CreateInvitedUser(ctx, "Bob Babbage", "bob@example.com", "h", "inv-bob"); err != nil {
			t.Fatal(err)
		}

		if err := s.RevokeInvitation(ctx, ada.OrgID, carol.ID); err != nil {
			t.Fatal(err)
		}
		if got := invitationStatus(t, s, ada.OrgID, carol.ID); got != perch.InvitationRevoked {
			t.Fatalf("status = %s after revoking", got)
		}
		wantCode(t, s.RevokeInvitation(ctx, ada.OrgID, carol.ID), perch.ECONFLICT)
		wantCode(t, s.RevokeInvitation(ctx, ada.OrgID, accepted.ID), perch.ECONFLICT)
		if got := invitationStatus(t, s, ada.OrgID, accepted.ID); got != perch.InvitationAccepted {
			t.Fatalf("the refused revocation changed an accepted invitation to %s", got)
		}
		wantCode(t, s.RevokeInvitation(ctx, ada.OrgID, frank.ID), perch.ENOTFOUND)
		wantCode(t, s.RevokeInvitation(ctx, ada.OrgID, "nope"), perch.ENOTFOUND)
		if got := invitationStatus(t, s, dora.OrgID, frank.ID); got != perch.InvitationPending {
			t.Fatalf("another organisation's invitation is %s", got)
		}
	})
}

func TestAcceptInvitationMovesTheUser(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob Babbage", "bob@example.com") // the lone owner of his own organisation
		mustTeam(t, s, bob.OrgID, "Engines", bob)
		inv := invite(t, s, ada, "BOB@example.com", perch.RoleAdmin, "inv-bob")
		clock.Advance(time.Hour)

		org, err := s.AcceptInvitation(ctx, "inv-bob", bob)
		if err != nil {
			t.Fatal(err)
		}
		if org.ID != ada.OrgID || org.SeatCount != 2 || org.PendingInvitations != 0 {
			t.Fatalf("AcceptInvitation = %+v; want Ada's organisation, two members", org)
		}
		got, _ := s.User(ctx, bob.ID)
		if got.OrgID != ada.OrgID || got.OrgRole != perch.RoleAdmin {
			t.Fatalf("Bob after accepting = %+v", got)
		}
		members, _ := s.Members(ctx, ada.OrgID)
		if len(members) != 2 || members[1].ID != bob.ID || members[1].Role != perch.RoleAdmin || !members[1].JoinedAt.Equal(clock.Now()) {
			t.Fatalf("Members = %+v", members)
		}
		if ids, _ := s.UserTeamIDs(ctx, bob.ID); len(ids) != 0 {
			t.Fatalf("Bob kept the teams of the organisation he left: %v", ids)
		}
		list, _ := s.Invitations(ctx, ada.OrgID)
		if list[0].ID != inv.ID || list[0].Status != perch.InvitationAccepted || list[0].AcceptedAt == nil || !list[0].AcceptedAt.Equal(clock.Now()) {
			t.Fatalf("invitation after accepting = %+v", list[0])
		}

		_, err = s.AcceptInvitation(ctx, "inv-bob", got) // a used link
		wantCode(t, err, perch.EBADREQUEST)
	})
}

func TestAcceptInvitationRefusesDeadOrForeignLinks(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob Babbage", "bob@example.com")

		revoked := invite(t, s, ada, "bob@example.com", perch.RoleMember, "inv-revoked")
		if err := s.RevokeInvitation(ctx, ada.OrgID, revoked.ID); err != nil {
			t.Fatal(err)
		}
		invite(t, s, ada, "bob@example.com", perch.RoleMember, "inv-expired")
		clock.Advance(perch.InvitationTTL)
		invite(t, s, ada, "carol@example.com", perch.RoleMember, "inv-carol")

		for hash, code := range map[string]string{
			"inv-revoked": perch.EBADREQUEST,
			"inv-expired": perch.EBADREQUEST,
			"inv-unknown": perch.EBADREQUEST,
			"inv-carol":   perch.EFORBIDDEN, // sent to somebody else
		} {
			_, err := s.AcceptInvitation(ctx, hash, bob)
			wantCode(t, err, code)
		}
		if got, _ := s.User(ctx, bob.ID); got.OrgID != bob.OrgID || got.OrgRole != perch.RoleOwner {
			t.Fatalf("Bob moved: %+v", got)
		}
		if o := mustOrg(t, s, ada.OrgID); o.SeatCount != 1 || o.PendingInvitations != 1 {
			t.Fatalf("Ada's organisation = %+v; want Ada alone and Carol's invitation pending", o)
		}
	})
}

func TestAcceptInvitationWhenAlreadyAMember(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		bob := join(t, s, ada, "Bob Babbage", "bob@example.com", perch.RoleMember)
		// An invitation to an address that is not a member yet, which then
		// becomes Bob's.
		inv := invite(t, s, ada, "robert@example.com", perch.RoleAdmin, "inv-robert")
		expires := s.Now().Add(perch.VerifyEmailTTL)
		if err := s.CreateEmailToken(ctx, bob.ID, perch.EmailChange, "robert@example.com", "change-bob", expires); err != nil {
			t.Fatal(err)
		}
		robert, err := s.VerifyEmail(ctx, "change-bob")
		if err != nil || robert.Email != "robert@example.com" {
			t.Fatalf("VerifyEmail = %+v, %v", robert, err)
		}

		_, err = s.AcceptInvitation(ctx, "inv-robert", robert)
		wantCode(t, err, perch.ECONFLICT)
		if got := memberRole(t, s, ada.OrgID, bob.ID); got != perch.RoleMember {
			t.Fatalf("Bob's role = %s after the refusal", got)
		}
		if got := invitationStatus(t, s, ada.OrgID, inv.ID); got != perch.InvitationPending {
			t.Fatalf("the refused invitation is %s", got)
		}
	})
}

func TestOnlyOwnerWithMembersCannotAccept(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob Babbage", "bob@example.com")
		carol := join(t, s, bob, "Carol Herschel", "carol@example.com", perch.RoleAdmin)
		inv := invite(t, s, ada, "bob@example.com", perch.RoleMember, "inv-bob")

		_, err := s.AcceptInvitation(ctx, "inv-bob", bob)
		wantCode(t, err, perch.ECONFLICT)
		if got, _ := s.User(ctx, bob.ID); got.OrgID != bob.OrgID || got.OrgRole != perch.RoleOwner {
			t.Fatalf("Bob after the refusal = %+v", got)
		}
		if got := invitationStatus(t, s, ada.OrgID, inv.ID); got != perch.InvitationPending {
			t.Fatalf("the refused invitation is %s", got)
		}

		// Once Carol is an owner too, Bob may go.
		if _, err := s.SetMemberRole(ctx, bob.OrgID, carol.ID, perch.RoleOwner); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AcceptInvitation(ctx, "inv-bob", bob); err != nil {
			t.Fatalf("AcceptInvitation with another owner left behind: %v", err)
		}
		left, _ := s.Members(ctx, bob.OrgID)
		if ids := memberIDs(left); len(ids) != 1 || ids[0] != carol.ID {
			t.Fatalf("Bob's old organisation = %v, want only Carol", left)
		}
	})
}

func TestCreateInvitedUser(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		inv := invite(t, s, ada, "Bob@Example.com", perch.RoleAdmin, "inv-bob")
		invite(t, s, ada, "carol@example.com", perch.RoleMember, "inv-carol")

		// Bob signs up with the link Ada was shown: he joins, but it proves
		// nothing about his mailbox.
		u, err := s.CreateInvitedUser(ctx, "  Bob Babbage ", " bob@example.com ", "bob-hash", "inv-bob")
		if err != nil {
			t.Fatal(err)
		}
		if u.Name != "Bob Babbage" || u.Email != "bob@example.com" || u.EmailVerified || u.OrgID != ada.OrgID ||
			u.OrgRole != perch.RoleAdmin || u.IsAdmin {
			t.Fatalf("CreateInvitedUser = %+v", u)
		}
		if got, err := s.User(ctx, u.ID); err != nil || *got != *u {
			t.Fatalf("User() = %+v, %v; want %+v", got, err, u)
		}
		if got, hash, err := s.UserCredentials(ctx, "BOB@example.com"); err != nil || got.ID != u.ID || hash != "bob-hash" {
			t.Fatalf("UserCredentials = %+v, %q, %v", got, hash, err)
		}
		if got := invitationStatus(t, s, ada.OrgID, inv.ID); got != perch.InvitationAccepted {
			t.Fatalf("invitation is %s", got)
		}

		_, err = s.CreateInvitedUser(ctx, "Bob Again", "bob@example.com", "h", "inv-bob")
		wantCode(t, err, perch.EBADREQUEST)
		_, err = s.CreateInvitedUser(ctx, "Bob Again", "bob@example.com", "h", "mail-inv-bob") // the other link of the same invitation
		wantCode(t, err, perch.EBADREQUEST)

		_, err = s.CreateInvitedUser(ctx, "Mallory", "mallory@example.com", "h", "inv-carol")
		wantCode(t, err, perch.EFORBIDDEN)
		_, _, err = s.UserCredentials(ctx, "mallory@example.com")
		wantCode(t, err, perch.ENOTFOUND)

		// Carol signs up with the link only mailed to her: her mailbox is proven.
		carol, err := s.CreateInvitedUser(ctx, "Carol", "carol@example.com", "carol-hash", "mail-inv-carol")
		if err != nil || !carol.EmailVerified || carol.OrgID != ada.OrgID {
			t.Fatalf("CreateInvitedUser through the mailed link = %+v, %v", carol, err)
		}
		if got, err := s.User(ctx, carol.ID); err != nil || !got.EmailVerified {
			t.Fatalf("User() = %+v, %v; want the mailbox proven", got, err)
		}
	})
}

func TestCreateInvitedUserWithARegisteredAddressChangesNothing(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		dora := mustCreateUser(t, s, "Dora Somerville", "dora@example.com")
		inv := invite(t, s, ada, "dora@example.com", perch.RoleMember, "inv-dora")

		_, err := s.CreateInvitedUser(ctx, "Dora Again", "DORA@example.com", "other-hash", "inv-dora")
		wantCode(t, err, perch.ECONFLICT)
		if got := invitationStatus(t, s, ada.OrgID, inv.ID); got != perch.InvitationPending {
			t.Fatalf("the invitation is %s; the failed sign-up must roll back", got)
		}
		if o := mustOrg(t, s, ada.OrgID); o.SeatCount != 1 || o.PendingInvitations != 1 {
			t.Fatalf("Ada's organisation = %+v", o)
		}
		if got, hash, err := s.UserCredentials(ctx, "dora@example.com"); err != nil || got.ID != dora.ID || got.OrgID != dora.OrgID || hash != "hash-of-dora@example.com" {
			t.Fatalf("UserCredentials(Dora) = %+v, %q, %v", got, hash, err)
		}
		// Signed in, Dora can still accept it.
		if org, err := s.AcceptInvitation(ctx, "inv-dora", dora); err != nil || org.ID != ada.OrgID {
			t.Fatalf("AcceptInvitation = %+v, %v", org, err)
		}
	})
}

// TestInvitationPreviewOnlyForALiveLink: either link of a pending,
// unexpired invitation shows the organisation, the inviter, the address and
// the role; an unknown, used, revoked or expired link shows nothing, and
// says the same for each.
func TestInvitationPreviewOnlyForALiveLink(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		org := mustOrg(t, s, ada.OrgID)
		bob := invite(t, s, ada, "bob@example.com", perch.RoleAdmin, "inv-bob")

		want := &perch.InvitationPreview{OrgName: org.Name, InvitedBy: "Ada Lovelace", Email: "bob@example.com", Role: perch.RoleAdmin, ExpiresAt: bob.ExpiresAt}
		for _, hash := range []string{"inv-bob", "mail-inv-bob"} {
			got, err := s.InvitationPreview(ctx, hash)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("InvitationPreview(%s) = %+v, %v; want %+v", hash, got, err, want)
			}
		}

		dead := func(what, hash string) {
			t.Helper()
			got, err := s.InvitationPreview(ctx, hash)
			if got != nil || perch.ErrorCode(err) != perch.EBADREQUEST || perch.ErrorMessage(err) != "This invitation link is invalid, expired or already used." {
				t.Errorf("%s: InvitationPreview = %+v, %v; want the one bad-link error", what, got, err)
			}
		}
		dead("an unknown link", "inv-nobody")
		carol := invite(t, s, ada, "carol@example.com", perch.RoleMember, "inv-carol")
		if err := s.RevokeInvitation(ctx, ada.OrgID, carol.ID); err != nil {
			t.Fatal(err)
		}
		dead("a revoked invitation", "inv-carol")
		if _, err := s.CreateInvitedUser(ctx, "Bob Babbage", "bob@example.com", "h", "mail-inv-bob"); err != nil {
			t.Fatal(err)
		}
		dead("an accepted invitation", "inv-bob")
		invite(t, s, ada, "dora@example.com", perch.RoleMember, "inv-dora")
		clock.Advance(perch.InvitationTTL)
		dead("an expired invitation", "mail-inv-dora")
	})
}
