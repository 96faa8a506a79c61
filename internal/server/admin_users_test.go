package server

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// adminPages walks path (a list with ?limit=) page by page as token's
// user, checking each page's size and that its cursor leads on, and returns
// every item and how many pages there were.
func (a *api) adminPages(token, path string, limit int) ([]map[string]any, int) {
	a.t.Helper()
	var items []map[string]any
	cursor := ""
	for pages := 1; ; pages++ {
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		res := expect(a.t, a.call("GET", path+sep+q.Encode(), token, nil), 200)
		page := res.List()
		if len(page) > limit {
			a.t.Fatalf("a page of %d items, over the limit of %d", len(page), limit)
		}
		items = append(items, page...)
		next, _ := res.Body["next_cursor"].(string)
		if next == "" {
			if res.Body["next_cursor"] != nil {
				a.t.Fatalf("next_cursor = %#v, want a cursor or null", res.Body["next_cursor"])
			}
			return items, pages
		}
		if pages > 100 {
			a.t.Fatal("paging does not end")
		}
		cursor = next
	}
}

// adminUser finds acc in the admin list.
func (a *api) adminUser(admin, acc *account) map[string]any {
	a.t.Helper()
	for _, u := range expect(a.t, a.call("GET", "/api/v1/admin/users?q="+url.QueryEscape(acc.Email), admin.Access, nil), 200).List() {
		if u["id"] == acc.ID {
			return u
		}
	}
	a.t.Fatalf("%s is not in the admin list", acc.Email)
	return nil
}

func TestAdminListsUsersSearchedAndPaged(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		grace := a.platformAdmin("Grace")
		ada := a.register("Ada Lovelace")
		bob := a.invite(ada, "Bob Ada", "admin")
		eve := a.register("Eve")
		root := a.register("Root") // root@example.com is listed in PERCH_ADMIN_EMAILS
		want := []string{root.ID, eve.ID, bob.ID, ada.ID, grace.ID}
		items, pages := a.adminPages(grace.Access, "/api/v1/admin/users", 2)
		var got []string
		for _, u := range items {
			got = append(got, u["id"].(string))
		}
		if !slices.Equal(got, want) || pages != 3 {
			t.Fatalf("paged %v in %d pages, want %v in 3", got, pages, want)
		}

		b := a.adminUser(grace, bob)
		if b["email"] != bob.Email || b["name"] != "Bob Ada" || b["org_id"] != ada.OrgID || b["org_name"] != "Ada Lovelace's organisation" ||
			b["role"] != "admin" || b["platform_admin"] != false || b["email_verified"] != true || b["disabled"] != false ||
			b["created_at"] == nil || b["last_seen_at"] == nil {
			t.Fatalf("user = %v", b)
		}
		if g := a.adminUser(grace, grace); g["platform_admin"] != true || g["email_verified"] != false {
			t.Fatalf("the granted admin = %v", g)
		}
		// A listed address counts once it is verified, as for signing in.
		if r := a.adminUser(grace, root); r["platform_admin"] != false {
			t.Fatalf("unverified listed address = %v", r)
		}
		a.verifyEmail(root)
		if r := a.adminUser(grace, root); r["platform_admin"] != true {
			t.Fatalf("verified listed address = %v", r)
		}

		found := expect(t, a.call("GET", "/api/v1/admin/users?q=ADA", grace.Access, nil), 200).List()
		if len(found) != 2 || found[0]["id"] != bob.ID || found[1]["id"] != ada.ID {
			t.Fatalf("q=ADA found %v", found)
		}
		if res := expect(t, a.call("GET", "/api/v1/admin/users?q=%25", grace.Access, nil), 200); len(res.List()) != 0 || res.Body["next_cursor"] != nil {
			t.Fatalf("q=%% found %v", res.Raw)
		}

		for _, bad := range []string{"limit=0", "limit=201", "limit=x", "cursor=nonsense", "cursor=" + url.QueryEscape(strings.Repeat("x", 300)), "q=a%0Ab", "q=" + strings.Repeat("a", 201)} {
			expect(t, a.call("GET", "/api/v1/admin/users?"+bad, grace.Access, nil), 400)
		}
	})
}

func TestAdminDisablingAUserEndsEverythingOfTheirs(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		grace := a.platformAdmin("Grace")
		ada := a.register("Ada")
		a.apiToken(ada, "script")
		access, refresh := a.signIn(ada)
		hook := a.webhookToken(ada, "user", "")
		bystander := a.register("Bob")
		byHook := a.webhookToken(bystander, "user", "")
		sockets := []*wsConn{dial(t, ts, ada.Access, ""), dial(t, ts, access, ""), dial(t, ts, ada.Token, "")}
		other := dial(t, ts, bystander.Access, "")
		for _, c := range append(sockets, other) {
			c.ready()
		}
		a.post(hook, "before") // the token is now in the receivers' cache

		d := expect(t, a.call("PATCH", "/api/v1/admin/users/"+ada.ID, grace.Access, map[string]bool{"disabled": true}), 200).Data()
		if d["id"] != ada.ID || d["disabled"] != true {
			t.Fatalf("answer = %v", d)
		}
		for _, c := range sockets {
			if got := c.closeStatus(); got != websocket.StatusPolicyViolation {
				t.Fatalf("a socket of the disabled user closed with %v, want %v", got, websocket.StatusPolicyViolation)
			}
		}
		a.stillLive(byHook, "someone else's", other)
		for _, token := range []string{ada.Access, access, ada.Token} {
			expect(t, a.call("GET", "/api/v1/users/me", token, nil), 401)
		}
		expect(t, a.call("GET", "/ws", ada.Token, nil), 401)
		expect(t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": refresh}), 401)
		expect(t, a.call("POST", "/webhooks/inbound?token="+hook, "", map[string]string{"title": "x"}), 401)
		// The password is checked first: a guesser learns nothing.
		expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": ada.Email, "password": "not the password"}), 401)
		res := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": ada.Email, "password": goodPassword}), 403)
		if !strings.Contains(res.ErrorMessage(), "disabled") {
			t.Fatalf("login of a disabled account: %s", res.Raw)
		}
		if u := a.adminUser(grace, ada); u["disabled"] != true {
			t.Fatalf("listed as %v", u)
		}

		d = expect(t, a.call("PATCH", "/api/v1/admin/users/"+ada.ID, grace.Access, map[string]bool{"disabled": false}), 200).Data()
		if d["disabled"] != false {
			t.Fatalf("answer = %v", d)
		}
		newAccess, _ := a.signIn(ada)
		expect(t, a.call("GET", "/api/v1/users/me", newAccess, nil), 200)
		expect(t, a.call("GET", "/api/v1/users/me", access, nil), 401) // ended sign-ins stay ended
		expect(t, a.call("GET", "/api/v1/users/me", ada.Token, nil), 200)
		a.post(hook, "works again")

		entries, _, err := a.store.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditAdminUserUpdated, Page: perch.Page{Limit: 10}})
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 {
			t.Fatalf("%d audit entries, want 2: %+v", len(entries), entries)
		}
		for i, wantDisabled := range []bool{false, true} { // newest first
			e := entries[i]
			if e.Actor.Type != perch.ActorAdmin || e.Actor.ID != grace.ID || e.Target != (perch.AuditTarget{Type: "user", ID: ada.ID}) ||
				e.OrgID != ada.OrgID || len(e.Changes) != 1 || e.Changes["disabled"] != wantDisabled {
				t.Fatalf("entry %d = %+v", i, e)
			}
		}
	})
}

// Disabling on one instance closes the user's sockets on another.
func TestAdminDisablingReachesEveryInstance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		shared := fanout.NewLocal()
		useShared := func(o *Options) { o.Fanout, o.Hub = shared, hub.New() }
		here := newAPI(t, s, useShared)
		there := newAPI(t, s, useShared)
		ts := here.live()
		grace := here.platformAdmin("Grace")
		ada := here.register("Ada")
		here.apiToken(ada, "script")
		sockets := []*wsConn{dial(t, ts, ada.Access, ""), dial(t, ts, ada.Token, "")}
		for _, c := range sockets {
			c.ready()
		}
		expect(t, there.call("PATCH", "/api/v1/admin/users/"+ada.ID, grace.Access, map[string]bool{"disabled": true}), 200)
		for _, c := range sockets {
			if got := c.closeStatus(); got != websocket.StatusPolicyViolation {
				t.Fatalf("a socket on the other instance closed with %v, want %v", got, websocket.StatusPolicyViolation)
			}
		}
	})
}

func TestAdminDisabledUserCannotFinishADesktopSignIn(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		grace := a.platformAdmin("Grace")
		ada := a.register("Ada")
		byCode, byPoll := a.startDevice(53682), a.startDevice(53683)
		code := a.approve(ada, byCode)
		a.approveWithCode(ada, byPoll, byPoll.UserCode)
		expect(t, a.call("PATCH", "/api/v1/admin/users/"+ada.ID, grace.Access, map[string]bool{"disabled": true}), 200)
		expect(t, a.exchange(byCode, code, byCode.Verifier), 403)
		expect(t, a.deviceStatus(byPoll, byPoll.Verifier), 403)
	})
}

func TestAdminRoleChangesKeepAnAdmin(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		grace := a.platformAdmin("Grace")
		ada := a.register("Ada")
		patch := func(who *account, id string, body any) *response {
			return a.call("PATCH", "/api/v1/admin/users/"+id, who.Access, body)
		}
		if res := expect(t, patch(grace, grace.ID, map[string]bool{"disabled": true}), 409); !strings.Contains(res.ErrorMessage(), "own account") {
			t.Fatalf("disabling oneself: %s", res.Raw)
		}
		if res := expect(t, patch(grace, grace.ID, map[string]bool{"platform_admin": false}), 409); !strings.Contains(res.ErrorMessage(), "last platform admin") {
			t.Fatalf("the last admin stepping down: %s", res.Raw)
		}
		expect(t, patch(grace, "aaaaaaaaaaaaaaaaaaaa", map[string]bool{"disabled": true}), 404)
		expect(t, patch(grace, "aaaaaaaaaaaaaaaaaaaa", map[string]bool{"platform_admin": false}), 404)
		wantField(t, expect(t, patch(grace, ada.ID, map[string]any{"disabled": "yes"}), 400), "disabled")
		wantField(t, expect(t, patch(grace, ada.ID, map[string]any{"platform_admin": 1}), 400), "platform_admin")
		expect(t, patch(grace, ada.ID, "[]"), 400)
		// Nothing to change: the user as they are, and nothing audited.
		if d := expect(t, patch(grace, ada.ID, map[string]any{}), 200).Data(); d["id"] != ada.ID || d["platform_admin"] != false {
			t.Fatalf("empty change = %v", d)
		}

		if d := expect(t, patch(grace, ada.ID, map[string]bool{"platform_admin": true}), 200).Data(); d["platform_admin"] != true {
			t.Fatalf("granting = %v", d)
		}
		expect(t, a.call("GET", "/api/v1/admin/plans", ada.Access, nil), 200)
		// With another admin, stepping down is allowed, and takes effect at once.
		if d := expect(t, patch(grace, grace.ID, map[string]bool{"platform_admin": false}), 200).Data(); d["platform_admin"] != false {
			t.Fatalf("stepping down = %v", d)
		}
		expect(t, a.call("GET", "/api/v1/admin/plans", grace.Access, nil), 403)
		expect(t, patch(ada, ada.ID, map[string]bool{"platform_admin": false}), 409)

		// An address in PERCH_ADMIN_EMAILS stays an admin whatever the grant.
		root := a.register("Root")
		a.verifyEmail(root)
		res := expect(t, patch(ada, root.ID, map[string]bool{"platform_admin": false}), 409)
		if !strings.Contains(res.ErrorMessage(), "PERCH_ADMIN_EMAILS") {
			t.Fatalf("withdrawing a listed admin: %s", res.Raw)
		}
		// Now that root counts, ada may step down.
		expect(t, patch(ada, ada.ID, map[string]bool{"platform_admin": false}), 200)
		expect(t, patch(root, ada.ID, map[string]bool{"disabled": true}), 200)

		entries, _, err := a.store.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditAdminUserUpdated, Page: perch.Page{Limit: 10}})
		if err != nil {
			t.Fatal(err)
		}
		var changes []string
		for _, e := range slices.Backward(entries) {
			if e.Actor.Type != perch.ActorAdmin {
				t.Fatalf("entry by %+v", e.Actor)
			}
			for k, v := range e.Changes {
				changes = append(changes, e.Actor.Email+" "+e.Target.ID+" "+k+"="+map[bool]string{true: "true", false: "false"}[v.(bool)])
			}
		}
		want := []string{
			grace.Email + " " + ada.ID + " platform_admin=true",
			grace.Email + " " + grace.ID + " platform_admin=false",
			ada.Email + " " + ada.ID + " platform_admin=false",
			root.Email + " " + ada.ID + " disabled=true",
		}
		if !slices.Equal(changes, want) {
			t.Fatalf("audited\n%v\nwant\n%v", changes, want)
		}
	})
}

func TestLastSeenAtFollowsSignInsAndRequests(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		grace := a.platformAdmin("Grace")
		ada := a.register("Ada")
		seen := func() string {
			t.Helper()
			v, _ := a.adminUser(grace, ada)["last_seen_at"].(string)
			return v
		}
		registered := a.clock.Now().Format(time.RFC3339)
		if got := seen(); got != registered {
			t.Fatalf("last seen %q, want the sign-up at %q", got, registered)
		}
		a.clock.Advance(30 * time.Second)
		expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200)
		if got := seen(); got != registered {
			t.Fatalf("last seen %q: written again within the minute", got)
		}
		a.clock.Advance(31 * time.Second)
		expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200)
		if got, want := seen(), a.clock.Now().Format(time.RFC3339); got != want {
			t.Fatalf("last seen %q, want %q", got, want)
		}
	})
}
