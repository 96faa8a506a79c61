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

func mustCreateUser(tb testing.TB, s *store.Store, name, email string) *perch.User {
	tb.Helper()
	u, err := s.CreateUser(context.Background(), name, email, "hash-of-"+email)
	if err != nil {
		tb.Fatalf("CreateUser(%q): %v", email, err)
	}
	return u
}

func wantCode(tb testing.TB, err error, code string) {
	tb.Helper()
	if got := perch.ErrorCode(err); got != code {
		tb.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}

func TestCreateUserMakesOwnedOrgOnTrial(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		u := mustCreateUser(t, s, "Ada Lovelace", "Ada@Example.com")
		if u.OrgRole != perch.RoleOwner || u.Email != "Ada@Example.com" || u.EmailVerified || u.IsAdmin {
			t.Fatalf("user = %+v", u)
		}
		got, err := s.User(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if *got != *u {
			t.Fatalf("User() = %+v, want %+v", got, u)
		}
		org, err := s.Org(ctx, u.OrgID)
		if err != nil {
			t.Fatal(err)
		}
		if org.Name != "Ada Lovelace's organisation" || org.Plan != "team" || org.PlanStatus != perch.PlanTrialing {
			t.Fatalf("org = %+v", org)
		}
		if want := clock.Now().Add(14 * 24 * time.Hour); org.TrialEndsAt == nil || !org.TrialEndsAt.Equal(want) {
			t.Fatalf("trial ends %v, want %v", org.TrialEndsAt, want)
		}
		if org.Slug == "" || org.Slug[:12] != "ada-lovelace" {
			t.Fatalf("slug = %q", org.Slug)
		}
	})
}

func TestCreateUserEmailIsUniqueIgnoringCase(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		mustCreateUser(t, s, "Ada", "ada@example.com")
		_, err := s.CreateUser(context.Background(), "Other Ada", "  ADA@example.COM ", "x")
		wantCode(t, err, perch.ECONFLICT)
		// The failed attempt must not leave an orphan organisation behind.
		u, hash, err := s.UserCredentials(context.Background(), "ADA@EXAMPLE.COM")
		if err != nil || u.Name != "Ada" || hash != "hash-of-ada@example.com" {
			t.Fatalf("UserCredentials = %+v, %q, %v", u, hash, err)
		}
	})
}

func TestMissingRowsAreNotFound(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		_, err := s.User(ctx, "nope")
		wantCode(t, err, perch.ENOTFOUND)
		_, _, err = s.UserCredentials(ctx, "nobody@example.com")
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.Org(ctx, "nope")
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.SetUserName(ctx, "nope", "x")
		wantCode(t, err, perch.ENOTFOUND)
		wantCode(t, s.GrantAdmin(ctx, "nobody@example.com"), perch.ENOTFOUND)
		_, err = s.Announcement(ctx, "nope")
		wantCode(t, err, perch.ENOTFOUND)
		wantCode(t, s.DeleteAnnouncement(ctx, "nope"), perch.ENOTFOUND)
	})
}

func TestUserUpdates(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u := mustCreateUser(t, s, "Ada", "ada@example.com")
		renamed, err := s.SetUserName(ctx, u.ID, "  Countess  ")
		if err != nil || renamed.Name != "Countess" {
			t.Fatalf("SetUserName = %+v, %v", renamed, err)
		}
		if err := s.GrantAdmin(ctx, "ADA@example.com"); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.User(ctx, u.ID); !got.IsAdmin {
			t.Fatal("GrantAdmin did not make the user an admin")
		}
	})
}

// session creates a sign-in for u whose tokens are named after tag.
func session(tb testing.TB, s *store.Store, u *perch.User, tag string) string {
	tb.Helper()
	id, err := s.CreateSession(context.Background(), u.ID, tokens(s, tag))
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

func tokens(s *store.Store, tag string) store.SessionTokens {
	now := s.Now()
	return store.SessionTokens{
		AccessHash: "access-" + tag, AccessExpires: now.Add(perch.AccessTokenTTL),
		RefreshHash: "refresh-" + tag, RefreshExpires: now.Add(perch.RefreshTokenTTL),
	}
}

func TestAccessTokensExpire(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		u := mustCreateUser(t, s, "Ada", "ada@example.com")
		sid := session(t, s, u, "1")
		got, err := s.AccessPrincipal(ctx, "access-1")
		if err != nil || got.User.ID != u.ID || got.SessionID != sid || !got.ExpiresAt.Equal(perch.Timestamp(clock.Now().Add(perch.AccessTokenTTL))) {
			t.Fatalf("AccessPrincipal = %+v, %v", got, err)
		}
		_, err = s.AccessPrincipal(ctx, "refresh-1") // a refresh token is no access token
		wantCode(t, err, perch.EUNAUTHORIZED)
		clock.Advance(perch.AccessTokenTTL)
		_, err = s.AccessPrincipal(ctx, "access-1")
		wantCode(t, err, perch.EUNAUTHORIZED)
	})
}

func TestRefreshRotatesAndDetectsReuse(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u := mustCreateUser(t, s, "Ada", "ada@example.com")
		sid := session(t, s, u, "1")
		uid, gotSID, err := s.RotateRefresh(ctx, "refresh-1", tokens(s, "2"))
		if err != nil || uid != u.ID || gotSID != sid {
			t.Fatalf("RotateRefresh = %q, %q, %v", uid, gotSID, err)
		}
		if _, err := s.AccessPrincipal(ctx, "access-2"); err != nil {
			t.Fatalf("new access token: %v", err)
		}
		// The spent token comes back: somebody copied it. The whole sign-in
		// goes, and is named so that what it opened can be closed.
		uid, gotSID, err = s.RotateRefresh(ctx, "refresh-1", tokens(s, "3"))
		wantCode(t, err, perch.EUNAUTHORIZED)
		if uid != u.ID || gotSID != sid {
			t.Fatalf("reuse revoked %q, %q; want %q, %q", uid, gotSID, u.ID, sid)
		}
		for _, h := range []string{"access-1", "access-2"} {
			_, err := s.AccessPrincipal(ctx, h)
			wantCode(t, err, perch.EUNAUTHORIZED)
		}
		_, _, err = s.RotateRefresh(ctx, "refresh-2", tokens(s, "4"))
		wantCode(t, err, perch.EUNAUTHORIZED)
		_, _, err = s.RotateRefresh(ctx, "unknown", tokens(s, "5"))
		wantCode(t, err, perch.EUNAUTHORIZED)
	})
}

func TestRefreshTokenExpires(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		u := mustCreateUser(t, s, "Ada", "ada@example.com")
		session(t, s, u, "1")
		clock.Advance(perch.RefreshTokenTTL)
		_, _, err := s.RotateRefresh(context.Background(), "refresh-1", tokens(s, "2"))
		wantCode(t, err, perch.EUNAUTHORIZED)
	})
}

func TestLogoutAndPasswordChangeRevokeSessions(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u := mustCreateUser(t, s, "Ada", "ada@example.com")
		laptop := session(t, s, u, "laptop")
		phone := session(t, s, u, "phone")
		tablet := session(t, s, u, "tablet")

		uid, sid, err := s.RevokeSessionByRefresh(ctx, "refresh-tablet")
		if err != nil || uid != u.ID || sid != tablet {
			t.Fatalf("RevokeSessionByRefresh = %q, %q, %v; want %q, %q", uid, sid, err, u.ID, tablet)
		}
		if uid, sid, err := s.RevokeSessionByRefresh(ctx, "refresh-tablet"); err != nil || uid != "" || sid != "" {
			t.Fatalf("signing out twice = %q, %q, %v", uid, sid, err)
		}
		if _, _, err := s.RevokeSessionByRefresh(ctx, "refresh-unknown"); err != nil {
			t.Fatalf("revoking an unknown token: %v", err)
		}
		_, err = s.AccessPrincipal(ctx, "access-tablet")
		wantCode(t, err, perch.EUNAUTHORIZED)

		revoked, err := s.SetPassword(ctx, u.ID, "new-hash", laptop)
		if err != nil || !slices.Equal(revoked, []string{phone}) {
			t.Fatalf("SetPassword revoked %q, %v; want only the phone's %q", revoked, err, phone)
		}
		if _, err := s.AccessPrincipal(ctx, "access-laptop"); err != nil {
			t.Fatalf("the session that changed the password was revoked: %v", err)
		}
		_, err = s.AccessPrincipal(ctx, "access-phone")
		wantCode(t, err, perch.EUNAUTHORIZED)
		if h, _ := s.PasswordHash(ctx, u.ID); h != "new-hash" {
			t.Fatalf("hash = %q", h)
		}
	})
}

func TestPruneSessionsKeepsLiveOnes(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		u := mustCreateUser(t, s, "Ada", "ada@example.com")
		session(t, s, u, "old")
		clock.Advance(perch.RefreshTokenTTL - time.Hour)
		session(t, s, u, "new")
		clock.Advance(2 * time.Hour)
		n, err := s.PruneSessions(ctx)
		if err != nil || n != 3 { // old access, old refresh, new access
			t.Fatalf("PruneSessions = %d, %v; want 3", n, err)
		}
		if _, _, err := s.RotateRefresh(ctx, "refresh-new", tokens(s, "newer")); err != nil {
			t.Fatalf("live refresh token pruned: %v", err)
		}
	})
}
