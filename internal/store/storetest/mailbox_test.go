package storetest_test

import (
	"context"
	"slices"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// A mailbox is proven only by a round trip of Perch's own; these tests
// hold every path that makes or changes an account to that.

// proven reports whether the account's mailbox is proven, as the store
// reads it afresh.
func proven(tb testing.TB, s *store.Store, id string) bool {
	tb.Helper()
	u, err := s.User(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return u.EmailVerified
}

// TestSCIMNeverProvesAMailbox: an account the identity provider makes is
// its assertion, a write to an account proves nothing, and a new address
// loses whatever proof the old one had.
func TestSCIMNeverProvesAMailbox(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob, err := s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("bob", "bob@example.com", true))
		if err != nil {
			t.Fatal(err)
		}
		if proven(t, s, bob.ID) {
			t.Fatal("a SCIM-made account's mailbox is proven")
		}
		if au, err := s.AdminUser(ctx, bob.ID); err != nil || au.EmailAssertedBy != ada.OrgID {
			t.Fatalf("AdminUser = %+v, %v; want the address asserted by %s", au, err, ada.OrgID)
		}

		// Ada's own account: a SCIM write of her names proves nothing (it
		// used to mark every written address verified).
		if _, err := s.UpdateSCIMUser(ctx, ada.OrgID, ada.ID, replace(scimWrite("ada", "ada@example.com", true))); err != nil {
			t.Fatal(err)
		}
		if proven(t, s, ada.ID) {
			t.Fatal("a SCIM write proved Ada's mailbox")
		}
		if au, _ := s.AdminUser(ctx, ada.ID); au.EmailAssertedBy != "" {
			t.Fatalf("Ada's unchanged address became an assertion: %+v", au)
		}

		// Ada proves her mailbox, then the provider moves her to a new
		// address: the proof stays with the old one.
		emailToken(t, s, ada, perch.EmailVerify, "ada@example.com", "verify-ada", perch.VerifyEmailTTL)
		if _, err := s.VerifyEmail(ctx, "verify-ada"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateSCIMUser(ctx, ada.OrgID, ada.ID, replace(scimWrite("ada", "ADA@example.com", true))); err != nil {
			t.Fatal(err)
		}
		if !proven(t, s, ada.ID) {
			t.Fatal("the same address in another case lost its proof")
		}
		if _, err := s.UpdateSCIMUser(ctx, ada.OrgID, ada.ID, replace(scimWrite("ada", "boss@example.com", true))); err != nil {
			t.Fatal(err)
		}
		if au, _ := s.AdminUser(ctx, ada.ID); au.EmailVerified || au.EmailAssertedBy != ada.OrgID || au.Email != "boss@example.com" {
			t.Fatalf("after the provider moved Ada: %+v; want boss@example.com asserted by %s, not proven", au, ada.OrgID)
		}
	})
}

// TestRoundTripsProveMailboxes: the verify link, a password-reset link and
// the mailed invitation link prove the mailbox they reached.
func TestRoundTripsProveMailboxes(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		emailToken(t, s, ada, perch.EmailPasswordReset, "ada@example.com", "reset-ada", perch.PasswordResetTTL)
		if _, _, err := s.ResetPassword(ctx, "reset-ada", "new-hash"); err != nil {
			t.Fatal(err)
		}
		if !proven(t, s, ada.ID) {
			t.Fatal("a password-reset link that came back did not prove the mailbox")
		}

		// Bob has an account; Ada invites him. The link she was shown moves
		// him but proves nothing; Carol's mailed link does.
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")
		invite(t, s, ada, "bob@example.com", perch.RoleMember, "inv-bob")
		if _, err := s.AcceptInvitation(ctx, "inv-bob", bob); err != nil {
			t.Fatal(err)
		}
		if proven(t, s, bob.ID) {
			t.Fatal("the link the inviter was shown proved the invitee's mailbox")
		}
		carol := mustCreateUser(t, s, "Carol", "carol@example.com")
		invite(t, s, ada, "carol@example.com", perch.RoleMember, "inv-carol")
		if _, err := s.AcceptInvitation(ctx, "mail-inv-carol", carol); err != nil {
			t.Fatal(err)
		}
		if !proven(t, s, carol.ID) {
			t.Fatal("the mailed invitation link did not prove the mailbox")
		}
	})
}

// TestSyncListedAdminsAnswersEachChangeOnce: an account whose listed
// address is proven gains the mark once, whoever syncs and however often;
// it loses it once when the address leaves the list or stops being proven.
func TestSyncListedAdminsAnswersEachChangeOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		ids := func(us []*perch.User) []string {
			out := []string{}
			for _, u := range us {
				out = append(out, u.Email)
			}
			slices.Sort(out)
			return out
		}
		sync := func(listed []string, userID string, wantGranted, wantWithdrawn []string) {
			t.Helper()
			granted, withdrawn, err := s.SyncListedAdmins(ctx, listed, userID)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := ids(granted), ids(withdrawn); !slices.Equal(g, wantGranted) || !slices.Equal(w, wantWithdrawn) {
				t.Fatalf("SyncListedAdmins(%v, %q) = granted %v, withdrawn %v; want %v and %v", listed, userID, g, w, wantGranted, wantWithdrawn)
			}
		}
		none := []string{}
		listed := []string{"root@example.com", "boss@example.com"}
		root := mustCreateUser(t, s, "Root", "Root@Example.com")
		boss := mustCreateUser(t, s, "Boss", "boss@example.com")
		mustCreateUser(t, s, "Eve", "eve@example.com")
		sync(listed, "", none, none) // listed, but nobody has proven a mailbox

		emailToken(t, s, root, perch.EmailVerify, "Root@Example.com", "verify-root", perch.VerifyEmailTTL)
		if _, err := s.VerifyEmail(ctx, "verify-root"); err != nil {
			t.Fatal(err)
		}
		sync(listed, boss.ID, none, none) // another account's sync leaves root alone
		sync(listed, root.ID, []string{"Root@Example.com"}, none)
		sync(listed, "", none, none) // once
		emailToken(t, s, boss, perch.EmailVerify, "boss@example.com", "verify-boss", perch.VerifyEmailTTL)
		if _, err := s.VerifyEmail(ctx, "verify-boss"); err != nil {
			t.Fatal(err)
		}
		sync(listed, "", []string{"boss@example.com"}, none)

		// The operator takes boss off the list; then the list goes.
		sync([]string{"root@example.com"}, "", none, []string{"boss@example.com"})
		sync(nil, "", none, []string{"Root@Example.com"})
		sync(nil, "", none, none)
	})
}
