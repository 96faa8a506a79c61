package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/scim"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// newUser is a SCIM User for POST, with an address for userName.
func newUser(email string, extra ...any) map[string]any {
	u := map[string]any{"schemas": []string{scim.UserSchema}, "userName": email, "externalId": "ext-" + email,
		"name": map[string]any{"givenName": "Given", "familyName": "Family"}, "active": true,
		"emails": []any{map[string]any{"value": email, "type": "work", "primary": true}}}
	for i := 0; i+1 < len(extra); i += 2 {
		u[extra[i].(string)] = extra[i+1]
	}
	return u
}

// patchOp is a PatchOp of one operation.
func patchOp(op, path string, value any) map[string]any {
	o := map[string]any{"op": op}
	if path != "" {
		o["path"] = path
	}
	if value != nil {
		o["value"] = value
	}
	return map[string]any{"schemas": []string{scim.PatchSchema}, "Operations": []any{o}}
}

// TestSCIMListsTheOrganisationsMembers: every member is a SCIM User,
// including those the identity provider did not make (their address is
// their userName, so that Okta and Entra find and link them), paged by
// startIndex and count with the total.
func TestSCIMListsTheOrganisationsMembers(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner := a.register("Olive Owner")
		bob := a.invite(owner, "Bob Member", "member")
		a.register("Eve Outsider")
		idp := a.scimClient(owner, "test", "example.com")
		a.clock.Advance(time.Second)
		idp.do("POST", "/scim/v2/Users", newUser("cy@example.com")).want(t, 201)

		all := idp.do("GET", "/scim/v2/Users", nil).want(t, 200)
		if all.Body["totalResults"] != 3.0 || all.Body["itemsPerPage"] != 3.0 || all.Body["startIndex"] != 1.0 {
			t.Fatalf("all: %s", all.Raw)
		}
		var names []string
		for _, u := range all.Body["Resources"].([]any) {
			names = append(names, u.(map[string]any)["userName"].(string))
		}
		if strings.Join(names, " ") != owner.Email+" "+bob.Email+" cy@example.com" {
			t.Errorf("userNames %v", names)
		}
		linked := lookup(all.Body, "Resources.1").(map[string]any)
		if linked["id"] != bob.ID || lookup(linked, "emails.0.value") != bob.Email || lookup(linked, "name.formatted") != "Bob Member" || linked["active"] != true {
			t.Errorf("a member the identity provider did not make: %v", linked)
		}

		page := idp.do("GET", "/scim/v2/Users?startIndex=2&count=1", nil).want(t, 200)
		if page.Body["totalResults"] != 3.0 || page.Body["itemsPerPage"] != 1.0 || page.Body["startIndex"] != 2.0 || lookup(page.Body, "Resources.0.id") != bob.ID {
			t.Errorf("startIndex=2&count=1: %s", page.Raw)
		}
		none := idp.do("GET", "/scim/v2/Users?count=0", nil).want(t, 200)
		if none.Body["totalResults"] != 3.0 || len(none.Body["Resources"].([]any)) != 0 {
			t.Errorf("count=0: %s", none.Raw)
		}
		past := idp.do("GET", "/scim/v2/Users?startIndex=0&count=-4", nil).want(t, 200)
		if past.Body["startIndex"] != 1.0 || past.Body["itemsPerPage"] != 0.0 {
			t.Errorf("startIndex=0&count=-4 (read as 1 and 0): %s", past.Raw)
		}
		for filter, want := range map[string]float64{
			`userName eq "` + strings.ToUpper(bob.Email) + `"`: 1,
			`emails.value eq "cy@example.com"`:                 1,
			`externalId eq "ext-cy@example.com"`:               1,
			`active eq true and userName eq "cy@example.com"`:  1,
			`active eq false`:                                  0,
			`userName eq "eve-outsider@example.com"`:           0,
		} {
			got := idp.do("GET", "/scim/v2/Users?filter="+url.QueryEscape(filter), nil).want(t, 200)
			if got.Body["totalResults"] != want {
				t.Errorf("%s: %s", filter, got.Raw)
			}
		}
	})
}

// TestSCIMRefusesBadInput: malformed filters, unknown attributes, wrong
// types, oversized bodies: each the right SCIM error, and nothing changed.
func TestSCIMRefusesBadInput(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner := a.register("Olive Owner")
		idp := a.scimClient(owner, "test", "example.com")
		bob := idp.do("POST", "/scim/v2/Users", newUser("bob@example.com")).want(t, 201)
		path := "/scim/v2/Users/" + bob.str("id")
		before := idp.do("GET", path, nil).want(t, 200).Raw

		for _, f := range []string{
			`userName eq`, `userName sw "b"`, `userName eq "a" or active eq true`, `(userName eq "a")`,
			`not (active eq true)`, `nickName eq "x"`, `title eq "x"`, `userName eq "unterminated`,
			`active eq "maybe"`, `userName eq true`, `userName eq 5`, `emails[type eq "work"].value eq "x"`,
			`userName eq "a" and`, `userName pr`, strings.Repeat(`userName eq "a" and `, 60) + `active eq true`,
		} {
			t.Run("filter "+f[:min(len(f), 40)], func(t *testing.T) {
				idp.do("GET", "/scim/v2/Users?filter="+url.QueryEscape(f), nil).want(t, 400, scim.InvalidFilter)
			})
		}
		idp.do("GET", "/scim/v2/Users?count=many", nil).want(t, 400, scim.InvalidValue)

		big := strings.Repeat("x", 70<<10)
		for _, c := range []struct {
			name, method, path string
			body               any
			status             int
			scimType           string
		}{
			{"userName not a string", "POST", "/scim/v2/Users", map[string]any{"userName": 5}, 400, scim.InvalidValue},
			{"no userName", "POST", "/scim/v2/Users", map[string]any{"emails": []any{map[string]any{"value": "x@example.com"}}}, 400, scim.InvalidValue},
			{"active maybe", "POST", "/scim/v2/Users", newUser("cy@example.com", "active", "maybe"), 400, scim.InvalidValue},
			{"emails not a list", "POST", "/scim/v2/Users", newUser("cy@example.com", "emails", "cy@example.com"), 400, scim.InvalidValue},
			{"unknown attribute", "POST", "/scim/v2/Users", newUser("cy@example.com", "shoeSize", 42), 400, scim.InvalidSyntax},
			{"not JSON", "POST", "/scim/v2/Users", "userName=cy", 400, scim.InvalidSyntax},
			{"a list", "POST", "/scim/v2/Users", `[{"userName":"cy@example.com"}]`, 400, scim.InvalidSyntax},
			{"no address", "POST", "/scim/v2/Users", map[string]any{"userName": "cy"}, 400, scim.InvalidValue},
			{"a bad address", "POST", "/scim/v2/Users", newUser("cy@"), 400, scim.InvalidValue},
			{"a NUL in a name", "POST", "/scim/v2/Users", newUser("cy@example.com", "displayName", "C\x00y"), 400, scim.InvalidValue},
			{"too large", "POST", "/scim/v2/Users", newUser("cy@example.com", "displayName", big), 413, ""},
			{"replace: wrong type", "PUT", path, newUser("bob@example.com", "active", 1), 400, scim.InvalidValue},
			{"replace: too large", "PUT", path, newUser("bob@example.com", "displayName", big), 413, ""},
			{"patch: active maybe", "PATCH", path, patchOp("replace", "active", "maybe"), 400, scim.InvalidValue},
			{"patch: unknown path", "PATCH", path, patchOp("replace", "shoeSize", 42), 400, scim.InvalidPath},
			{"patch: bad path", "PATCH", path, patchOp("replace", `emails[type eq "work"`, "x@example.com"), 400, scim.InvalidPath},
			{"patch: unknown op", "PATCH", path, patchOp("frobnicate", "active", false), 400, scim.InvalidSyntax},
			{"patch: remove without path", "PATCH", path, patchOp("remove", "", nil), 400, scim.NoTarget},
			{"patch: remove userName", "PATCH", path, patchOp("remove", "userName", nil), 400, scim.Mutability},
			{"patch: no operations", "PATCH", path, map[string]any{"schemas": []string{scim.PatchSchema}, "Operations": []any{}}, 400, scim.InvalidSyntax},
			{"patch: the second operation fails", "PATCH", path, map[string]any{"schemas": []string{scim.PatchSchema}, "Operations": []any{
				map[string]any{"op": "replace", "path": "displayName", "value": "Changed"},
				map[string]any{"op": "replace", "path": "active", "value": "maybe"}}}, 400, scim.InvalidValue},
			{"patch: too large", "PATCH", path, patchOp("replace", "displayName", big), 413, ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				idp.do(c.method, c.path, c.body).want(t, c.status, c.scimType)
			})
		}

		if after := idp.do("GET", path, nil).want(t, 200).Raw; after != before {
			t.Errorf("refused requests changed the user:\nbefore %s\n after %s", before, after)
		}
		if all := idp.do("GET", "/scim/v2/Users", nil).want(t, 200); all.Body["totalResults"] != 2.0 {
			t.Errorf("refused requests made users: %s", all.Raw)
		}
		entries, _, err := s.AuditLog(t.Context(), perch.AuditFilter{Action: "scim.", Page: perch.Page{Limit: 50}})
		if err != nil || len(entries) != 1 {
			t.Errorf("SCIM audit entries after one create and refusals: %d, %v", len(entries), err)
		}
	})
}

// TestSCIMTokenIsTheOrganisations: a token reaches its own organisation's
// members only; anything else is 401; a new token replaces the old at once.
func TestSCIMTokenIsTheOrganisations(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner, other := a.register("Olive Owner"), a.register("Oscar Other")
		ours, theirs := a.scimClient(owner, "ours", "example.com"), a.scimClient(other, "theirs")
		bob := ours.do("POST", "/scim/v2/Users", newUser("bob@example.com")).want(t, 201)
		path := "/scim/v2/Users/" + bob.str("id")
		before := ours.do("GET", path, nil).want(t, 200).Raw

		theirs.do("GET", path, nil).want(t, 404)
		theirs.do("PUT", path, newUser("bob@example.com", "displayName", "Taken over")).want(t, 404)
		theirs.do("PATCH", path, patchOp("replace", "active", false)).want(t, 404)
		theirs.do("DELETE", path, nil).want(t, 404)
		list := theirs.do("GET", "/scim/v2/Users", nil).want(t, 200)
		if list.Body["totalResults"] != 1.0 || lookup(list.Body, "Resources.0.userName") != strings.ToLower(other.Email) && lookup(list.Body, "Resources.0.userName") != other.Email {
			t.Errorf("another organisation's list: %s", list.Raw)
		}
		if found := theirs.do("GET", "/scim/v2/Users?filter="+url.QueryEscape(`userName eq "bob@example.com"`), nil).want(t, 200); found.Body["totalResults"] != 0.0 {
			t.Errorf("another organisation found bob: %s", found.Raw)
		}
		if after := ours.do("GET", path, nil).want(t, 200).Raw; after != before {
			t.Errorf("another organisation's token changed bob:\n%s\n%s", before, after)
		}

		for name, token := range map[string]string{"no token": "", "a made-up token": "scim_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
			"a user's access token": owner.Access, "a user's API token": func() string { a.apiToken(owner, "x"); return owner.Token }()} {
			t.Run(name, func(t *testing.T) {
				ans := (&scimIdP{t: t, a: a, token: token}).do("GET", "/scim/v2/Users", nil).want(t, 401)
				if !strings.HasPrefix(ans.Header.Get("WWW-Authenticate"), "Bearer ") {
					t.Errorf("WWW-Authenticate %q", ans.Header.Get("WWW-Authenticate"))
				}
			})
		}

		stale := ours.token
		ours.token = a.scimToken(owner)
		(&scimIdP{t: t, a: a, token: stale}).do("GET", path, nil).want(t, 401)
		ours.do("GET", path, nil).want(t, 200)
	})
}

// TestSCIMUniqueness: an address has one account, here or elsewhere; a
// userName one member of the organisation.
func TestSCIMUniqueness(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner, eve := a.register("Olive Owner"), a.register("Eve Outsider")
		idp := a.scimClient(owner, "test", "example.com")
		idp.do("POST", "/scim/v2/Users", newUser(owner.Email)).want(t, 409, scim.Uniqueness)
		idp.do("POST", "/scim/v2/Users", newUser(eve.Email)).want(t, 409, scim.Uniqueness)
		idp.do("POST", "/scim/v2/Users", newUser("bob@example.com")).want(t, 201)
		idp.do("POST", "/scim/v2/Users", newUser("BOB@example.com")).want(t, 409, scim.Uniqueness)
		cy := idp.do("POST", "/scim/v2/Users", newUser("cy@example.com")).want(t, 201)
		idp.do("PATCH", "/scim/v2/Users/"+cy.str("id"), patchOp("replace", "userName", "Bob@Example.com")).want(t, 409, scim.Uniqueness)
		idp.do("PATCH", "/scim/v2/Users/"+cy.str("id"), patchOp("replace", `emails[type eq "work"].value`, eve.Email)).want(t, 409, scim.Uniqueness)
	})
}

// TestSCIMVersions: meta.version is the ETag; If-None-Match answers 304
// and a stale If-Match 412, changing nothing.
func TestSCIMVersions(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		idp := a.scimClient(a.register("Olive Owner"), "test", "example.com")
		bob := idp.do("POST", "/scim/v2/Users", newUser("bob@example.com")).want(t, 201)
		path, v1 := "/scim/v2/Users/"+bob.str("id"), bob.str("meta.version")
		if got := idp.do("GET", path, nil, "If-None-Match", v1).want(t, 304); got.Header.Get("ETag") != v1 || got.Raw != "" {
			t.Errorf("304 with ETag %q and body %q", got.Header.Get("ETag"), got.Raw)
		}
		changed := idp.do("PATCH", path, patchOp("replace", "displayName", "Bobby"), "If-Match", v1).want(t, 200)
		v2 := changed.str("meta.version")
		if v2 == v1 || changed.Header.Get("ETag") != v2 {
			t.Fatalf("versions %q then %q (ETag %q)", v1, v2, changed.Header.Get("ETag"))
		}
		idp.do("PATCH", path, patchOp("replace", "displayName", "Robert"), "If-Match", v1).want(t, 412)
		idp.do("DELETE", path, nil, "If-Match", v1).want(t, 412)
		if got := idp.do("GET", path, nil).want(t, 200); got.str("displayName") != "Bobby" || got.str("meta.version") != v2 {
			t.Errorf("after stale writes: %s", got.Raw)
		}
		idp.do("GET", path, nil, "If-None-Match", v1).want(t, 200)
	})
}

// TestSCIMCannotLiftAnAdminsDisable: a platform admin's disable stands
// against the identity provider; its own deactivation it lifts.
func TestSCIMCannotLiftAnAdminsDisable(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root Admin")
		idp := a.scimClient(a.register("Olive Owner"), "test", "example.com")
		bob := idp.do("POST", "/scim/v2/Users", newUser("bob@example.com")).want(t, 201)
		path := "/scim/v2/Users/" + bob.str("id")
		expect(t, a.call("PATCH", "/api/v1/admin/users/"+bob.str("id"), root.Access, map[string]bool{"disabled": true}), 200)
		if got := idp.do("GET", path, nil).want(t, 200); got.Body["active"] != false {
			t.Fatalf("an admin-disabled member reads as %s", got.Raw)
		}
		idp.do("PATCH", path, patchOp("replace", "active", true)).want(t, 409)
		idp.do("PATCH", path, patchOp("replace", "displayName", "Bobby")).want(t, 200) // the rest still works
		expect(t, a.call("PATCH", "/api/v1/admin/users/"+bob.str("id"), root.Access, map[string]bool{"disabled": false}), 200)
		idp.do("PATCH", path, patchOp("replace", "active", false)).want(t, 200)
		if got := idp.do("PATCH", path, patchOp("replace", "active", true)).want(t, 200); got.Body["active"] != true {
			t.Errorf("reactivated: %s", got.Raw)
		}
	})
}

// TestSCIMDiscovery: the discovery documents, and SCIM errors for paths
// and methods not served.
func TestSCIMDiscovery(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	idp := a.scimClient(a.register("Olive Owner"), "test")
	spc := idp.do("GET", "/scim/v2/ServiceProviderConfig", nil).want(t, 200)
	if lookup(spc.Body, "patch.supported") != true || lookup(spc.Body, "bulk.supported") != false ||
		lookup(spc.Body, "filter.maxResults") != 200.0 || lookup(spc.Body, "etag.supported") != true {
		t.Errorf("ServiceProviderConfig %s", spc.Raw)
	}
	types := idp.do("GET", "/scim/v2/ResourceTypes", nil).want(t, 200)
	if lookup(types.Body, "Resources.0.endpoint") != "/Users" || lookup(types.Body, "Resources.0.schema") != scim.UserSchema ||
		lookup(types.Body, "Resources.1.endpoint") != "/Groups" || lookup(types.Body, "Resources.1.schema") != scim.GroupSchema ||
		types.Body["totalResults"] != 2.0 {
		t.Errorf("ResourceTypes %s", types.Raw)
	}
	idp.do("GET", "/scim/v2/ResourceTypes/User", nil).want(t, 200)
	if group := idp.do("GET", "/scim/v2/ResourceTypes/Group", nil).want(t, 200); group.str("endpoint") != "/Groups" {
		t.Errorf("ResourceTypes/Group %s", group.Raw)
	}
	idp.do("GET", "/scim/v2/ResourceTypes/Device", nil).want(t, 404)
	schemas := idp.do("GET", "/scim/v2/Schemas", nil).want(t, 200)
	var ids []string
	for _, doc := range schemas.Body["Resources"].([]any) {
		ids = append(ids, doc.(map[string]any)["id"].(string))
	}
	if strings.Join(ids, " ") != scim.UserSchema+" "+scim.GroupSchema+" "+scim.EnterpriseSchema || !strings.Contains(schemas.Raw, `"department"`) {
		t.Errorf("Schemas %s", schemas.Raw)
	}
	idp.do("GET", "/scim/v2/Schemas/"+scim.UserSchema, nil).want(t, 200)
	idp.do("GET", "/scim/v2/Schemas/"+scim.GroupSchema, nil).want(t, 200)
	idp.do("GET", "/scim/v2/Schemas/"+scim.EnterpriseSchema, nil).want(t, 200)
	idp.do("GET", "/scim/v2/Schemas/urn:example:nothing", nil).want(t, 404)
	idp.do("GET", "/scim/v2/Devices", nil).want(t, 404)
	if got := idp.do("POST", "/scim/v2/Groups/abc", map[string]any{"displayName": "x"}).want(t, 405); !strings.Contains(got.Header.Get("Allow"), "PATCH") {
		t.Errorf("Allow %q", got.Header.Get("Allow"))
	}
	if got := idp.do("POST", "/scim/v2/Users/abc", newUser("x@example.com")).want(t, 405); !strings.Contains(got.Header.Get("Allow"), "PATCH") {
		t.Errorf("Allow %q", got.Header.Get("Allow"))
	}
	(&scimIdP{t: t, a: a}).do("GET", "/scim/v2/ServiceProviderConfig", nil).want(t, 401)
}

// TestSCIMIsRateLimitedPerToken: past the allowance a token is answered
// 429 in the SCIM error schema; another organisation's token is not.
func TestSCIMIsRateLimitedPerToken(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) { o.Limits.User = perch.Limit{Count: 3, Period: time.Minute} })
	ours := a.scimClient(a.register("Olive Owner"), "ours")
	theirs := a.scimClient(a.register("Oscar Other"), "theirs")
	for range 3 {
		ours.do("GET", "/scim/v2/Users", nil).want(t, 200)
	}
	if got := ours.do("GET", "/scim/v2/Users", nil).want(t, 429); got.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	theirs.do("GET", "/scim/v2/Users", nil).want(t, 200)
	a.clock.Advance(time.Minute)
	ours.do("GET", "/scim/v2/Users", nil).want(t, 200)
}

// TestSCIMAnswersEveryRefusalInItsSchema: whatever refuses a request under
// /scim/v2, the server-wide body limit (before any credential is read), the
// allowance of refused credentials per address, the token's allowance, or
// a panic, the identity provider reads a SCIM error (RFC 7644 §3.12) with
// the status as a string, and a rate-limited answer carries the
// rate-limit headers and Retry-After.
func TestSCIMAnswersEveryRefusalInItsSchema(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) { o.Limits.User = perch.Limit{Count: 2, Period: time.Minute} })
	owner := a.register("Olive Owner")
	idp := a.scimClient(owner, "okta")
	anonymous := &scimIdP{t: t, a: a, agent: "curl"}

	// Over the 1 MiB every request is held to, by its Content-Length: no
	// credential is even read.
	huge := newUser("big@example.com", "displayName", strings.Repeat("x", 1<<20))
	idp.do("POST", "/scim/v2/Users", huge).want(t, 413)
	anonymous.do("POST", "/scim/v2/Users", huge).want(t, 413)
	idp.do("PUT", "/scim/v2/Users/"+owner.ID, huge).want(t, 413)

	// Past the allowance of refused credentials of the address.
	anonymous.do("GET", "/scim/v2/Users", nil).want(t, 401) // the 413 above spent none
	anonymous.do("GET", "/scim/v2/Users", nil).want(t, 401)
	limited := []*scimAnswer{anonymous.do("GET", "/scim/v2/Users", nil).want(t, 429)}
	// Past the token's allowance.
	idp.do("GET", "/scim/v2/Users", nil).want(t, 200)
	idp.do("GET", "/scim/v2/Schemas", nil).want(t, 200)
	limited = append(limited, idp.do("GET", "/scim/v2/ServiceProviderConfig", nil).want(t, 429))
	for _, res := range limited {
		for _, h := range []string{"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			if res.Header.Get(h) == "" {
				t.Errorf("429 without %s: %v", h, res.Header)
			}
		}
	}

	// A panic under /scim/v2 is a SCIM 500 that tells nothing of it.
	rec := httptest.NewRecorder()
	a.srv.recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("the secret detail") })).
		ServeHTTP(rec, httptest.NewRequest("GET", "/scim/v2/Users", nil))
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 500 || body["status"] != "500" ||
		rec.Header().Get("Content-Type") != "application/scim+json" || strings.Contains(rec.Body.String(), "secret detail") {
		t.Fatalf("a panic: %d %v %s (%v)", rec.Code, rec.Header(), rec.Body, err)
	}
	if schemas, _ := body["schemas"].([]any); len(schemas) != 1 || schemas[0] != scim.ErrorSchema {
		t.Fatalf("a panic's schemas: %v", body)
	}
}
