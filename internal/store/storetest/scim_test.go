package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func scimWrite(userName, email string, active bool) store.SCIMWrite {
	return store.SCIMWrite{Email: email, Name: "Name of " + userName, UserName: userName, ExternalID: "ext-" + userName,
		Attributes: `{"name":{"givenName":"G"}}`, Active: active}
}

// replace is an UpdateSCIMUser change that writes w whatever the member is.
func replace(w store.SCIMWrite) func(*store.SCIMUser) (store.SCIMWrite, error) {
	return func(*store.SCIMUser) (store.SCIMWrite, error) { return w, nil }
}

// TestSCIMUsersAreTheOrganisationsMembers: an organisation's SCIM users
// are all its members, those its identity provider made and those it did
// not (their address is their userName), filtered and paged.
func TestSCIMUsersAreTheOrganisationsMembers(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "Ada@Example.com")
		mustCreateUser(t, s, "Eve", "eve@example.com") // another organisation
		if _, _, err := s.UpdateOrgAsAdmin(ctx, ada.OrgID, perch.AdminOrgUpdate{Plan: ptr("enterprise")}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		bob, err := s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("Bob.Okta", "bob@example.com", true))
		if err != nil {
			t.Fatal(err)
		}
		if !bob.Linked || bob.Role != perch.RoleMember || bob.UserName != "Bob.Okta" || bob.ExternalID != "ext-Bob.Okta" || bob.Disabled {
			t.Fatalf("created %+v", bob)
		}
		clock.Advance(time.Second)
		cy, err := s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("cy@example.com", "cy@example.com", false))
		if err != nil {
			t.Fatal(err)
		}
		if !cy.Disabled || cy.DisabledBy != store.DisabledBySCIM {
			t.Fatalf("created inactive: %+v", cy)
		}

		list := func(conds ...store.SCIMCondition) []string {
			t.Helper()
			users, total, err := s.SCIMUsers(ctx, ada.OrgID, conds, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			if total != len(users) {
				t.Fatalf("total %d for %d users", total, len(users))
			}
			var names []string
			for _, u := range users {
				names = append(names, u.UserName)
			}
			return names
		}
		same(t, list(), []string{"Ada@Example.com", "Bob.Okta", "cy@example.com"})
		same(t, list(store.SCIMCondition{Field: store.SCIMUserName, String: "ada@example.COM"}), []string{"Ada@Example.com"})
		same(t, list(store.SCIMCondition{Field: store.SCIMUserName, String: "bob.okta"}), []string{"Bob.Okta"})
		same(t, list(store.SCIMCondition{Field: store.SCIMExternalID, String: "ext-Bob.Okta"}), []string{"Bob.Okta"})
		same(t, list(store.SCIMCondition{Field: store.SCIMExternalID, String: "ext-bob.okta"}), nil) // externalId is exact
		same(t, list(store.SCIMCondition{Field: store.SCIMEmail, String: "BOB@example.com"}), []string{"Bob.Okta"})
		same(t, list(store.SCIMCondition{Field: store.SCIMActive, Bool: false}), []string{"cy@example.com"})
		same(t, list(store.SCIMCondition{Field: store.SCIMActive, Bool: true}, store.SCIMCondition{Field: store.SCIMEmail, String: "cy@example.com"}), nil)
		same(t, list(store.SCIMCondition{Field: store.SCIMUserName, String: "eve@example.com"}), nil)

		page, total, err := s.SCIMUsers(ctx, ada.OrgID, nil, 1, 1)
		if err != nil || total != 3 || len(page) != 1 || page[0].UserName != "Bob.Okta" {
			t.Fatalf("second page of one = %v, %d, %v", page, total, err)
		}
		page, total, err = s.SCIMUsers(ctx, ada.OrgID, nil, 0, 0)
		if err != nil || total != 3 || len(page) != 0 {
			t.Fatalf("a count of 0 = %v, %d, %v", page, total, err)
		}
		_, err = s.SCIMUser(ctx, ada.OrgID, ada.ID)
		wantCode(t, err, "")
		_, err = s.SCIMUser(ctx, "another-org", bob.ID)
		wantCode(t, err, perch.ENOTFOUND)
	})
}

func same(tb testing.TB, got, want []string) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			tb.Fatalf("got %q, want %q", got, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestSCIMUniqueness: an address has one account; a userName one member
// of an organisation, without regard to case; nothing is written when
// either is taken.
func TestSCIMUniqueness(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		mustCreateUser(t, s, "Eve", "eve@example.com")
		if _, _, err := s.UpdateOrgAsAdmin(ctx, ada.OrgID, perch.AdminOrgUpdate{Plan: ptr("enterprise")}); err != nil {
			t.Fatal(err)
		}
		taken := func(err error, attr string) {
			t.Helper()
			wantCode(t, err, perch.ECONFLICT)
			if pe, ok := err.(*perch.Error); !ok || pe.Fields[attr] == "" {
				t.Fatalf("%v does not name %s", err, attr)
			}
		}
		_, err := s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("ada", "ADA@example.com", true))
		taken(err, "emails")
		_, err = s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("eve", "eve@example.com", true))
		taken(err, "emails")
		_, err = s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("ADA@example.com", "other@example.com", true))
		taken(err, "userName")
		bob, err := s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("bob", "bob@example.com", true))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("BOB", "bob2@example.com", true))
		taken(err, "userName")
		_, err = s.UpdateSCIMUser(ctx, ada.OrgID, bob.ID, replace(scimWrite("bob", "eve@example.com", true)))
		taken(err, "emails")
		_, err = s.UpdateSCIMUser(ctx, ada.OrgID, bob.ID, replace(scimWrite("Ada@example.com", "bob@example.com", true)))
		taken(err, "userName")
		users, total, err := s.SCIMUsers(ctx, ada.OrgID, nil, 0, 10)
		if err != nil || total != 2 || users[1].Email != "bob@example.com" || users[1].UserName != "bob" {
			t.Fatalf("after refusals: %d users, %+v, %v", total, users, err)
		}
	})
}

// TestSCIMDeactivation: deactivating ends every session in the same
// transaction and names the sessions and API tokens to cut; the account is
// refused everywhere until reactivated, and an identity provider cannot
// lift a platform admin's disable.
func TestSCIMDeactivation(t *testing.T) {
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

		c, err := s.UpdateSCIMUser(ctx, ada.OrgID, bob.ID, replace(scimWrite("bob", "bob@example.com", false)))
		if err != nil {
			t.Fatal(err)
		}
		if c.Before.Disabled || !c.After.Disabled || c.After.DisabledBy != store.DisabledBySCIM {
			t.Fatalf("before %+v after %+v", c.Before, c.After)
		}
		same(t, c.Sessions, []string{sess})
		same(t, c.APITokens, []string{tok.ID})
		if _, _, err := s.APITokenPrincipal(ctx, "hash-bob"); err == nil {
			t.Error("a deactivated member's API token still works")
		}
		if _, err := s.AccessPrincipal(ctx, "access-bob"); err == nil {
			t.Error("a deactivated member's session still works")
		}

		c, err = s.UpdateSCIMUser(ctx, ada.OrgID, bob.ID, replace(scimWrite("bob", "bob@example.com", true)))
		if err != nil || c.After.Disabled || len(c.Sessions) != 0 {
			t.Fatalf("reactivation = %+v, %v", c, err)
		}
		if _, _, err := s.APITokenPrincipal(ctx, "hash-bob"); err != nil {
			t.Errorf("the API token of a reactivated member: %v", err)
		}

		// A platform admin's disable stands against the identity provider.
		if _, err := s.UpdateUserAsAdmin(ctx, bob.ID, perch.AdminUserUpdate{Disabled: ptr(true)}, nil); err != nil {
			t.Fatal(err)
		}
		_, err = s.UpdateSCIMUser(ctx, ada.OrgID, bob.ID, replace(scimWrite("bob", "bob@example.com", true)))
		wantCode(t, err, perch.ECONFLICT)
		c, err = s.UpdateSCIMUser(ctx, ada.OrgID, bob.ID, replace(scimWrite("bob.renamed", "bob@example.com", false)))
		if err != nil || c.After.DisabledBy != "admin" || c.After.UserName != "bob.renamed" {
			t.Fatalf("a change that keeps the account inactive = %+v, %v", c, err)
		}
	})
}

// TestSCIMRespectsSeats: an identity provider cannot add beyond the plan.
func TestSCIMRespectsSeats(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		if _, _, err := s.UpdateOrgAsAdmin(ctx, ada.OrgID, perch.AdminOrgUpdate{Plan: ptr("solo")}); err != nil {
			t.Fatal(err)
		}
		_, err := s.CreateSCIMUser(ctx, ada.OrgID, scimWrite("bob", "bob@example.com", true))
		wantCode(t, err, perch.ECONFLICT)
		if pe, ok := err.(*perch.Error); ok && len(pe.Fields) > 0 {
			t.Errorf("a full plan reads as a uniqueness conflict: %v", pe.Fields)
		}
	})
}
