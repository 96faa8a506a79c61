package server

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/scim"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// roleOf is the organisation role of the account id, as the store has it.
func (a *api) roleOf(id string) string {
	a.t.Helper()
	u, err := a.store.User(a.t.Context(), id)
	if err != nil {
		a.t.Fatal(err)
	}
	return u.OrgRole
}

// TestSCIMRolesMapToOrganisationRoles: roles name owner, admin or member
// and set the organisation role, audited and with the dashboard's effects;
// nothing else they say counts, no value reaches platform admin, and the
// last owner stays one.
func TestSCIMRolesMapToOrganisationRoles(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner := a.register("Olive Owner")
		idp := a.scimClient(owner, "test", "example.com")

		// POST with a role; the answer shows it.
		bob := idp.do("POST", "/scim/v2/Users", newUser("bob@example.com", "roles", []any{map[string]any{"value": "Admin", "primary": true}})).want(t, 201)
		id := bob.str("id")
		if a.roleOf(id) != perch.RoleAdmin || !jsonEqual(bob.Body["roles"], []any{map[string]any{"value": "admin", "primary": true}}) {
			t.Fatalf("created with roles admin: %s (role %s)", bob.Raw, a.roleOf(id))
		}
		cy := idp.do("POST", "/scim/v2/Users", newUser("cy@example.com", "roles", []any{map[string]any{"value": "Viewer"}})).want(t, 201).str("id")
		if a.roleOf(cy) != perch.RoleMember {
			t.Errorf("an unknown role made %s", a.roleOf(cy))
		}

		// PUT without roles keeps the role.
		idp.do("PUT", "/scim/v2/Users/"+id, newUser("bob@example.com", "displayName", "Bob")).want(t, 200)
		if a.roleOf(id) != perch.RoleAdmin {
			t.Fatalf("a PUT without roles made bob %s", a.roleOf(id))
		}

		// An admin's org-wide webhook token works until the provider
		// demotes them (Entra's single-role mapping): the token cache
		// drops, as after a change in the dashboard.
		carol := a.invite(owner, "Carol Admin", "admin")
		_, orgToken := a.whToken(carol, "inbound", "org", "")
		a.whOK("/webhooks/inbound", orgToken, `{"title":"while an admin"}`)
		idp.do("PATCH", "/scim/v2/Users/"+carol.ID, patchOp("Replace", `roles[primary eq "True"].value`, "Member")).want(t, 200)
		if a.roleOf(carol.ID) != perch.RoleMember {
			t.Fatalf("after Entra's role patch carol is %s", a.roleOf(carol.ID))
		}
		a.auditedBySCIM(owner.OrgID, perch.AuditMemberRoleChanged, carol.ID, map[string]any{"role": map[string]any{"from": "admin", "to": "member"}})
		expect(t, a.whDeliver("/webhooks/inbound", orgToken, `{"title":"after demotion"}`), 401)
		idp.do("PATCH", "/scim/v2/Users/"+id, patchOp("remove", `roles[value eq "admin"]`, nil)).want(t, 200)
		if a.roleOf(id) != perch.RoleMember {
			t.Fatalf("after removing bob's role he is %s", a.roleOf(id))
		}

		// A platform admin of the organisation is not the provider's to change.
		root := a.invite(owner, "Root Admin", "member")
		if err := s.GrantAdmin(t.Context(), root.Email); err != nil {
			t.Fatal(err)
		}
		idp.do("PATCH", "/scim/v2/Users/"+root.ID, patchOp("add", "roles", []any{map[string]any{"value": "owner"}})).want(t, 403)
		if a.roleOf(root.ID) != perch.RoleMember {
			t.Errorf("the platform admin's role became %s", a.roleOf(root.ID))
		}

		// No value reaches platform admin; values that name no role change nothing.
		for _, v := range []string{"platform admin", "platform_admin", "PlatformAdmin", "superuser", "root"} {
			idp.do("PATCH", "/scim/v2/Users/"+id, patchOp("add", "roles", []any{map[string]any{"value": v, "primary": true}})).want(t, 200)
		}
		if u, _ := s.User(t.Context(), id); u.IsAdmin || u.OrgRole != perch.RoleMember {
			t.Fatalf("after roles naming no role: %+v", u)
		}

		// Promotion to owner, then the first owner's demotion is allowed;
		// the last owner's is refused, and nothing else of the request holds.
		idp.do("PATCH", "/scim/v2/Users/"+id, patchOp("add", "roles", []any{map[string]any{"value": "owner"}})).want(t, 200)
		if a.roleOf(id) != perch.RoleOwner {
			t.Fatalf("bob is %s", a.roleOf(id))
		}
		idp.do("PATCH", "/scim/v2/Users/"+owner.ID, patchOp("remove", "roles", nil)).want(t, 200)
		if a.roleOf(owner.ID) != perch.RoleMember {
			t.Fatalf("the first owner is %s", a.roleOf(owner.ID))
		}
		refused := idp.do("PATCH", "/scim/v2/Users/"+id, map[string]any{"schemas": []string{scim.PatchSchema}, "Operations": []any{
			map[string]any{"op": "replace", "path": "displayName", "value": "Renamed"},
			map[string]any{"op": "replace", "path": "roles", "value": []any{map[string]any{"value": "admin"}}}}}).want(t, 409)
		if d := refused.str("detail"); !strings.Contains(d, "last owner") {
			t.Errorf("the refusal's detail: %q", d)
		}
		if a.roleOf(id) != perch.RoleOwner || idp.do("GET", "/scim/v2/Users/"+id, nil).want(t, 200).str("displayName") == "Renamed" {
			t.Error("a refused demotion changed the last owner")
		}
		idp.do("PUT", "/scim/v2/Users/"+id, newUser("bob@example.com", "roles", []any{map[string]any{"value": "member"}})).want(t, 409)

	})
}

// TestSCIMKeepsTitleAndTheEnterpriseExtension: title, department,
// employeeNumber and manager are kept through POST, PUT and PATCH (by
// path and by value object), answered back, and change the version;
// filters stay as they were.
func TestSCIMKeepsTitleAndTheEnterpriseExtension(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner := a.register("Olive Owner")
		idp := a.scimClient(owner, "test", "example.com")
		ext := scim.EnterpriseSchema
		made := idp.do("POST", "/scim/v2/Users", newUser("bob@example.com", "title", "Engineer",
			ext, map[string]any{"department": "Ops", "employeeNumber": "42", "manager": map[string]any{"value": owner.ID}, "costCenter": "9"})).want(t, 201)
		path := "/scim/v2/Users/" + made.str("id")
		check := func(ans *scimAnswer, title, dept, number, manager string) {
			t.Helper()
			e, _ := ans.Body[ext].(map[string]any)
			if ans.str("title") != title || lookup(e, "department") != nilIfEmpty(dept) || lookup(e, "employeeNumber") != nilIfEmpty(number) ||
				lookup(e, "manager.value") != nilIfEmpty(manager) || e["costCenter"] != nil {
				t.Fatalf("want %q %q %q %q: %s", title, dept, number, manager, ans.Raw)
			}
			if schemas, _ := ans.Body["schemas"].([]any); (len(schemas) == 2) != (dept+number+manager != "") {
				t.Errorf("schemas %v", schemas)
			}
		}
		check(made, "Engineer", "Ops", "42", owner.ID)
		got := idp.do("GET", path, nil).want(t, 200)
		check(got, "Engineer", "Ops", "42", owner.ID)

		patched := idp.do("PATCH", path, map[string]any{"schemas": []string{scim.PatchSchema}, "Operations": []any{
			map[string]any{"op": "Replace", "path": "title", "value": "Lead"},
			map[string]any{"op": "Replace", "path": ext + ":department", "value": "Reliability"},
			map[string]any{"op": "Add", "path": ext + ":manager", "value": "mgr-7"},
		}}).want(t, 200)
		check(patched, "Lead", "Reliability", "42", "mgr-7")
		if patched.str("meta.version") == got.str("meta.version") {
			t.Error("the version did not change")
		}
		viaValue := idp.do("PATCH", path, patchOp("replace", "", map[string]any{ext + ":employeeNumber": "43", "title": "Head"})).want(t, 200)
		check(viaValue, "Head", "Reliability", "43", "mgr-7")
		removed := idp.do("PATCH", path, patchOp("remove", ext, nil)).want(t, 200)
		check(removed, "Head", "", "", "")
		replaced := idp.do("PUT", path, newUser("bob@example.com")).want(t, 200)
		check(replaced, "", "", "", "")

		for _, f := range []string{`userName eq "bob@example.com"`, `externalId eq "ext-bob@example.com"`} {
			if found := idp.do("GET", "/scim/v2/Users?filter="+url.QueryEscape(f), nil).want(t, 200); found.Body["totalResults"] != 1.0 {
				t.Errorf("%s: %s", f, found.Raw)
			}
		}
		idp.do("GET", "/scim/v2/Users?filter="+url.QueryEscape(`title eq "Head"`), nil).want(t, 400, scim.InvalidFilter)
		idp.do("PATCH", path, patchOp("replace", "title", "a\x00b")).want(t, 400, scim.InvalidValue)
		idp.do("PATCH", path, patchOp("replace", ext+":shoeSize", "9")).want(t, 400, scim.InvalidPath)
	})
}

// nilIfEmpty is s as a decoded JSON value of an attribute left out when empty.
func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TestSCIMUserProfileRequests plays the project's own PUT (Okta's shape)
// and PATCH (Entra's) of title, roles and the enterprise extension.
func TestSCIMUserProfileRequests(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner := a.register("Olive Owner")
		idp := a.scimClient(owner, "test", "perch-test.example", "example.com")
		rita := idp.do("POST", "/scim/v2/Users", newUser("rita.responder@perch-test.example")).want(t, 201).str("id")
		sam := idp.do("POST", "/scim/v2/Users", newUser("sam@example.com")).want(t, 201).str("id")
		fill := func(name string) []byte {
			b, err := os.ReadFile(filepath.Join("..", "scim", "testdata", "requests", filepath.FromSlash(name)))
			if err != nil {
				t.Fatal(err)
			}
			return []byte(strings.NewReplacer("{{USER_ID}}", rita, "{{USER2_ID}}", sam).Replace(string(b)))
		}
		ext := scim.EnterpriseSchema
		put := idp.do("PUT", "/scim/v2/Users/"+rita, fill("okta/put_user_profile.json")).want(t, 200)
		if put.str("title") != "Site reliability engineer" || lookup(put.Body, "roles.0.value") != "admin" || a.roleOf(rita) != perch.RoleAdmin ||
			lookup(put.Body[ext], "department") != "Operations" || lookup(put.Body[ext], "employeeNumber") != "E-1042" || lookup(put.Body[ext], "manager.value") != sam {
			t.Fatalf("after Okta's PUT: %s", put.Raw)
		}
		patched := idp.do("PATCH", "/scim/v2/Users/"+rita, fill("entra/patch_user_profile.json")).want(t, 200)
		if patched.str("title") != "Incident commander" || lookup(patched.Body, "roles.0.value") != "owner" || a.roleOf(rita) != perch.RoleOwner ||
			lookup(patched.Body[ext], "department") != "Reliability" || lookup(patched.Body[ext], "employeeNumber") != "E-2077" {
			t.Fatalf("after Entra's PATCH: %s", patched.Raw)
		}
		a.auditedBySCIM(owner.OrgID, perch.AuditMemberRoleChanged, rita, map[string]any{"role": map[string]any{"from": "admin", "to": "owner"}})
		if got := idp.do("GET", "/scim/v2/Users/"+rita, nil).want(t, 200); got.Raw != patched.Raw {
			t.Errorf("read back:\n%s\nwant\n%s", got.Raw, patched.Raw)
		}
	})
}
