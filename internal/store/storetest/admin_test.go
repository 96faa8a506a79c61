package storetest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// allPages walks a list page by page, limit rows at a time, and returns the
// ids in the order answered and how many pages it took.
func allPages(t *testing.T, limit int, page func(p perch.Page) ([]string, string, error)) ([]string, int) {
	t.Helper()
	var ids []string
	p := perch.Page{Limit: limit}
	for pages := 1; ; pages++ {
		got, next, err := page(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > limit {
			t.Fatalf("page %d has %d rows, over the limit %d", pages, len(got), limit)
		}
		ids = append(ids, got...)
		if next == "" {
			return ids, pages
		}
		if pages > 100 {
			t.Fatal("paging does not end")
		}
		p.Cursor = next
	}
}

// idsOf adapts a store's admin list, searched for q, to allPages: the ids
// of one page.
func idsOf[T any](list func(context.Context, string, perch.Page) ([]T, string, error), q string, id func(T) string) func(perch.Page) ([]string, string, error) {
	return func(p perch.Page) ([]string, string, error) {
		rows, next, err := list(context.Background(), q, p)
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = id(r)
		}
		return ids, next, err
	}
}

func userIDs(s *store.Store, q string) func(perch.Page) ([]string, string, error) {
	return idsOf(s.Users, q, func(u *perch.AdminUser) string { return u.ID })
}

func TestAdminUsersNewestFirstSearchedAndPaged(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		var made []*perch.User
		for i, name := range []string{"Ada Lovelace", "Bob 100% Babbage", "Carol_Shaw", "Dan Ada", "Eve"} {
			if i != 3 {
				clock.Advance(time.Second) // Carol and Dan share an instant: the id breaks the tie
			}
			made = append(made, mustCreateUser(t, s, name, fmt.Sprintf("user%d@example.com", i)))
		}
		newestFirst := []string{made[4].ID, made[3].ID, made[2].ID, made[1].ID, made[0].ID}
		if made[2].ID > made[3].ID {
			newestFirst[1], newestFirst[2] = made[2].ID, made[3].ID
		}
		ids, pages := allPages(t, 2, userIDs(s, ""))
		if !slices.Equal(ids, newestFirst) || pages != 3 {
			t.Fatalf("paged %v in %d pages, want %v in 3", ids, pages, newestFirst)
		}
		for _, c := range []struct {
			q    string
			want []*perch.User
		}{
			{"ada", []*perch.User{made[3], made[0]}},
			{"  LOVELACE ", []*perch.User{made[0]}},
			{"USER4@", []*perch.User{made[4]}},
			{"100%", []*perch.User{made[1]}},
			{"r%4", nil}, // % is no wildcard
			{"a_a", nil}, // nor is _
			{"_", []*perch.User{made[2]}},
			{made[1].ID, []*perch.User{made[1]}},
			{"nobody", nil},
		} {
			got, _ := allPages(t, 50, userIDs(s, c.q))
			var want []string
			for _, u := range c.want {
				want = append(want, u.ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("q=%q found %v, want %v", c.q, got, want)
			}
		}

		users, _, err := s.Users(ctx, "lovelace", perch.Page{Limit: 10})
		if err != nil || len(users) != 1 {
			t.Fatalf("Users = %v, %v", users, err)
		}
		u := users[0]
		if u.Email != "user0@example.com" || u.Name != "Ada Lovelace" || u.OrgID != made[0].OrgID || u.OrgName != "Ada Lovelace's organisation" ||
			u.Role != perch.RoleOwner || u.Granted || u.EmailVerified || u.Disabled || !u.CreatedAt.Equal(made[0].CreatedAt) || u.LastSeenAt != nil {
			t.Fatalf("user = %+v", u)
		}
		for _, bad := range []string{"x", "bm90IGEgY3Vyc29y", "MTIzOg", "LTE6YWJj", "YWJjOmFiYw"} {
			_, _, err := s.Users(ctx, "", perch.Page{Cursor: bad, Limit: 2})
			wantCode(t, err, perch.EBADREQUEST)
		}
	})
}

func TestDisablingAUserRefusesEveryCredential(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		root := mustCreateUser(t, s, "Root", "root@example.com")
		if err := s.GrantAdmin(ctx, root.Email); err != nil {
			t.Fatal(err)
		}
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		first, second := session(t, s, ada, "a1"), session(t, s, ada, "a2")
		if _, err := s.CreateAPIToken(ctx, ada.ID, "script", "pat_x", "api-ada"); err != nil {
			t.Fatal(err)
		}
		off, err := s.CreateAPIToken(ctx, ada.ID, "off", "pat_y", "api-ada-off")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateAPIToken(ctx, ada.ID, off.ID, perch.APITokenUpdate{IsActive: new(false)}); err != nil {
			t.Fatal(err)
		}
		active, _ := s.APITokens(ctx, ada.ID)
		hook, err := s.CreateWebhookToken(ctx, &perch.WebhookToken{UserID: ada.ID, OrgID: ada.OrgID, Label: "l", Sender: perch.SenderInbound, Scope: "org", TokenPrefix: "whk_x"}, "hook-ada")
		if err != nil {
			t.Fatal(err)
		}
		session(t, s, root, "r1")

		clock.Advance(time.Minute)
		c, err := s.UpdateUserAsAdmin(ctx, ada.ID, perch.AdminUserUpdate{Disabled: new(true)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(c.Sessions)
		want := []string{first, second}
		slices.Sort(want)
		if c.Before.Disabled || !c.After.Disabled || !slices.Equal(c.Sessions, want) {
			t.Fatalf("change = %+v %+v, sessions %v, want %v", c.Before, c.After, c.Sessions, want)
		}
		if len(c.APITokens) != 1 || c.APITokens[0] == off.ID || !slices.ContainsFunc(active, func(k *perch.APIToken) bool { return k.ID == c.APITokens[0] }) {
			t.Fatalf("API tokens %v: want the one active token", c.APITokens)
		}
		_, err = s.AccessPrincipal(ctx, "access-a1")
		wantCode(t, err, perch.EUNAUTHORIZED)
		_, _, err = s.APITokenPrincipal(ctx, "api-ada")
		wantCode(t, err, perch.EUNAUTHORIZED)
		_, _, err = s.RotateRefresh(ctx, "refresh-a2", tokens(s, "a3"))
		wantCode(t, err, perch.EUNAUTHORIZED)
		_, err = s.WebhookTokenByHash(ctx, "hook-ada")
		wantCode(t, err, perch.EUNAUTHORIZED)
		_, err = s.CreateSession(ctx, ada.ID, tokens(s, "a4"))
		wantCode(t, err, perch.EFORBIDDEN)
		if _, err := s.AccessPrincipal(ctx, "access-r1"); err != nil {
			t.Fatalf("another user's sign-in ended too: %v", err)
		}

		// Disabling again keeps the first time and ends nothing new.
		clock.Advance(time.Minute)
		again, err := s.UpdateUserAsAdmin(ctx, ada.ID, perch.AdminUserUpdate{Disabled: new(true)}, nil)
		if err != nil || len(again.Sessions) != 0 || !again.Before.Disabled {
			t.Fatalf("disabling again = %+v, %v", again, err)
		}

		enabled, err := s.UpdateUserAsAdmin(ctx, ada.ID, perch.AdminUserUpdate{Disabled: new(false)}, nil)
		if err != nil || enabled.After.Disabled || len(enabled.Sessions)+len(enabled.APITokens) != 0 {
			t.Fatalf("enabling = %+v, %v", enabled, err)
		}
		_, err = s.AccessPrincipal(ctx, "access-a1")
		wantCode(t, err, perch.EUNAUTHORIZED) // ended sign-ins stay ended
		session(t, s, ada, "a5")
		if _, err := s.AccessPrincipal(ctx, "access-a5"); err != nil {
			t.Fatalf("a new sign-in after enabling: %v", err)
		}
		if _, _, err := s.APITokenPrincipal(ctx, "api-ada"); err != nil {
			t.Fatalf("the API token after enabling: %v", err)
		}
		if got, err := s.WebhookTokenByHash(ctx, "hook-ada"); err != nil || got.ID != hook.ID {
			t.Fatalf("the webhook token after enabling: %v, %v", got, err)
		}

		_, err = s.UpdateUserAsAdmin(ctx, "nope", perch.AdminUserUpdate{Disabled: new(true)}, nil)
		wantCode(t, err, perch.ENOTFOUND)
	})
}

func TestTheLastPlatformAdminStays(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		root := mustCreateUser(t, s, "Root", "root@example.com")
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		if err := s.GrantAdmin(ctx, root.Email); err != nil {
			t.Fatal(err)
		}
		_, err := s.UpdateUserAsAdmin(ctx, root.ID, perch.AdminUserUpdate{PlatformAdmin: new(false)}, nil)
		wantCode(t, err, perch.ECONFLICT)
		_, err = s.UpdateUserAsAdmin(ctx, root.ID, perch.AdminUserUpdate{Disabled: new(true)}, nil)
		wantCode(t, err, perch.ECONFLICT)
		// An address listed in configuration counts once verified.
		listed := []string{"ada@example.com"}
		_, err = s.UpdateUserAsAdmin(ctx, root.ID, perch.AdminUserUpdate{PlatformAdmin: new(false)}, listed)
		wantCode(t, err, perch.ECONFLICT)
		emailToken(t, s, ada, perch.EmailVerify, ada.Email, "verify-ada", time.Hour)
		if _, err := s.VerifyEmail(ctx, "verify-ada"); err != nil {
			t.Fatal(err)
		}
		c, err := s.UpdateUserAsAdmin(ctx, root.ID, perch.AdminUserUpdate{PlatformAdmin: new(false)}, listed)
		if err != nil || !c.Before.Granted || c.After.Granted {
			t.Fatalf("withdrawing the grant with another admin listed = %+v, %v", c, err)
		}
		// A granted admin who is disabled does not count.
		if _, err := s.UpdateUserAsAdmin(ctx, root.ID, perch.AdminUserUpdate{PlatformAdmin: new(true), Disabled: new(true)}, listed); err != nil {
			t.Fatal(err)
		}
		_, err = s.UpdateUserAsAdmin(ctx, ada.ID, perch.AdminUserUpdate{Disabled: new(true)}, listed)
		wantCode(t, err, perch.ECONFLICT)
	})
}

func TestLastSeenIsWrittenAtMostOnceAMinute(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		seen := func() *time.Time {
			t.Helper()
			u, err := s.AdminUser(ctx, ada.ID)
			if err != nil {
				t.Fatal(err)
			}
			return u.LastSeenAt
		}
		if got := seen(); got != nil {
			t.Fatalf("seen %v before any sign-in", got)
		}
		signedIn := clock.Now()
		session(t, s, ada, "a1")
		if got := seen(); got == nil || !got.Equal(signedIn) {
			t.Fatalf("seen %v, want the sign-in at %v", got, signedIn)
		}
		clock.Advance(30 * time.Second)
		if err := s.TouchUser(ctx, ada.ID); err != nil {
			t.Fatal(err)
		}
		if got := seen(); !got.Equal(signedIn) {
			t.Fatalf("seen %v: written again within the minute", got)
		}
		clock.Advance(30 * time.Second)
		if err := s.TouchUser(ctx, ada.ID); err != nil {
			t.Fatal(err)
		}
		if got := seen(); !got.Equal(clock.Now()) {
			t.Fatalf("seen %v, want %v", got, clock.Now())
		}
		clock.Advance(5 * time.Minute)
		if _, _, err := s.RotateRefresh(ctx, "refresh-a1", tokens(s, "a2")); err != nil {
			t.Fatal(err)
		}
		if got := seen(); !got.Equal(clock.Now()) {
			t.Fatalf("seen %v after a refresh, want %v", got, clock.Now())
		}
		p, err := s.AccessPrincipal(ctx, "access-a2")
		if err != nil || p.User.LastSeenAt == nil || !p.User.LastSeenAt.Equal(clock.Now()) {
			t.Fatalf("principal's last seen = %v, %v", p, err)
		}
	})
}
