package storetest_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// setupCodes is how many setup codes the database keeps.
func setupCodes(t *testing.T, db *sql.DB) int {
	t.Helper()
	_, rows := storetest.Rows(t, db, `SELECT hash FROM setup_codes`)
	return len(rows)
}

// mustMakeSetupCode keeps hash as a setup code valid for a day, which the
// server without an admin must take.
func mustMakeSetupCode(t *testing.T, s *store.Store, hash string, listed []string) time.Time {
	t.Helper()
	expires, made, err := s.CreateSetupCode(context.Background(), hash, 24*time.Hour, listed)
	if err != nil || !made {
		t.Fatalf("CreateSetupCode(%s) = %v, %v; want a code kept", hash, made, err)
	}
	return expires
}

func TestSetupCodeMakesTheFirstPlatformAdminOnce(t *testing.T) {
	t.Parallel()
	storetest.RunWithSQL(t, func(t *testing.T, s *store.Store, db *sql.DB) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")
		if needed, err := s.AdminNeeded(ctx, nil); err != nil || !needed {
			t.Fatalf("a new server: AdminNeeded = %v, %v", needed, err)
		}
		// Two instances start: each keeps a code of its own, and both work.
		if expires := mustMakeSetupCode(t, s, "code-a", nil); !expires.Equal(clock.Now().Add(24 * time.Hour)) {
			t.Errorf("the code expires at %v, want a day from now", expires)
		}
		mustMakeSetupCode(t, s, "code-b", nil)
		if n := setupCodes(t, db); n != 2 {
			t.Fatalf("%d codes kept, want 2", n)
		}

		u, err := s.RedeemSetupCode(ctx, "code-b", ada.ID, nil)
		if err != nil || !u.IsAdmin || u.ID != ada.ID {
			t.Fatalf("RedeemSetupCode = %+v, %v; want Ada, a platform admin", u, err)
		}
		if needed, err := s.AdminNeeded(ctx, nil); err != nil || needed {
			t.Fatalf("with Ada admin: AdminNeeded = %v, %v", needed, err)
		}
		if n := setupCodes(t, db); n != 0 {
			t.Errorf("%d codes kept after one was redeemed, want none", n)
		}
		// Neither code works any more, for anyone.
		for _, code := range []string{"code-a", "code-b"} {
			_, err := s.RedeemSetupCode(ctx, code, bob.ID, nil)
			wantCode(t, err, perch.EFORBIDDEN)
		}
		if u, _ := s.User(ctx, bob.ID); u.IsAdmin {
			t.Error("Bob became an admin")
		}
		// A start with an admin keeps no code.
		if _, made, err := s.CreateSetupCode(ctx, "code-c", 24*time.Hour, nil); err != nil || made {
			t.Fatalf("CreateSetupCode with an admin = %v, %v; want none kept", made, err)
		}
		_, err = s.RedeemSetupCode(ctx, "code-c", bob.ID, nil)
		wantCode(t, err, perch.EFORBIDDEN)
	})
}

func TestSetupCodeExpiresAndIsDeletedAtTheNextStart(t *testing.T) {
	t.Parallel()
	storetest.RunWithSQL(t, func(t *testing.T, s *store.Store, db *sql.DB) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		mustMakeSetupCode(t, s, "old", nil)
		clock.Advance(24 * time.Hour)
		_, err := s.RedeemSetupCode(context.Background(), "old", ada.ID, nil)
		wantCode(t, err, perch.EFORBIDDEN)
		_, err = s.RedeemSetupCode(context.Background(), "never-made", ada.ID, nil)
		wantCode(t, err, perch.EFORBIDDEN)

		mustMakeSetupCode(t, s, "new", nil)
		if _, rows := storetest.Rows(t, db, `SELECT hash FROM setup_codes`); len(rows) != 1 || rows[0][0] != "new" {
			t.Fatalf("codes kept after the next start: %v, want only the new one", rows)
		}
		if _, err := s.RedeemSetupCode(context.Background(), "new", ada.ID, nil); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSetupCodeStopsWorkingWhenAnAdminIsMadeAnotherWay(t *testing.T) {
	t.Parallel()
	storetest.RunWithSQL(t, func(t *testing.T, s *store.Store, db *sql.DB) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		root := mustCreateUser(t, s, "Root", "root@example.com")

		// perch admin grant deletes the codes.
		mustMakeSetupCode(t, s, "before-grant", nil)
		if err := s.GrantAdmin(ctx, root.Email); err != nil {
			t.Fatal(err)
		}
		if n := setupCodes(t, db); n != 0 {
			t.Errorf("%d codes kept after perch admin grant, want none", n)
		}
		_, err := s.RedeemSetupCode(ctx, "before-grant", ada.ID, nil)
		wantCode(t, err, perch.EFORBIDDEN)

		// A code kept while an admin exists (one made by PERCH_ADMIN_EMAILS
		// after it was printed) is refused by the check in the redemption.
		if _, err := db.Exec(`UPDATE users SET is_admin = FALSE`); err != nil {
			t.Fatal(err)
		}
		mustMakeSetupCode(t, s, "before-listing", nil)
		emailToken(t, s, root, perch.EmailVerify, root.Email, "verify-root", time.Hour)
		if _, err := s.VerifyEmail(ctx, "verify-root"); err != nil {
			t.Fatal(err)
		}
		listed := []string{"root@example.com"}
		if needed, err := s.AdminNeeded(ctx, listed); err != nil || needed {
			t.Fatalf("with a listed, proven address: AdminNeeded = %v, %v", needed, err)
		}
		_, err = s.RedeemSetupCode(ctx, "before-listing", ada.ID, listed)
		wantCode(t, err, perch.EFORBIDDEN)
		// Listed but not the one proven: not an admin, so a code is needed.
		if needed, err := s.AdminNeeded(ctx, []string{"ada@example.com"}); err != nil || !needed {
			t.Fatalf("with an unproven listed address: AdminNeeded = %v, %v", needed, err)
		}
	})
}

func TestSetupCodesRedeemedTogetherMakeOneAdmin(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		const n = 4
		users := make([]*perch.User, n)
		for i := range users {
			users[i] = mustCreateUser(t, s, "User", "user"+string(rune('a'+i))+"@example.com")
			mustMakeSetupCode(t, s, "code-"+users[i].ID, nil)
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, u := range users {
			wg.Go(func() { _, errs[i] = s.RedeemSetupCode(context.Background(), "code-"+u.ID, u.ID, nil) })
		}
		wg.Wait()
		admins := 0
		for i, err := range errs {
			switch perch.ErrorCode(err) {
			case "":
				admins++
			case perch.EFORBIDDEN:
			default:
				t.Errorf("user %d: %v", i, err)
			}
		}
		if admins != 1 {
			t.Fatalf("%d of %d redemptions at once made an admin, want 1", admins, n)
		}
	})
}

func TestMigratedTellsPerchsDatabaseFromAnEmptyOne(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		if ok, err := s.Migrated(context.Background()); err != nil || !ok {
			t.Fatalf("a migrated store: Migrated = %v, %v", ok, err)
		}
	})
	empty, err := store.Open(context.Background(), t.TempDir()+"/empty.db")
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if ok, err := empty.Migrated(context.Background()); err != nil || ok {
		t.Fatalf("an empty SQLite file: Migrated = %v, %v", ok, err)
	}
}
