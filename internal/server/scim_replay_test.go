package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/samltest"
	"github.com/perch-dev/perch/internal/scim"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// The replay tests play each identity provider's request sequence, built
// from its published requests in ../shared/fixtures/scim, against the real
// server: the provisioned member signs in through the organisation's SAML
// (crewjam's samlidp), opens WebSockets and an API token, and loses all of
// them at once when the provider deactivates or removes them.

// scimReplay is a SAML organisation, its identity provider speaking SCIM,
// and the member being provisioned once they sign in.
type scimReplay struct {
	*samlEnv
	idp     *scimIdP
	sockets []*wsConn
	token   string // the member's API token
	hook    string // a webhook token the member made
}

// newSCIMReplay is the organisation of a replay, which has verified the
// domains of the addresses its provider's requests carry.
func newSCIMReplay(t *testing.T, s *store.Store, agent string, domains ...string) *scimReplay {
	e := newSAMLEnv(t, s)
	e.configure(nil)
	return &scimReplay{samlEnv: e, idp: e.a.scimClient(e.owner, agent, domains...)}
}

// signIn signs login in at the SAML identity provider, where they have
// the address email, and answers the session's access token.
func (r *scimReplay) signIn(login, email string) string {
	r.t.Helper()
	b := samltest.NewBrowser(r.t)
	form := r.samlEnv.idp.SignIn(b, r.loginURL(""), login, "idp password")
	p := b.Submit(form)
	r.signedIn(b, p, samlDefaultTarget, email)
	for _, c := range p.Header.Values("Set-Cookie") {
		if v, ok := strings.CutPrefix(c, perch.SessionCookie+"="); ok {
			return strings.SplitN(v, ";", 2)[0]
		}
	}
	r.t.Fatal("no session cookie")
	return ""
}

// connect signs the member in through SAML and connects them as the
// desktop does: a WebSocket on the session and one on an API token.
func (r *scimReplay) connect(login, email string) {
	r.t.Helper()
	r.samlEnv.idp.AddUser(login, "idp password", email, "At the IdP")
	access := r.signIn(login, email)
	res := expect(r.t, r.a.call("POST", "/api/v1/tokens", access, map[string]string{"label": "laptop"}), 201)
	r.token = res.Data()["raw_token"].(string)
	r.hook = r.a.webhookToken(&account{Access: access}, "user", "")
	r.sockets = []*wsConn{dial(r.t, r.ts, access, ""), dial(r.t, r.ts, r.token, "")}
	for _, c := range r.sockets {
		c.ready()
	}
}

// cutOff checks that every WebSocket of the member closed (1008) and that
// their API token and the webhook token they made are refused, as is a new
// SAML sign-in, with a message naming the identity provider.
func (r *scimReplay) cutOff(login string) {
	r.t.Helper()
	for _, c := range r.sockets {
		if got := c.closeStatus(); got != websocket.StatusPolicyViolation {
			r.t.Fatalf("a WebSocket closed with %v, want %v", got, websocket.StatusPolicyViolation)
		}
	}
	expect(r.t, r.a.call("GET", "/api/v1/users/me", r.token, nil), 401)
	expect(r.t, r.a.call("POST", "/webhooks/inbound?token="+r.hook, "", map[string]string{"title": "cut off"}), 401)
	b := samltest.NewBrowser(r.t)
	refusedWith(r.t, b.Submit(r.samlEnv.idp.SignIn(b, r.loginURL(""), login, "idp password")), "identity provider")
}

// audited checks that the log holds action about userID, by the SCIM
// token, in the organisation.
func (r *scimReplay) auditedSCIM(action, userID string) {
	r.t.Helper()
	for _, e := range r.audited(action) {
		if e.Target.ID == userID {
			if e.Actor.Type != perch.ActorSCIM || !strings.HasPrefix(e.Actor.ID, perch.SCIMTokenPrefix) || e.OrgID != r.owner.OrgID {
				r.t.Errorf("%s entry %+v", action, e)
			}
			return
		}
	}
	r.t.Errorf("no %s entry about %s", action, userID)
}

// oktaRequestPath reads the path of a recorded HTTP request.
func oktaRequestPath(t *testing.T, raw []byte) string {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(append(bytes.TrimSpace(raw), "\r\n\r\n"...))))
	if err != nil {
		t.Fatalf("the recorded request: %v", err)
	}
	return req.URL.RequestURI()
}

// TestSCIMFixtureReplayOkta plays Okta's provisioning of a user: does
// the user exist, create, read, replace the profile, deactivate,
// reactivate, and remove.
func TestSCIMFixtureReplayOkta(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		r := newSCIMReplay(t, s, "Okta SCIM Client 1.0.0", "okta.local")
		okta := r.idp

		// Okta asks whether the user exists; the answer is the empty list
		// Okta's reference shows, member for member.
		exists := oktaRequestPath(t, scimFixture(t, "okta/filter_user_exists.request.http.txt"))
		got := okta.do("GET", exists, nil).want(t, 200)
		if want := scimFixtureJSON(t, "okta/filter_user_exists_empty.response.listresponse.json"); !jsonEqual(got.Body, want) {
			t.Errorf("no user yet:\n got %s\nwant %v", got.Raw, want)
		}

		created := okta.do("POST", "/scim/v2/Users", scimFixture(t, "okta/create_user.request.json")).want(t, 201)
		id := created.str("id")
		if created.str("userName") != "test.user@okta.local" || created.Body["active"] != true || created.str("name.givenName") != "Test" ||
			created.str("externalId") != "00ujl29u0le5T6Aj10h7" || created.str("emails.0.value") != "test.user@okta.local" {
			t.Fatalf("created %s", created.Raw)
		}
		if loc := created.Header.Get("Location"); loc != r.base+"/scim/v2/Users/"+id || created.str("meta.location") != loc {
			t.Errorf("Location %q, meta.location %q", loc, created.str("meta.location"))
		}
		if created.Header.Get("ETag") != created.str("meta.version") || created.str("meta.version") == "" {
			t.Errorf("ETag %q, meta.version %q", created.Header.Get("ETag"), created.str("meta.version"))
		}
		r.auditedSCIM(perch.AuditSCIMUserCreated, id)
		member, err := s.User(t.Context(), id)
		// The address is Okta's assertion, not a mailbox Perch has proven.
		if err != nil || member.OrgID != r.owner.OrgID || member.OrgRole != perch.RoleMember || member.EmailVerified || member.Name != "Test User" {
			t.Fatalf("the account: %+v, %v", member, err)
		}

		found := okta.do("GET", exists, nil).want(t, 200)
		if found.Body["totalResults"] != 1.0 || lookup(found.Body, "Resources.0.id") != id {
			t.Fatalf("the user by userName: %s", found.Raw)
		}
		okta.do("GET", "/scim/v2/Users/"+id, nil).want(t, 200)

		// The member signs in through the organisation's SAML and connects.
		r.connect("test.user", "test.user@okta.local")

		// Okta pushes a profile change with PUT; what it reads back has
		// every member its reference's user has (groups: not kept).
		put := scimFixtureJSON(t, "okta/put_user_replace.request.json")
		put["id"] = id
		replaced := okta.do("PUT", "/scim/v2/Users/"+id, put).want(t, 200)
		if replaced.str("name.givenName") != "Another" || replaced.str("name.middleName") != "Excited" || replaced.Body["active"] != true {
			t.Fatalf("replaced %s", replaced.Raw)
		}
		sameShape(t, "user", okta.do("GET", "/scim/v2/Users/"+id, nil).want(t, 200).Body, scimFixtureJSON(t, "okta/get_user.response.json"), "groups")
		r.auditedSCIM(perch.AuditSCIMUserUpdated, id)

		// Deactivation: Okta's PATCH without a path.
		off := okta.do("PATCH", "/scim/v2/Users/"+id, scimFixture(t, "okta/patch_user_deactivate.request.json")).want(t, 200)
		if off.Body["active"] != false {
			t.Fatalf("deactivated %s", off.Raw)
		}
		r.cutOff("test.user")
		r.auditedSCIM(perch.AuditSCIMUserDeactivated, id)
		inactive := okta.do("GET", "/scim/v2/Users?filter="+url.QueryEscape(`active eq false`), nil).want(t, 200)
		if inactive.Body["totalResults"] != 1.0 {
			t.Errorf("inactive users: %s", inactive.Raw)
		}

		// Reactivation restores sign-in, and the API token with it.
		on := okta.do("PATCH", "/scim/v2/Users/"+id, map[string]any{"schemas": []string{scim.PatchSchema},
			"Operations": []any{map[string]any{"op": "replace", "value": map[string]any{"active": true}}}}).want(t, 200)
		if on.Body["active"] != true {
			t.Fatalf("reactivated %s", on.Raw)
		}
		expect(t, r.a.call("GET", "/api/v1/users/me", r.token, nil), 200)
		r.signIn("test.user", "test.user@okta.local")
		r.auditedSCIM(perch.AuditSCIMUserReactivated, id)

		r.remove(id, "test.user", scimFixture(t, "okta/create_user.request.json"))
	})
}

// remove has the identity provider delete the member: the account is
// disabled and stays in the organisation, gone from SCIM's view (404),
// with every credential refused as on deactivation; no organisation is
// made. Then the provider's create request, replayed, restores the same
// account, which signs in through SAML again.
func (r *scimReplay) remove(id, login string, create []byte) {
	r.t.Helper()
	orgs := r.a.orgCount()
	r.sockets = []*wsConn{dial(r.t, r.ts, r.token, "")}
	r.sockets[0].ready()
	if ans := r.idp.do("DELETE", "/scim/v2/Users/"+id, nil).want(r.t, 204); ans.Raw != "" {
		r.t.Errorf("204 with a body: %s", ans.Raw)
	}
	r.cutOff(login)
	r.idp.do("GET", "/scim/v2/Users/"+id, nil).want(r.t, 404)
	r.idp.do("DELETE", "/scim/v2/Users/"+id, nil).want(r.t, 404)
	u, err := r.a.store.User(r.t.Context(), id)
	if err != nil || u.OrgID != r.owner.OrgID || !u.Disabled {
		r.t.Fatalf("after the deletion the account is %+v, %v", u, err)
	}
	if n := r.a.orgCount(); n != orgs {
		r.t.Errorf("%d organisations after the deletion, %d before", n, orgs)
	}
	r.auditedSCIM(perch.AuditSCIMUserDeleted, id)

	back := r.idp.do("POST", "/scim/v2/Users", create).want(r.t, 201)
	if back.str("id") != id || back.Body["active"] != true {
		r.t.Fatalf("the create replayed after the deletion: %s", back.Raw)
	}
	expect(r.t, r.a.call("GET", "/api/v1/users/me", r.token, nil), 200)
	email := back.str("emails.0.value")
	r.samlEnv.idp.AddUser(login, "idp password", email, "At the IdP")
	r.signIn(login, email)
	r.auditedSCIM(perch.AuditSCIMUserRestored, id)
	if n := r.a.orgCount(); n != orgs {
		r.t.Errorf("%d organisations after the restore, %d before", n, orgs)
	}
}

// TestSCIMFixtureReplayEntra plays Microsoft Entra's provisioning: the
// query for the user, create (a userName that is not an address), the
// query again, patches of userName, e-mail and name, deactivation with
// Entra's string "False", reactivation, and removal.
func TestSCIMFixtureReplayEntra(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		r := newSCIMReplay(t, s, "Azure AD SCIM Provisioning", "testuser.com", "microsoft.com")
		entra := r.idp
		create := scimFixtureJSON(t, "entra/create_user.request.json")
		userName := create["userName"].(string)
		email := lookup(create, "emails.0.value").(string)
		query := "/scim/v2/Users?filter=" + url.QueryEscape(`userName eq "`+userName+`"`)

		// Zero results: Entra's reference answer, but for itemsPerPage,
		// which RFC 7644 makes the number of results on the page (0), not
		// the page size.
		zero := entra.do("GET", query, nil).want(t, 200)
		want := scimFixtureJSON(t, "entra/get_user_by_query_zero.response.listresponse.json")
		want["itemsPerPage"] = 0.0
		if !jsonEqual(zero.Body, want) {
			t.Errorf("zero results:\n got %s\nwant %v", zero.Raw, want)
		}

		created := entra.do("POST", "/scim/v2/Users", create).want(t, 201)
		id := created.str("id")
		if created.str("userName") != userName || created.str("externalId") != create["externalId"] || created.str("emails.0.value") != email {
			t.Fatalf("created %s", created.Raw)
		}
		member, err := s.User(t.Context(), id)
		if err != nil || member.Email != email || member.Name != "givenName familyName" {
			t.Fatalf("the account: %+v, %v", member, err)
		}

		found := entra.do("GET", query, nil).want(t, 200)
		sameShape(t, "list", found.Body, scimFixtureJSON(t, "entra/get_user_by_query.response.listresponse.json"), "itemsPerPage")
		if found.Body["totalResults"] != 1.0 || lookup(found.Body, "Resources.0.id") != id {
			t.Fatalf("the user by userName: %s", found.Raw)
		}
		byExternal := entra.do("GET", "/scim/v2/Users?filter="+url.QueryEscape(`externalId eq "`+create["externalId"].(string)+`"`), nil).want(t, 200)
		if byExternal.Body["totalResults"] != 1.0 {
			t.Errorf("the user by externalId: %s", byExternal.Raw)
		}

		r.connect("test_user", email)

		// userName changes; the account keeps its address.
		renamed := entra.do("PATCH", "/scim/v2/Users/"+id, scimFixture(t, "entra/patch_user_username.request.json")).want(t, 200)
		if renamed.str("userName") != "5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com" || renamed.str("emails.0.value") != email {
			t.Fatalf("after the userName patch: %s", renamed.Raw)
		}
		// The work address and the family name change; the account's
		// address follows the primary e-mail.
		moved := entra.do("PATCH", "/scim/v2/Users/"+id, scimFixture(t, "entra/patch_user_multivalued.request.json")).want(t, 200)
		if moved.str("emails.0.value") != "updatedEmail@microsoft.com" || moved.str("name.familyName") != "updatedFamilyName" {
			t.Fatalf("after the multi-valued patch: %s", moved.Raw)
		}
		me := expect(t, r.a.call("GET", "/api/v1/users/me", r.token, nil), 200).Data()
		if me["email"] != "updatedEmail@microsoft.com" {
			t.Errorf("the account's address is %v", me["email"])
		}
		r.auditedSCIM(perch.AuditSCIMUserUpdated, id)

		off := entra.do("PATCH", "/scim/v2/Users/"+id, scimFixture(t, "entra/patch_user_disable.request.json")).want(t, 200)
		if off.Body["active"] != false {
			t.Fatalf("disabled %s", off.Raw)
		}
		r.samlEnv.idp.AddUser("test_user", "idp password", "updatedEmail@microsoft.com", "At the IdP")
		r.cutOff("test_user")
		r.auditedSCIM(perch.AuditSCIMUserDeactivated, id)

		// Entra sends booleans as strings too.
		on := entra.do("PATCH", "/scim/v2/Users/"+id, map[string]any{"schemas": []string{scim.PatchSchema},
			"Operations": []any{map[string]any{"op": "Replace", "path": "active", "value": "True"}}}).want(t, 200)
		if on.Body["active"] != true {
			t.Fatalf("enabled %s", on.Raw)
		}
		expect(t, r.a.call("GET", "/api/v1/users/me", r.token, nil), 200)

		r.remove(id, "test_user", scimFixture(t, "entra/create_user.request.json"))
	})
}

// jsonEqual compares two decoded JSON values.
func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
