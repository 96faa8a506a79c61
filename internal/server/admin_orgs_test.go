package server

import (
	"slices"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func TestAdminListsAndReadsOrgs(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		grace := a.platformAdmin("Grace")
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "owner")
		a.invite(ada, "Carol", "member")
		eve := a.register("Eve")
		dan := a.register("Dan")
		items, pages := a.adminPages(grace.Access, "/api/v1/admin/orgs", 2)
		var got []string
		for _, o := range items {
			got = append(got, o["id"].(string))
		}
		if want := []string{dan.OrgID, eve.OrgID, ada.OrgID, grace.OrgID}; !slices.Equal(got, want) || pages != 2 {
			t.Fatalf("paged %v in %d pages, want %v in 2", got, pages, want)
		}
		found := expect(t, a.call("GET", "/api/v1/admin/orgs?q=ADA", grace.Access, nil), 200).List()
		if len(found) != 1 {
			t.Fatalf("q=ADA found %v", found)
		}
		o := found[0]
		if o["id"] != ada.OrgID || o["name"] != "Ada's organisation" || o["plan"] != "team" || o["status"] != "trialing" ||
			o["seat_count"] != 3.0 || o["max_seats"] != 25.0 || o["created_at"] == nil {
			t.Fatalf("org = %v", o)
		}
		expect(t, a.call("GET", "/api/v1/admin/orgs?cursor=bm9wZQ", grace.Access, nil), 400)
		expect(t, a.call("GET", "/api/v1/admin/orgs?limit=500", grace.Access, nil), 400)

		expect(t, a.call("POST", "/api/v1/org/invitations", ada.Access, map[string]string{"email": "frank@example.com"}), 201)
		d := expect(t, a.call("GET", "/api/v1/admin/orgs/"+ada.OrgID, grace.Access, nil), 200).Data()
		owners, _ := d["owners"].([]any)
		if d["seat_count"] != 3.0 || d["pending_invitations"] != 1.0 || d["teams"] != 0.0 || d["trial_ends_at"] == nil || d["slug"] == "" ||
			len(owners) != 2 || owners[0].(map[string]any)["email"] != ada.Email || owners[1].(map[string]any)["id"] != bob.ID {
			t.Fatalf("detail = %v", d)
		}
		expect(t, a.call("GET", "/api/v1/admin/orgs/aaaaaaaaaaaaaaaaaaaa", grace.Access, nil), 404)
	})
}

func TestAdminChangesAnOrgsPlan(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		grace := a.platformAdmin("Grace")
		ada := a.register("Ada")
		path := "/api/v1/admin/orgs/" + ada.OrgID
		before := expect(t, a.call("GET", path, grace.Access, nil), 200).Data()

		res := expect(t, a.call("PATCH", path, grace.Access, map[string]any{"plan": "platinum", "status": "gone", "trial_ends_at": "tomorrow"}), 422)
		for _, f := range []string{"plan", "status", "trial_ends_at"} {
			wantField(t, res, f)
		}
		wantField(t, expect(t, a.call("PATCH", path, grace.Access, map[string]any{"trial_ends_at": 5}), 400), "trial_ends_at")
		wantField(t, expect(t, a.call("PATCH", path, grace.Access, map[string]any{"plan": 5}), 400), "plan")
		expect(t, a.call("PATCH", "/api/v1/admin/orgs/aaaaaaaaaaaaaaaaaaaa", grace.Access, map[string]string{"status": "active"}), 404)

		ends := time.Date(2027, 1, 31, 12, 0, 0, 0, time.UTC)
		d := expect(t, a.call("PATCH", path, grace.Access, map[string]any{"plan": "enterprise", "status": "paused", "trial_ends_at": "2027-01-31T13:00:00+01:00"}), 200).Data()
		if d["plan"] != "enterprise" || d["status"] != "paused" || d["max_seats"] != 1000.0 || d["trial_ends_at"] != ends.Format(time.RFC3339) {
			t.Fatalf("after = %v", d)
		}
		// The organisation's own view agrees.
		org := expect(t, a.call("GET", "/api/v1/org", ada.Access, nil), 200).Data()
		if org["plan"] != "enterprise" || org["plan_status"] != "paused" {
			t.Fatalf("org = %v", org)
		}
		if d := expect(t, a.call("PATCH", path, grace.Access, map[string]any{"trial_ends_at": nil}), 200).Data(); d["trial_ends_at"] != nil || d["plan"] != "enterprise" {
			t.Fatalf("clearing the trial = %v", d)
		}
		expect(t, a.call("PATCH", path, grace.Access, map[string]any{}), 200)

		entries, _, err := a.store.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditAdminOrgUpdated, Page: perch.Page{Limit: 10}})
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 {
			t.Fatalf("%d entries, want 2: %+v", len(entries), entries)
		}
		first, second := entries[1], entries[0]
		for _, e := range entries {
			if e.Actor.Type != perch.ActorAdmin || e.Actor.ID != grace.ID || e.Target != (perch.AuditTarget{Type: "org", ID: ada.OrgID}) || e.OrgID != ada.OrgID {
				t.Fatalf("entry = %+v", e)
			}
		}
		fromTo := func(e *perch.AuditEntry, key string) (any, any) {
			m, _ := e.Changes[key].(map[string]any)
			return m["from"], m["to"]
		}
		if from, to := fromTo(first, "plan"); from != "team" || to != "enterprise" {
			t.Fatalf("plan %v → %v", from, to)
		}
		if from, to := fromTo(first, "status"); from != "trialing" || to != "paused" {
			t.Fatalf("status %v → %v", from, to)
		}
		if from, to := fromTo(first, "trial_ends_at"); from != before["trial_ends_at"] || to != ends.Format(time.RFC3339) {
			t.Fatalf("trial %v → %v", from, to)
		}
		if from, to := fromTo(second, "trial_ends_at"); len(second.Changes) != 1 || from != ends.Format(time.RFC3339) || to != nil {
			t.Fatalf("second change = %v", second.Changes)
		}
	})
}

func TestAdminPlansCountSubscribers(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		grace := a.platformAdmin("Grace")
		ada, bob, carol := a.register("Ada"), a.register("Bob"), a.register("Carol")
		a.invite(ada, "Dan", "member") // joins Ada's organisation: no new subscriber
		for _, c := range []struct {
			acc          *account
			plan, status string
		}{{ada, "solo", "active"}, {bob, "solo", "canceled"}, {carol, "enterprise", "past_due"}} {
			expect(t, a.call("PATCH", "/api/v1/admin/orgs/"+c.acc.OrgID, grace.Access, map[string]string{"plan": c.plan, "status": c.status}), 200)
		}
		plans := expect(t, a.call("GET", "/api/v1/admin/plans", grace.Access, nil), 200).List()
		got := map[string]any{}
		var order []string
		for _, p := range plans {
			got[p["slug"].(string)] = p["subscribers"]
			order = append(order, p["slug"].(string))
		}
		// Grace's organisation is still on its team trial.
		if !slices.Equal(order, []string{"solo", "team", "enterprise"}) || got["solo"] != 1.0 || got["team"] != 1.0 || got["enterprise"] != 1.0 {
			t.Fatalf("plans %v, subscribers %v", order, got)
		}
	})
}
