package server

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/scim"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// newGroup is a SCIM Group for POST or PUT.
func newGroup(name string, memberIDs ...string) map[string]any {
	members := []any{}
	for _, id := range memberIDs {
		members = append(members, map[string]any{"value": id})
	}
	return map[string]any{"schemas": []string{scim.GroupSchema}, "displayName": name, "members": members}
}

// memberIDs are the member values of a Group answered, sorted.
func memberIDs(ans *scimAnswer) []string {
	var ids []string
	members, _ := ans.Body["members"].([]any)
	for _, m := range members {
		ids = append(ids, m.(map[string]any)["value"].(string))
	}
	slices.Sort(ids)
	return ids
}

// sorted is ids, sorted.
func sorted(ids ...string) []string { return slices.Sorted(slices.Values(ids)) }

// teamMembers are the ids of the team's members as the dashboard's API
// answers them, sorted.
func (a *api) teamMembers(owner *account, teamID string) []string {
	a.t.Helper()
	var ids []string
	team := expect(a.t, a.call("GET", "/api/v1/org/teams/"+teamID, owner.Access, nil), 200).Data()
	members, _ := team["members"].([]any)
	for _, m := range members {
		ids = append(ids, m.(map[string]any)["id"].(string))
	}
	slices.Sort(ids)
	return ids
}

// auditedBySCIM fails unless the newest entries of action include one
// about target by a SCIM token, in the organisation, with changes holding
// want's pairs.
func (a *api) auditedBySCIM(orgID, action, target string, want map[string]any) {
	a.t.Helper()
	entries, _, err := a.store.AuditLog(a.t.Context(), perch.AuditFilter{Action: action, OrgID: orgID, Page: perch.Page{Limit: 100}})
	if err != nil {
		a.t.Fatal(err)
	}
	for _, e := range entries {
		if e.Action != action || e.Target.ID != target {
			continue
		}
		match := true
		for k, v := range want {
			match = match && jsonEqual(e.Changes[k], v)
		}
		if !match {
			continue
		}
		if e.Actor.Type != perch.ActorSCIM || !strings.HasPrefix(e.Actor.ID, perch.SCIMTokenPrefix) || e.OrgID != orgID {
			a.t.Errorf("%s entry by %+v in %q", action, e.Actor, e.OrgID)
		}
		return
	}
	a.t.Errorf("no %s entry about %s with %v", action, target, want)
}

// TestSCIMGroupsAreTeams: a Group is a team of the organisation, made,
// found, paged, replaced, patched and deleted by the identity provider,
// and seen in the dashboard's API the same; teams made in the dashboard
// are Groups too.
func TestSCIMGroupsAreTeams(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner := a.register("Olive Owner")
		bob := a.invite(owner, "Bob Member", "member")
		idp := a.scimClient(owner, "test", "example.com")
		cy := idp.do("POST", "/scim/v2/Users", newUser("cy@example.com")).want(t, 201).str("id")

		made := idp.do("POST", "/scim/v2/Groups", newGroup(" On call ", bob.ID, cy)).want(t, 201)
		id := made.str("id")
		if made.str("displayName") != "On call" || made.str("meta.resourceType") != "Group" || !slices.Equal(memberIDs(made), sorted(bob.ID, cy)) ||
			made.Header.Get("Location") != a.srv.scimBase()+"/Groups/"+id || made.str("meta.location") != made.Header.Get("Location") ||
			made.Header.Get("ETag") != made.str("meta.version") || !strings.HasPrefix(made.str("meta.version"), `W/"`) {
			t.Fatalf("created %s %v", made.Raw, made.Header)
		}
		if ref := lookup(made.Body, "members.0.$ref").(string); !strings.HasPrefix(ref, a.srv.scimBase()+"/Users/") || lookup(made.Body, "members.0.type") != "User" {
			t.Errorf("a member's $ref %q", ref)
		}
		if got := a.teamMembers(owner, id); !slices.Equal(got, sorted(bob.ID, cy)) {
			t.Errorf("the team's members in the dashboard: %v", got)
		}
		a.auditedBySCIM(owner.OrgID, perch.AuditTeamCreated, id, map[string]any{"name": "On call"})
		a.auditedBySCIM(owner.OrgID, perch.AuditTeamMemberAdded, id, map[string]any{"user_id": bob.ID})
		a.auditedBySCIM(owner.OrgID, perch.AuditTeamMemberAdded, id, map[string]any{"user_id": cy})

		// A team made in the dashboard is a Group too, after the first.
		a.clock.Advance(time.Second)
		dash := expect(t, a.call("POST", "/api/v1/org/teams", owner.Access, map[string]string{"name": "Dashboard team"}), 201).Data()["id"].(string)
		all := idp.do("GET", "/scim/v2/Groups", nil).want(t, 200)
		if all.Body["totalResults"] != 2.0 || lookup(all.Body, "Resources.0.id") != id || lookup(all.Body, "Resources.1.id") != dash ||
			lookup(all.Body, "Resources.1.members") != nil {
			t.Fatalf("all groups: %s", all.Raw)
		}
		for _, c := range []struct {
			query string
			ids   []string
			total float64
		}{
			{"filter=" + url.QueryEscape(`displayName eq "ON CALL"`), []string{id}, 1},
			{"filter=" + url.QueryEscape(`urn:ietf:params:scim:schemas:core:2.0:Group:displayName eq "Dashboard team"`), []string{dash}, 1},
			{"filter=" + url.QueryEscape(`displayName eq "nothing"`), nil, 0},
			{"startIndex=2&count=1", []string{dash}, 2},
			{"count=0", nil, 2},
		} {
			got := idp.do("GET", "/scim/v2/Groups?"+c.query, nil).want(t, 200)
			var ids []string
			for _, g := range got.Body["Resources"].([]any) {
				ids = append(ids, g.(map[string]any)["id"].(string))
			}
			if !slices.Equal(ids, c.ids) || got.Body["totalResults"] != c.total {
				t.Errorf("%s: %s", c.query, got.Raw)
			}
		}
		excluded := idp.do("GET", "/scim/v2/Groups?excludedAttributes=members&filter="+url.QueryEscape(`displayName eq "On call"`), nil).want(t, 200)
		if lookup(excluded.Body, "Resources.0.members") != nil || lookup(excluded.Body, "Resources.0.displayName") != "On call" ||
			lookup(excluded.Body, "Resources.0.meta.version") != made.str("meta.version") {
			t.Errorf("excludedAttributes=members (with the group's one version): %s", excluded.Raw)
		}
		if one := idp.do("GET", "/scim/v2/Groups/"+id+"?attributes=displayName", nil).want(t, 200); one.Body["members"] != nil {
			t.Errorf("attributes=displayName: %s", one.Raw)
		}
		got := idp.do("GET", "/scim/v2/Groups/"+id, nil).want(t, 200)
		if got.str("meta.version") != made.str("meta.version") || !slices.Equal(memberIDs(got), sorted(bob.ID, cy)) {
			t.Errorf("read back: %s", got.Raw)
		}
		idp.do("GET", "/scim/v2/Groups/"+id, nil, "If-None-Match", got.str("meta.version")).want(t, 304)

		// PUT: the whole group; bob leaves, the owner joins.
		a.clock.Advance(time.Second)
		put := idp.do("PUT", "/scim/v2/Groups/"+id, map[string]any{"displayName": "On call", "externalId": "ext-oc",
			"members": []any{map[string]any{"value": cy}, map[string]any{"value": owner.ID}}}, "If-Match", got.str("meta.version")).want(t, 200)
		if put.str("externalId") != "ext-oc" || !slices.Equal(memberIDs(put), sorted(cy, owner.ID)) || put.str("meta.version") == got.str("meta.version") ||
			put.str("meta.lastModified") == put.str("meta.created") {
			t.Fatalf("replaced: %s", put.Raw)
		}
		a.auditedBySCIM(owner.OrgID, perch.AuditTeamMemberRemoved, id, map[string]any{"user_id": bob.ID})
		a.auditedBySCIM(owner.OrgID, perch.AuditTeamMemberAdded, id, map[string]any{"user_id": owner.ID})
		idp.do("PUT", "/scim/v2/Groups/"+id, newGroup("On call"), "If-Match", got.str("meta.version")).want(t, 412)
		if byExt := idp.do("GET", "/scim/v2/Groups?filter="+url.QueryEscape(`externalId eq "ext-oc"`), nil).want(t, 200); byExt.Body["totalResults"] != 1.0 {
			t.Errorf("by externalId: %s", byExt.Raw)
		}

		// PATCH: rename without a path, add, remove by filter.
		renamed := idp.do("PATCH", "/scim/v2/Groups/"+id, map[string]any{"schemas": []string{scim.PatchSchema}, "Operations": []any{
			map[string]any{"op": "replace", "value": map[string]any{"id": id, "displayName": "On call (EU)"}},
			map[string]any{"op": "Add", "path": "members", "value": []any{map[string]any{"value": bob.ID}}},
			map[string]any{"op": "remove", "path": `members[value eq "` + owner.ID + `"]`},
		}}).want(t, 200)
		if renamed.str("displayName") != "On call (EU)" || !slices.Equal(memberIDs(renamed), sorted(bob.ID, cy)) {
			t.Fatalf("patched: %s", renamed.Raw)
		}
		a.auditedBySCIM(owner.OrgID, perch.AuditTeamUpdated, id, map[string]any{"name": map[string]any{"from": "On call", "to": "On call (EU)"}})
		team := expect(t, a.call("GET", "/api/v1/org/teams/"+id, owner.Access, nil), 200).Data()
		if team["name"] != "On call (EU)" {
			t.Errorf("the team in the dashboard: %v", team)
		}

		// DELETE: the team goes; its members stay in the organisation.
		idp.do("DELETE", "/scim/v2/Groups/"+id, nil, "If-Match", got.str("meta.version")).want(t, 412)
		if ans := idp.do("DELETE", "/scim/v2/Groups/"+id, nil).want(t, 204); ans.Raw != "" {
			t.Errorf("204 with a body %q", ans.Raw)
		}
		a.auditedBySCIM(owner.OrgID, perch.AuditTeamDeleted, id, map[string]any{"name": "On call (EU)"})
		idp.do("GET", "/scim/v2/Groups/"+id, nil).want(t, 404)
		idp.do("DELETE", "/scim/v2/Groups/"+id, nil).want(t, 404)
		expect(t, a.call("GET", "/api/v1/org/teams/"+id, owner.Access, nil), 404)
		idp.do("GET", "/scim/v2/Users/"+bob.ID, nil).want(t, 200)
	})
}

// TestSCIMGroupsRefuse: names, members and filters Perch does not take,
// each the right SCIM error, and nothing changed.
func TestSCIMGroupsRefuse(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner, eve := a.register("Olive Owner"), a.register("Eve Outsider")
		bob := a.invite(owner, "Bob Member", "member")
		idp := a.scimClient(owner, "test")
		ops := idp.do("POST", "/scim/v2/Groups", newGroup("Ops", bob.ID)).want(t, 201)
		idp.do("POST", "/scim/v2/Groups", newGroup("Dev")).want(t, 201)
		path := "/scim/v2/Groups/" + ops.str("id")
		before := idp.do("GET", path, nil).want(t, 200).Raw

		for _, f := range []string{`displayName sw "O"`, `members.value eq "x"`, `displayName eq "a" or externalId eq "b"`,
			`displayName eq true`, `id eq "x"`, `displayName eq`} {
			idp.do("GET", "/scim/v2/Groups?filter="+url.QueryEscape(f), nil).want(t, 400, scim.InvalidFilter)
		}
		idp.do("GET", "/scim/v2/Groups?startIndex=first", nil).want(t, 400, scim.InvalidValue)

		big := strings.Repeat("x", 70<<10)
		patch := func(ops ...any) map[string]any {
			return map[string]any{"schemas": []string{scim.PatchSchema}, "Operations": ops}
		}
		for _, c := range []struct {
			name, method, path string
			body               any
			status             int
			scimType           string
		}{
			{"a name taken", "POST", "/scim/v2/Groups", newGroup("OPS"), 409, scim.Uniqueness},
			{"a rename to a name taken", "PATCH", path, patchOp("replace", "displayName", "dev"), 409, scim.Uniqueness},
			{"another organisation's user", "POST", "/scim/v2/Groups", newGroup("X", eve.ID), 400, scim.InvalidValue},
			{"nobody's id", "POST", "/scim/v2/Groups", newGroup("X", "nobody"), 400, scim.InvalidValue},
			{"adding another organisation's user", "PATCH", path, patchOp("add", "members", []any{map[string]any{"value": eve.ID}}), 400, scim.InvalidValue},
			{"a replace with nobody", "PUT", path, newGroup("Ops", bob.ID, "nobody"), 400, scim.InvalidValue},
			{"no displayName", "POST", "/scim/v2/Groups", map[string]any{"members": []any{}}, 400, scim.InvalidValue},
			{"a name too long for a team", "POST", "/scim/v2/Groups", newGroup(strings.Repeat("n", 101)), 400, scim.InvalidValue},
			{"a name on two lines", "POST", "/scim/v2/Groups", newGroup("a\nb"), 400, scim.InvalidValue},
			{"an unknown attribute", "POST", "/scim/v2/Groups", map[string]any{"displayName": "X", "owners": []any{}}, 400, scim.InvalidSyntax},
			{"a group as a member", "POST", "/scim/v2/Groups", map[string]any{"displayName": "X", "members": []any{map[string]any{"value": "g", "type": "Group"}}}, 400, scim.InvalidValue},
			{"too large", "POST", "/scim/v2/Groups", newGroup(big), 413, ""},
			{"patch: remove displayName", "PATCH", path, patchOp("remove", "displayName", nil), 400, scim.Mutability},
			{"patch: an unknown path", "PATCH", path, patchOp("add", "owners", "x"), 400, scim.InvalidPath},
			{"patch: the second fails", "PATCH", path, patch(map[string]any{"op": "add", "path": "members", "value": []any{}},
				map[string]any{"op": "frob"}), 400, scim.InvalidSyntax},
			{"patch: not JSON", "PATCH", path, "{", 400, scim.InvalidSyntax},
		} {
			t.Run(c.name, func(t *testing.T) {
				idp.do(c.method, c.path, c.body).want(t, c.status, c.scimType)
			})
		}
		if after := idp.do("GET", path, nil).want(t, 200).Raw; after != before {
			t.Errorf("refused requests changed the group:\nbefore %s\n after %s", before, after)
		}
		if all := idp.do("GET", "/scim/v2/Groups", nil).want(t, 200); all.Body["totalResults"] != 2.0 {
			t.Errorf("refused requests made groups: %s", all.Raw)
		}
	})
}

// TestSCIMGroupsAreTheOrganisations: a token reaches its own
// organisation's teams only, and puts only its own people in them.
func TestSCIMGroupsAreTheOrganisations(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner, other := a.register("Olive Owner"), a.register("Oscar Other")
		ours, theirs := a.scimClient(owner, "ours"), a.scimClient(other, "theirs")
		ops := ours.do("POST", "/scim/v2/Groups", newGroup("Ops", owner.ID)).want(t, 201)
		path := "/scim/v2/Groups/" + ops.str("id")
		before := ours.do("GET", path, nil).want(t, 200).Raw

		theirs.do("GET", path, nil).want(t, 404)
		theirs.do("PUT", path, newGroup("Taken over", other.ID)).want(t, 404)
		theirs.do("PATCH", path, patchOp("add", "members", []any{map[string]any{"value": other.ID}})).want(t, 404)
		theirs.do("DELETE", path, nil).want(t, 404)
		if list := theirs.do("GET", "/scim/v2/Groups", nil).want(t, 200); list.Body["totalResults"] != 0.0 {
			t.Errorf("another organisation's list: %s", list.Raw)
		}
		if found := theirs.do("GET", "/scim/v2/Groups?filter="+url.QueryEscape(`displayName eq "Ops"`), nil).want(t, 200); found.Body["totalResults"] != 0.0 {
			t.Errorf("another organisation found Ops: %s", found.Raw)
		}
		// Their own group cannot hold our people, nor their token read them.
		theirs.do("POST", "/scim/v2/Groups", newGroup("Theirs", owner.ID)).want(t, 400, scim.InvalidValue)
		theirs.do("GET", "/scim/v2/Users/"+owner.ID, nil).want(t, 404)
		if after := ours.do("GET", path, nil).want(t, 200).Raw; after != before {
			t.Errorf("another organisation's token changed Ops:\n%s\n%s", before, after)
		}
		(&scimIdP{t: t, a: a, token: owner.Access}).do("GET", "/scim/v2/Groups", nil).want(t, 401)
	})
}

// TestSCIMGroupMembershipReachesSockets: a member added to a team through
// SCIM hears the team's notifications at once, and stops when removed:
// their open WebSocket reconnects to its new audience (1012), as after a
// change in the dashboard.
func TestSCIMGroupMembershipReachesSockets(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		owner := a.register("Olive Owner")
		bob := a.invite(owner, "Bob Member", "member")
		idp := a.scimClient(owner, "Okta SCIM Client 1.0.0")
		team := idp.do("POST", "/scim/v2/Groups", newGroup("Ops")).want(t, 201).str("id")
		teamToken := a.webhookToken(owner, "team", team)

		c := dial(t, ts, bob.Access, "")
		c.ready()
		idp.do("PATCH", "/scim/v2/Groups/"+team, patchOp("add", "members", []any{map[string]any{"value": bob.ID}})).want(t, 200)
		if got := c.closeStatus(); got != websocket.StatusServiceRestart {
			t.Fatalf("after joining: close status %v, want 1012", got)
		}
		c = dial(t, ts, bob.Access, "")
		c.ready()
		a.post(teamToken, "for the team")
		if n := c.next().notification(t); n.Title != "for the team" {
			t.Fatalf("a member of the team got %v", n)
		}

		idp.do("PATCH", "/scim/v2/Groups/"+team, map[string]any{"schemas": []string{scim.PatchSchema}, "Operations": []any{
			map[string]any{"op": "Remove", "path": "members", "value": []any{map[string]any{"value": bob.ID}}}}}).want(t, 200)
		if got := c.closeStatus(); got != websocket.StatusServiceRestart {
			t.Fatalf("after leaving: close status %v, want 1012", got)
		}
		c = dial(t, ts, bob.Access, "")
		c.ready()
		a.post(teamToken, "for the team, again")
		a.post("", "sentinel")
		if got := c.until("sentinel"); len(got) != 0 {
			t.Fatalf("after leaving the team bob got %v", got)
		}

		// Deleting the group ends its token, as deleting the team does.
		idp.do("PUT", "/scim/v2/Groups/"+team, newGroup("Ops", bob.ID)).want(t, 200)
		if got := c.closeStatus(); got != websocket.StatusServiceRestart {
			t.Fatalf("after a PUT that adds bob: close status %v, want 1012", got)
		}
		idp.do("DELETE", "/scim/v2/Groups/"+team, nil).want(t, 204)
		expect(t, a.call("POST", "/webhooks/inbound?token="+teamToken, "", map[string]string{"title": "gone"}), 401)
	})
}
