package storetest_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func TestAPITokenLifecycle(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")

		first, err := s.CreateAPIToken(ctx, ada.ID, "laptop", "pat_abcd", "hash-1")
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		second, _ := s.CreateAPIToken(ctx, ada.ID, "ci", "pat_efgh", "hash-2")
		s.CreateAPIToken(ctx, bob.ID, "bob's", "pat_ijkl", "hash-3")

		list, err := s.APITokens(ctx, ada.ID)
		if err != nil || len(list) != 2 || list[0].ID != second.ID || list[1].ID != first.ID {
			t.Fatalf("APITokens = %v, %v; want newest first, only Ada's", list, err)
		}
		if !reflect.DeepEqual(list[1], first) {
			t.Fatalf("listed %+v, created %+v", list[1], first)
		}

		u, k, err := s.APITokenPrincipal(ctx, "hash-1")
		if err != nil || u.ID != ada.ID || k.ID != first.ID {
			t.Fatalf("APITokenPrincipal = %v, %v, %v", u, k, err)
		}

		// Another user's token is not found, whatever the operation.
		_, err = s.APIToken(ctx, bob.ID, first.ID)
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.UpdateAPIToken(ctx, bob.ID, first.ID, perch.APITokenUpdate{Label: new("stolen")})
		wantCode(t, err, perch.ENOTFOUND)
		wantCode(t, s.DeleteAPIToken(ctx, bob.ID, first.ID), perch.ENOTFOUND)

		off := false
		upd, err := s.UpdateAPIToken(ctx, ada.ID, first.ID, perch.APITokenUpdate{IsActive: &off})
		if err != nil || upd.IsActive || upd.Label != "laptop" {
			t.Fatalf("deactivate = %+v, %v", upd, err)
		}
		_, _, err = s.APITokenPrincipal(ctx, "hash-1")
		wantCode(t, err, perch.EUNAUTHORIZED)

		upd, err = s.UpdateAPIToken(ctx, ada.ID, first.ID, perch.APITokenUpdate{Label: new("desk"), IsActive: new(true)})
		if err != nil || !upd.IsActive || upd.Label != "desk" {
			t.Fatalf("reactivate = %+v, %v", upd, err)
		}

		if err := s.DeleteAPIToken(ctx, ada.ID, first.ID); err != nil {
			t.Fatal(err)
		}
		_, _, err = s.APITokenPrincipal(ctx, "hash-1")
		wantCode(t, err, perch.EUNAUTHORIZED)
	})
}

// TestAPITokenLimits: a token's expiry and scopes are kept and read back as
// made; past its expiry the token no longer authenticates, with a message
// that says so.
func TestAPITokenLimits(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		ends := clock.Now().Add(time.Hour + 1500*time.Microsecond) // kept to the millisecond
		lim := perch.APITokenLimits{ExpiresAt: &ends, Scopes: []perch.TokenScope{perch.ScopeRead, perch.ScopeSend}}
		k, err := s.CreateLimitedAPIToken(ctx, ada.ID, "ci", "pat_abcd", "hash-1", lim)
		if err != nil {
			t.Fatal(err)
		}
		if k.ExpiresAt == nil || !k.ExpiresAt.Equal(ends.Truncate(time.Millisecond)) || !slices.Equal(k.Scopes, lim.Scopes) {
			t.Fatalf("made %+v", k)
		}
		plain, _ := s.CreateAPIToken(ctx, ada.ID, "laptop", "pat_efgh", "hash-2")
		list, err := s.APITokens(ctx, ada.ID)
		if err != nil || len(list) != 2 {
			t.Fatalf("APITokens = %v, %v", list, err)
		}
		for _, got := range list {
			want := map[string]*perch.APIToken{k.ID: k, plain.ID: plain}[got.ID]
			if !reflect.DeepEqual(got, want) {
				t.Errorf("listed %+v, made %+v", got, want)
			}
		}
		if plain.ExpiresAt != nil || plain.Scopes != nil {
			t.Errorf("a token without limits: %+v", plain)
		}
		_, p, err := s.APITokenPrincipal(ctx, "hash-1")
		if err != nil || !reflect.DeepEqual(p, k) {
			t.Fatalf("APITokenPrincipal = %+v, %v", p, err)
		}
		clock.Advance(k.ExpiresAt.Sub(clock.Now()))
		_, _, err = s.APITokenPrincipal(ctx, "hash-1")
		wantCode(t, err, perch.EUNAUTHORIZED)
		if msg := perch.ErrorMessage(err); !strings.Contains(msg, "expired") {
			t.Errorf("expired token: %q does not say it expired", msg)
		}
		if _, _, err := s.APITokenPrincipal(ctx, "hash-2"); err != nil {
			t.Errorf("the token without expiry: %v", err)
		}
	})
}

func TestTouchAPITokenWritesAtMostOncePerInterval(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		k, _ := s.CreateAPIToken(ctx, ada.ID, "laptop", "pat_abcd", "hash-1")
		verifiedAt := func() time.Time {
			t.Helper()
			got, err := s.APIToken(ctx, ada.ID, k.ID)
			if err != nil || got.LastVerifiedAt == nil {
				t.Fatalf("APIToken = %+v, %v", got, err)
			}
			return *got.LastVerifiedAt
		}
		s.TouchAPIToken(ctx, k.ID, time.Minute)
		first := clock.Now()
		if got := verifiedAt(); !got.Equal(first) {
			t.Fatalf("last_verified_at = %v, want %v", got, first)
		}
		clock.Advance(30 * time.Second)
		s.TouchAPIToken(ctx, k.ID, time.Minute)
		if got := verifiedAt(); !got.Equal(first) {
			t.Fatalf("touched again within the minute: %v", got)
		}
		clock.Advance(30 * time.Second)
		s.TouchAPIToken(ctx, k.ID, time.Minute)
		if got := verifiedAt(); !got.Equal(clock.Now()) {
			t.Fatalf("not touched after a minute: %v", got)
		}
	})
}

func TestPlansAndFeaturesAreSeeded(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		plans, err := s.Plans(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []perch.Plan{
			{Slug: "solo", Name: "Solo", PriceMonthly: 9, MaxSeats: 1},
			{Slug: "team", Name: "Team", PriceMonthly: 49, MaxSeats: 25},
			{Slug: "enterprise", Name: "Enterprise", PriceMonthly: 499, MaxSeats: 1000},
		}
		if len(plans) != len(want) {
			t.Fatalf("Plans = %v", plans)
		}
		for i := range want {
			if *plans[i] != want[i] {
				t.Errorf("plan %d = %+v, want %+v", i, *plans[i], want[i])
			}
		}
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		flags, err := s.Features(ctx, ada.ID, ada.OrgID)
		if err != nil {
			t.Fatal(err)
		}
		if len(flags) != 3 || !flags["workflows"] || !flags["marketplace"] || flags["digest_email"] {
			t.Fatalf("Features = %v", flags)
		}
	})
}

func TestAnnouncementsNewestFirst(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		if list, err := s.Announcements(ctx); err != nil || len(list) != 0 {
			t.Fatalf("empty Announcements = %v, %v", list, err)
		}
		old, _ := s.CreateAnnouncement(ctx, "Welcome", "Hello.")
		clock.Advance(time.Hour)
		recent, err := s.CreateAnnouncement(ctx, "Maintenance", "Sunday 02:00 UTC.")
		if err != nil {
			t.Fatal(err)
		}
		list, _ := s.Announcements(ctx)
		if len(list) != 2 || *list[0] != *recent || *list[1] != *old {
			t.Fatalf("Announcements = %+v", list)
		}
		clock.Advance(time.Minute)
		upd, err := s.UpdateAnnouncement(ctx, old.ID, perch.AnnouncementUpdate{Body: new("Hello again.")})
		if err != nil || upd.Title != "Welcome" || upd.Body != "Hello again." || !upd.UpdatedAt.Equal(clock.Now()) || !upd.CreatedAt.Equal(old.CreatedAt) {
			t.Fatalf("UpdateAnnouncement = %+v, %v", upd, err)
		}
		if err := s.DeleteAnnouncement(ctx, old.ID); err != nil {
			t.Fatal(err)
		}
		if list, _ := s.Announcements(ctx); len(list) != 1 {
			t.Fatalf("after delete: %v", list)
		}
	})
}
