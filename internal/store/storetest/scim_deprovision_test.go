package storetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// orgCount is how many organisations the store has.
func orgCount(t *testing.T, s *store.Store) int {
	t.Helper()
	orgs, next, err := s.Orgs(context.Background(), "", perch.Page{Limit: 500})
	if err != nil || next != "" {
		t.Fatalf("Orgs = %d, %q, %v", len(orgs), next, err)
	}
	return len(orgs)
}

// TestSCIMDeleteDeprovisions: a SCIM deletion disables the account in its
// organisation (sessions end, API tokens are refused and answered for
// their WebSockets, sign-in is refused naming the identity provider), the
// member is gone from SCIM's view though still a member, no organisation
// is made; a refused check changes nothing.
func TestSCIMDeleteDeprovisions(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob, err := s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("bob", "bob@example.com", true))
		if err != nil {
			t.Fatal(err)
		}
		bobUser, err := s.User(ctx, bob.ID)
		if err != nil {
			t.Fatal(err)
		}
		sess := session(t, s, bobUser, "bob")
		tok, err := s.CreateAPIToken(ctx, bob.ID, "laptop", "pat_x", "hash-bob")
		if err != nil {
			t.Fatal(err)
		}
		orgs := orgCount(t, s)

		refuse := func(*store.SCIMUser) error { return perch.Errorf(perch.ECONFLICT, "stale") }
		_, err = s.DeleteSCIMUser(ctx, ada.OrgID, bob.ID, refuse)
		wantCode(t, err, perch.ECONFLICT)
		if got, err := s.SCIMUser(ctx, ada.OrgID, bob.ID); err != nil || got.Disabled {
			t.Fatalf("a refused deletion deleted: %+v, %v", got, err)
		}

		approve := func(*store.SCIMUser) error { return nil }
		c, err := s.DeleteSCIMUser(ctx, ada.OrgID, bob.ID, approve)
		if err != nil || c.Before.UserName != "bob" || c.Before.Disabled {
			t.Fatalf("deletion = %+v, %v", c, err)
		}
		same(t, c.Sessions, []string{sess})
		same(t, c.APITokens, []string{tok.ID})

		// Gone for SCIM…
		_, err = s.SCIMUser(ctx, ada.OrgID, bob.ID)
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.DeleteSCIMUser(ctx, ada.OrgID, bob.ID, approve)
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.UpdateSCIMUser(ctx, ada.OrgID, bob.ID, replace(scimWrite("bob", "bob@example.com", true)))
		wantCode(t, err, perch.ENOTFOUND)
		users, total, err := s.SCIMUsers(ctx, ada.OrgID, nil, 0, 10)
		if err != nil || total != 1 || len(users) != 1 || users[0].ID != ada.ID {
			t.Fatalf("SCIM users after the deletion: %d, %+v, %v", total, users, err)
		}
		// …still a member, disabled, in the same organisation.
		u, err := s.User(ctx, bob.ID)
		if err != nil || u.OrgID != ada.OrgID || u.OrgRole != perch.RoleMember || !u.Disabled {
			t.Fatalf("after the deletion: %+v, %v", u, err)
		}
		m, err := s.Member(ctx, ada.OrgID, bob.ID)
		if err != nil || !m.Disabled {
			t.Fatalf("the member: %+v, %v", m, err)
		}
		if n := orgCount(t, s); n != orgs {
			t.Errorf("%d organisations after the deletion, %d before", n, orgs)
		}
		if _, _, err := s.APITokenPrincipal(ctx, "hash-bob"); err == nil {
			t.Error("a deleted member's API token still works")
		}
		if _, err := s.AccessPrincipal(ctx, "access-bob"); err == nil {
			t.Error("a deleted member's session still works")
		}
		_, err = s.CreateSession(ctx, bob.ID, tokens(s, "bob-again"))
		wantCode(t, err, perch.EFORBIDDEN)
		if !strings.Contains(perch.ErrorMessage(err), "identity provider") {
			t.Errorf("the refused sign-in says %q", perch.ErrorMessage(err))
		}
	})
}

// TestSCIMRestore: a POST naming a member SCIM deleted, by userName
// (without regard to case), externalId or address, restores the same
// account in its organisation with its role; only in the organisation
// that deleted it; never over a platform admin's disable; a new address
// is unproven.
func TestSCIMRestore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		eve := mustCreateUser(t, s, "Eve", "eve@example.com")
		bob, err := s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("bob", "bob@example.com", true))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetMemberRole(ctx, ada.OrgID, bob.ID, perch.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateAPIToken(ctx, bob.ID, "laptop", "pat_x", "hash-bob"); err != nil {
			t.Fatal(err)
		}
		approve := func(*store.SCIMUser) error { return nil }
		deleteBob := func() {
			t.Helper()
			if _, err := s.DeleteSCIMUser(ctx, ada.OrgID, bob.ID, approve); err != nil {
				t.Fatal(err)
			}
		}
		restore := func(orgID string, w store.SCIMWrite) (*store.SCIMChange, error) {
			return s.RestoreSCIMUser(ctx, orgID, w, replace(w))
		}
		noneDeleted := func(err error) {
			t.Helper()
			if !errors.Is(err, store.ErrNoDeletedSCIMUser) {
				t.Fatalf("error %v, want ErrNoDeletedSCIMUser", err)
			}
		}

		_, err = restore(ada.OrgID, scimWrite("bob", "bob@example.com", true))
		noneDeleted(err) // a member not deleted is not restored (the POST is a conflict)
		deleteBob()
		orgs := orgCount(t, s)
		_, err = restore(eve.OrgID, scimWrite("bob", "bob@example.com", true))
		noneDeleted(err) // another organisation's provider

		c, err := restore(ada.OrgID, scimWrite("BOB", "bob@example.com", true))
		if err != nil || c.After.ID != bob.ID || c.After.Disabled || !c.Before.Disabled || c.After.Role != perch.RoleAdmin || c.After.UserName != "BOB" {
			t.Fatalf("restored by userName = %+v, %v", c, err)
		}
		if _, err := s.SCIMUser(ctx, ada.OrgID, bob.ID); err != nil {
			t.Fatalf("the restored member: %v", err)
		}
		if _, _, err := s.APITokenPrincipal(ctx, "hash-bob"); err != nil {
			t.Errorf("the API token of a restored member: %v", err)
		}

		// By externalId, with a new userName and address, restored inactive.
		deleteBob()
		w := scimWrite("robert", "robert@example.com", false)
		w.ExternalID = "ext-BOB" // as the last restore wrote it
		c, err = restore(ada.OrgID, w)
		if err != nil || c.After.ID != bob.ID || !c.After.Disabled || c.After.Email != "robert@example.com" || c.After.EmailVerified {
			t.Fatalf("restored by externalId = %+v, %v", c, err)
		}
		u, err := s.User(ctx, bob.ID)
		if err != nil || u.IsAdmin || u.EmailVerified || u.OrgID != ada.OrgID {
			t.Fatalf("the restored account: %+v, %v", u, err)
		}

		// By address alone.
		c, err = s.UpdateSCIMUser(ctx, ada.OrgID, bob.ID, replace(scimWrite("robert", "robert@example.com", true)))
		if err != nil || c.After.Disabled {
			t.Fatalf("reactivated = %+v, %v", c, err)
		}
		deleteBob()
		w = scimWrite("someone-else", "robert@example.com", true)
		w.ExternalID = ""
		if c, err = restore(ada.OrgID, w); err != nil || c.After.ID != bob.ID {
			t.Fatalf("restored by address = %+v, %v", c, err)
		}

		// A platform admin's disable stands: the restore is refused and the
		// deletion with it.
		deleteBob()
		if _, err := s.UpdateUserAsAdmin(ctx, bob.ID, perch.AdminUserUpdate{Disabled: ptr(true)}, nil); err != nil {
			t.Fatal(err)
		}
		_, err = restore(ada.OrgID, scimWrite("robert", "robert@example.com", true))
		wantCode(t, err, perch.ECONFLICT)
		_, err = s.SCIMUser(ctx, ada.OrgID, bob.ID)
		wantCode(t, err, perch.ENOTFOUND)
		// Enabled by the platform admin, the member is the provider's to
		// see and deprovision again.
		if _, err := s.UpdateUserAsAdmin(ctx, bob.ID, perch.AdminUserUpdate{Disabled: ptr(false)}, nil); err != nil {
			t.Fatal(err)
		}
		if got, err := s.SCIMUser(ctx, ada.OrgID, bob.ID); err != nil || got.Disabled {
			t.Fatalf("after the admin's enable: %+v, %v", got, err)
		}
		if n := orgCount(t, s); n != orgs {
			t.Errorf("%d organisations after the restores, %d before", n, orgs)
		}
	})
}

// TestRemovingADeprovisionedMemberIsRefused: an owner cannot take a member
// the identity provider deactivated or deleted out of the organisation,
// which would give them an enabled account of their own; once the provider
// restores them, they can be removed as anyone is.
func TestRemovingADeprovisionedMemberIsRefused(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		off, err := s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("bob", "bob@example.com", false))
		if err != nil {
			t.Fatal(err)
		}
		gone, err := s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("cy", "cy@example.com", true))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteSCIMUser(ctx, ada.OrgID, gone.ID, func(*store.SCIMUser) error { return nil }); err != nil {
			t.Fatal(err)
		}
		orgs := orgCount(t, s)
		for _, id := range []string{off.ID, gone.ID} {
			wantCode(t, s.RemoveMember(ctx, ada.OrgID, id), perch.ECONFLICT)
			if u, err := s.User(ctx, id); err != nil || u.OrgID != ada.OrgID || !u.Disabled {
				t.Fatalf("after a refused removal: %+v, %v", u, err)
			}
		}
		if n := orgCount(t, s); n != orgs {
			t.Fatalf("organisations: %d, want %d", n, orgs)
		}
		if _, err := s.UpdateSCIMUser(ctx, ada.OrgID, off.ID, func(*store.SCIMUser) (store.SCIMWrite, error) {
			return scimWrite("bob", "bob@example.com", true), nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.RemoveMember(ctx, ada.OrgID, off.ID); err != nil {
			t.Fatalf("removing a restored member: %v", err)
		}
	})
}
