package server

import (
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func TestOrgShowsPlanAndSeats(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		a.invite(ada, "Bob", "member")
		expect(t, a.call("POST", "/api/v1/org/invitations", ada.Access, map[string]string{"email": "carol@example.com"}), 201)
		org := expect(t, a.call("GET", "/api/v1/org", ada.Access, nil), 200).Data()
		want := map[string]any{"id": ada.OrgID, "name": "Ada's organisation", "plan": "team", "plan_status": "trialing",
			"seat_count": 2.0, "pending_invitations": 1.0, "max_seats": 25.0}
		for k, v := range want {
			if org[k] != v {
				t.Errorf("org[%s] = %v, want %v", k, org[k], v)
			}
		}
		for _, k := range []string{"slug", "created_at", "trial_ends_at"} {
			if org[k] == nil || org[k] == "" {
				t.Errorf("org lacks %s", k)
			}
		}
	})
}

func TestRenameOrg(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		carol := a.invite(ada, "Carol", "admin")
		expect(t, a.call("PATCH", "/api/v1/org", bob.Access, map[string]string{"name": "Bob's now"}), 403)
		res := expect(t, a.call("PATCH", "/api/v1/org", carol.Access, map[string]string{"name": "  "}), 422)
		if res.Fields()["name"] != "is required" {
			t.Fatalf("fields = %v", res.Fields())
		}
		org := expect(t, a.call("PATCH", "/api/v1/org", carol.Access, map[string]string{"name": " Analytical Engines "}), 200).Data()
		if org["name"] != "Analytical Engines" {
			t.Fatalf("name = %v", org["name"])
		}
		if got := expect(t, a.call("GET", "/api/v1/org", bob.Access, nil), 200).Data()["name"]; got != "Analytical Engines" {
			t.Fatalf("Bob sees %v", got)
		}
	})
}

func TestMembersAndRoles(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		carol := a.invite(ada, "Carol", "admin")

		list := expect(t, a.call("GET", "/api/v1/org/members", bob.Access, nil), 200).List()
		if len(list) != 3 || list[0]["id"] != ada.ID || list[0]["role"] != "owner" || list[1]["email"] != "bob@example.com" || list[2]["role"] != "admin" {
			t.Fatalf("members = %v", list)
		}
		for _, f := range []string{"id", "name", "email", "role", "joined_at", "teams"} {
			if _, ok := list[1][f]; !ok {
				t.Errorf("member lacks %s", f)
			}
		}

		bobPath := "/api/v1/org/members/" + bob.ID
		expect(t, a.call("PATCH", bobPath, bob.Access, map[string]string{"role": "admin"}), 403)
		expect(t, a.call("PATCH", bobPath, carol.Access, map[string]string{"role": "boss"}), 422)
		expect(t, a.call("PATCH", bobPath, carol.Access, map[string]string{"role": "owner"}), 403) // admins make no owners
		if got := expect(t, a.call("PATCH", bobPath, carol.Access, map[string]string{"role": "admin"}), 200).Data(); got["role"] != "admin" {
			t.Fatalf("promoted = %v", got)
		}
		expect(t, a.call("PATCH", "/api/v1/org/members/"+ada.ID, carol.Access, map[string]string{"role": "member"}), 403)
		expect(t, a.call("PATCH", "/api/v1/org/members/"+ada.ID, ada.Access, map[string]string{"role": "admin"}), 409) // the last owner
		expect(t, a.call("PATCH", bobPath, ada.Access, map[string]string{"role": "owner"}), 200)
		expect(t, a.call("PATCH", "/api/v1/org/members/"+ada.ID, ada.Access, map[string]string{"role": "admin"}), 200)
		expect(t, a.call("PATCH", "/api/v1/org/members/nobody", bob.Access, map[string]string{"role": "admin"}), 404)
	})
}

func TestRemovedMemberLosesAccessAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		carol := a.invite(ada, "Carol", "admin")
		team := expect(t, a.call("POST", "/api/v1/org/teams", ada.Access, map[string]string{"name": "Ops"}), 201).Data()["id"].(string)
		expect(t, a.call("PUT", "/api/v1/org/teams/"+team+"/members/"+bob.ID, ada.Access, nil), 204)

		expect(t, a.call("DELETE", "/api/v1/org/members/"+ada.ID, carol.Access, nil), 403) // admins do not remove owners
		expect(t, a.call("DELETE", "/api/v1/org/members/"+ada.ID, ada.Access, nil), 409)   // the last owner cannot leave
		expect(t, a.call("DELETE", "/api/v1/org/members/"+carol.ID, bob.Access, nil), 403)
		expect(t, a.call("DELETE", "/api/v1/org/members/"+bob.ID, carol.Access, nil), 204)

		// Bob's next request already sees a new organisation of his own.
		me := expect(t, a.call("GET", "/api/v1/users/me", bob.Access, nil), 200).Data()
		if me["org_id"] == ada.OrgID || me["org_role"] != "owner" {
			t.Fatalf("after removal: %v", me)
		}
		expect(t, a.call("GET", "/api/v1/org/teams/"+team, bob.Access, nil), 404)
		if org := expect(t, a.call("GET", "/api/v1/org", bob.Access, nil), 200).Data(); org["name"] != "Bob's organisation" {
			t.Fatalf("Bob's org = %v", org)
		}
		teamNow := expect(t, a.call("GET", "/api/v1/org/teams/"+team, ada.Access, nil), 200).Data()
		if teamNow["member_count"] != 0.0 {
			t.Fatalf("team still counts Bob: %v", teamNow)
		}
		// A member may leave on their own.
		expect(t, a.call("DELETE", "/api/v1/org/members/"+carol.ID, carol.Access, nil), 204)
		if n := len(expect(t, a.call("GET", "/api/v1/org/members", ada.Access, nil), 200).List()); n != 1 {
			t.Fatalf("%d members left, want 1", n)
		}
	})
}

func TestTeams(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		eve := a.register("Eve") // another organisation

		expect(t, a.call("POST", "/api/v1/org/teams", bob.Access, map[string]string{"name": "Rogue"}), 403)
		res := expect(t, a.call("POST", "/api/v1/org/teams", ada.Access, map[string]string{"name": ""}), 422)
		if res.Fields()["name"] != "is required" {
			t.Fatalf("fields = %v", res.Fields())
		}
		ops := expect(t, a.call("POST", "/api/v1/org/teams", ada.Access, map[string]string{"name": "Ops", "description": "On call"}), 201).Data()
		expect(t, a.call("POST", "/api/v1/org/teams", ada.Access, map[string]string{"name": "ops"}), 409)
		expect(t, a.call("POST", "/api/v1/org/teams", ada.Access, map[string]string{"name": "Billing"}), 201)
		path := "/api/v1/org/teams/" + ops["id"].(string)

		expect(t, a.call("PUT", path+"/members/"+bob.ID, ada.Access, nil), 204)
		expect(t, a.call("PUT", path+"/members/"+bob.ID, ada.Access, nil), 204) // again: harmless
		expect(t, a.call("PUT", path+"/members/"+eve.ID, ada.Access, nil), 404) // not in the organisation
		expect(t, a.call("PUT", path+"/members/"+ada.ID, bob.Access, nil), 403)

		list := expect(t, a.call("GET", "/api/v1/org/teams", bob.Access, nil), 200).List()
		if len(list) != 2 || list[0]["name"] != "Billing" || list[1]["name"] != "Ops" || list[1]["member_count"] != 1.0 {
			t.Fatalf("teams = %v", list)
		}
		team := expect(t, a.call("GET", path, bob.Access, nil), 200).Data()
		members := team["members"].([]any)
		if len(members) != 1 || members[0].(map[string]any)["id"] != bob.ID || team["description"] != "On call" {
			t.Fatalf("team = %v", team)
		}
		expect(t, a.call("GET", path, eve.Access, nil), 404)

		upd := expect(t, a.call("PATCH", path, ada.Access, map[string]string{"name": "Operations"}), 200).Data()
		if upd["name"] != "Operations" || upd["description"] != "On call" {
			t.Fatalf("updated = %v", upd)
		}
		expect(t, a.call("PATCH", path, ada.Access, map[string]string{"name": "billing"}), 409)
		expect(t, a.call("PATCH", path, bob.Access, map[string]string{"name": "Mine"}), 403)

		expect(t, a.call("DELETE", path+"/members/"+bob.ID, ada.Access, nil), 204)
		expect(t, a.call("DELETE", path+"/members/"+bob.ID, ada.Access, nil), 404)
		expect(t, a.call("DELETE", path, bob.Access, nil), 403)
		expect(t, a.call("DELETE", path, eve.Access, nil), 404) // Eve manages her own organisation, which has no such team
		expect(t, a.call("DELETE", path, ada.Access, nil), 204)
		expect(t, a.call("GET", path, ada.Access, nil), 404)
	})
}
