package storetest_test

import (
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// A provider's account links to one Perch account, and a Perch account to
// one account per provider; the link finds the account.
func TestIdentitiesLink(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := t.Context()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")

		_, err := s.IdentityUser(ctx, perch.ProviderGitHub, "1")
		wantCode(t, err, perch.ENOTFOUND)
		got, err := s.LinkIdentity(ctx, ada.ID, perch.Identity{Provider: perch.ProviderGitHub, Subject: "1", Email: "ada@users.example"})
		if err != nil {
			t.Fatal(err)
		}
		want := &perch.Identity{UserID: ada.ID, Provider: perch.ProviderGitHub, Subject: "1", Email: "ada@users.example", CreatedAt: clock.Now()}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("LinkIdentity = %+v, want %+v", got, want)
		}
		u, err := s.IdentityUser(ctx, perch.ProviderGitHub, "1")
		if err != nil || u.ID != ada.ID {
			t.Fatalf("IdentityUser = %v, %v", u, err)
		}
		// The same subject at the other provider is another account.
		_, err = s.IdentityUser(ctx, perch.ProviderGoogle, "1")
		wantCode(t, err, perch.ENOTFOUND)

		// Again: nothing changes.
		clock.Advance(time.Minute)
		again, err := s.LinkIdentity(ctx, ada.ID, perch.Identity{Provider: perch.ProviderGitHub, Subject: "1", Email: "changed@example.com"})
		if err != nil || !reflect.DeepEqual(again, want) {
			t.Fatalf("LinkIdentity again = %+v, %v", again, err)
		}
		_, err = s.LinkIdentity(ctx, bob.ID, perch.Identity{Provider: perch.ProviderGitHub, Subject: "1"})
		wantCode(t, err, perch.ECONFLICT)
		_, err = s.LinkIdentity(ctx, ada.ID, perch.Identity{Provider: perch.ProviderGitHub, Subject: "2"})
		wantCode(t, err, perch.ECONFLICT)

		if _, err := s.LinkIdentity(ctx, ada.ID, perch.Identity{Provider: perch.ProviderGoogle, Subject: "g-1"}); err != nil {
			t.Fatal(err)
		}
		ids, err := s.Identities(ctx, ada.ID)
		if err != nil || len(ids) != 2 || ids[0].Provider != perch.ProviderGitHub || ids[1].Provider != perch.ProviderGoogle {
			t.Fatalf("Identities = %+v, %v", ids, err)
		}
		if ids, err := s.Identities(ctx, bob.ID); err != nil || len(ids) != 0 || ids == nil {
			t.Fatalf("Identities of bob = %#v, %v", ids, err)
		}
	})
}

// An account made at a first sign-in has its organisation, no password (an
// empty hash) and the link, all or nothing. The provider verified the
// address, but the mailbox is not proven until Perch's own link comes back.
func TestIdentitiesCreateUser(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		u, err := s.CreateIdentityUser(ctx, "Grace", "Grace@Example.com", perch.Identity{Provider: perch.ProviderGoogle, Subject: "g-7", Email: "Grace@Example.com"})
		if err != nil {
			t.Fatal(err)
		}
		got, hash, err := s.UserCredentials(ctx, "grace@example.com")
		if err != nil || got.ID != u.ID || got.EmailVerified || got.OrgRole != perch.RoleOwner || hash != "" {
			t.Fatalf("UserCredentials = %+v, %q, %v", got, hash, err)
		}
		if o, err := s.Org(ctx, u.OrgID); err != nil || o.Name != "Grace's organisation" || o.SeatCount != 1 {
			t.Fatalf("Org = %+v, %v", o, err)
		}
		if linked, err := s.IdentityUser(ctx, perch.ProviderGoogle, "g-7"); err != nil || linked.ID != u.ID {
			t.Fatalf("IdentityUser = %v, %v", linked, err)
		}
		// A taken address, or a taken provider account, makes nothing.
		_, err = s.CreateIdentityUser(ctx, "Other", "grace@example.com", perch.Identity{Provider: perch.ProviderGoogle, Subject: "g-8"})
		wantCode(t, err, perch.ECONFLICT)
		_, err = s.CreateIdentityUser(ctx, "Other", "other@example.com", perch.Identity{Provider: perch.ProviderGoogle, Subject: "g-7"})
		wantCode(t, err, perch.ECONFLICT)
		_, _, err = s.UserCredentials(ctx, "other@example.com")
		wantCode(t, err, perch.ENOTFOUND)
	})
}

// Removing a provider: not while it is the last way to sign in.
func TestIdentitiesRemove(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		u, err := s.CreateIdentityUser(ctx, "Solo", "solo@example.com", perch.Identity{Provider: perch.ProviderGitHub, Subject: "5"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.RemoveIdentity(ctx, u.ID, perch.ProviderGitHub)
		wantCode(t, err, perch.ECONFLICT)
		_, err = s.RemoveIdentity(ctx, u.ID, perch.ProviderGoogle)
		wantCode(t, err, perch.ENOTFOUND)
		if _, err := s.LinkIdentity(ctx, u.ID, perch.Identity{Provider: perch.ProviderGoogle, Subject: "g-5"}); err != nil {
			t.Fatal(err)
		}
		// Two removals at once: one of them, at most, succeeds.
		var ok atomic.Int32
		var wg sync.WaitGroup
		for _, p := range []string{perch.ProviderGitHub, perch.ProviderGoogle} {
			wg.Go(func() {
				if _, err := s.RemoveIdentity(ctx, u.ID, p); err == nil {
					ok.Add(1)
				} else if perch.ErrorCode(err) != perch.ECONFLICT {
					t.Errorf("RemoveIdentity(%s): %v", p, err)
				}
			})
		}
		wg.Wait()
		if ids, _ := s.Identities(ctx, u.ID); ok.Load() != 1 || len(ids) != 1 {
			t.Fatalf("%d removals succeeded, %d identities left", ok.Load(), len(ids))
		}

		// With a password, the last provider may go.
		pw := mustCreateUser(t, s, "Pat", "pat@example.com")
		if _, err := s.LinkIdentity(ctx, pw.ID, perch.Identity{Provider: perch.ProviderGitHub, Subject: "6", Email: "pat@users.example"}); err != nil {
			t.Fatal(err)
		}
		gone, err := s.RemoveIdentity(ctx, pw.ID, perch.ProviderGitHub)
		if err != nil || gone.Subject != "6" || gone.Email != "pat@users.example" {
			t.Fatalf("RemoveIdentity = %+v, %v", gone, err)
		}
		if _, err := s.IdentityUser(ctx, perch.ProviderGitHub, "6"); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Fatalf("the link is still there: %v", err)
		}
	})
}

// A flow is taken once, by one of any number of callers at once, and not
// after it expires; PruneSessions deletes the expired ones.
func TestOAuthFlowsAreTakenOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := t.Context()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		f := perch.OAuthFlow{Provider: perch.ProviderGoogle, Verifier: "v", Nonce: "n", Redirect: "/org", DeviceSession: "dev_x",
			LinkUserID: ada.ID, ExpiresAt: perch.Timestamp(clock.Now().Add(perch.OAuthFlowTTL))}
		if err := s.CreateOAuthFlow(ctx, "h1", f); err != nil {
			t.Fatal(err)
		}
		var taken atomic.Int32
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				got, err := s.TakeOAuthFlow(ctx, "h1")
				switch perch.ErrorCode(err) {
				case "":
					taken.Add(1)
					if !reflect.DeepEqual(*got, f) {
						t.Errorf("TakeOAuthFlow = %+v, want %+v", got, f)
					}
				case perch.ENOTFOUND:
				default:
					t.Errorf("TakeOAuthFlow: %v", err)
				}
			})
		}
		wg.Wait()
		if taken.Load() != 1 {
			t.Fatalf("taken %d times", taken.Load())
		}

		plain := perch.OAuthFlow{Provider: perch.ProviderGitHub, Verifier: "v2", Redirect: "/", ExpiresAt: clock.Now().Add(perch.OAuthFlowTTL)}
		if err := s.CreateOAuthFlow(ctx, "h2", plain); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateOAuthFlow(ctx, "h3", plain); err != nil {
			t.Fatal(err)
		}
		clock.Advance(perch.OAuthFlowTTL)
		_, err := s.TakeOAuthFlow(ctx, "h2")
		wantCode(t, err, perch.ENOTFOUND)
		if _, err := s.PruneSessions(ctx); err != nil {
			t.Fatal(err)
		}
		clock.Advance(-time.Minute)
		_, err = s.TakeOAuthFlow(ctx, "h3")
		wantCode(t, err, perch.ENOTFOUND)
	})
}
