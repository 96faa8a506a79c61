package server

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/scim"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// orgCount is how many organisations the server's store has: a SCIM
// deprovisioning or restore must make none.
func (a *api) orgCount() int {
	a.t.Helper()
	orgs, next, err := a.store.Orgs(a.t.Context(), "", perch.Page{Limit: 500})
	if err != nil || next != "" {
		a.t.Fatalf("Orgs = %d, %q, %v", len(orgs), next, err)
	}
	return len(orgs)
}

// memberOf answers the member id as GET /org/members shows them to acc.
func (a *api) memberOf(acc *account, id string) map[string]any {
	a.t.Helper()
	for _, m := range expect(a.t, a.call("GET", "/api/v1/org/members", acc.Access, nil), 200).List() {
		if m["id"] == id {
			return m
		}
	}
	a.t.Fatalf("%s is not among the members", id)
	return nil
}

// refusedBySCIM checks a refusal that tells the person their
// organisation's identity provider disabled the account.
func refusedBySCIM(tb testing.TB, res *response) {
	tb.Helper()
	expect(tb, res, 403)
	if msg := res.ErrorMessage(); !strings.Contains(msg, "identity provider") {
		tb.Errorf("the refusal says %q", msg)
	}
}

// TestSCIMDeleteDeprovisions: an identity provider's DELETE of a member
// with a password, API and webhook tokens, two sign-ins, sockets on two
// instances, a device sign-in waiting and a reset link mailed: everything
// ends at once; sign-in, refresh, the device exchange and password resets
// are refused, and forgot-password answers as for an unknown address and
// mails nothing; the account stays in the organisation, disabled (as the
// members list and the admins' list say), gone for SCIM (404, not listed);
// no organisation is made; a POST of the same userName restores the same
// account with its role, and everything but the ended sign-ins works
// again.
func TestSCIMDeleteDeprovisions(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		shared := fanout.NewLocal()
		useShared := func(o *Options) { o.Fanout, o.Hub = shared, hub.New() }
		here, there := newAPI(t, s, useShared), newAPI(t, s, useShared)
		a := here
		tsHere, tsThere := here.live(), there.live()
		root := a.platformAdmin("Root Admin")
		owner := a.register("Olive Owner")
		bob := a.invite(owner, "Bob Member", "admin")
		a.apiToken(bob, "script")
		hook := a.webhookToken(bob, "user", "")
		_, refresh := a.signIn(bob)
		idp := a.scimClient(owner, "test", "example.com")
		app := a.startDevice(53682)
		deviceCode := a.approve(bob, app)
		expect(t, a.call("POST", "/api/v1/auth/forgot-password", "", map[string]string{"email": bob.Email}), 202)
		resetLink := a.mailedToken(bob.Email, "/reset-password")
		a.srv.mailing.Wait() // account mail sent in the background is in before the count
		mailed := a.mail.Count(bob.Email)
		sockets := []*wsConn{dial(t, tsHere, bob.Access, ""), dial(t, tsThere, bob.Access, ""), dial(t, tsThere, bob.Token, "")}
		for _, c := range sockets {
			c.ready()
		}
		orgs := a.orgCount()
		path := "/scim/v2/Users/" + bob.ID

		if ans := idp.do("DELETE", path, nil).want(t, 204); ans.Raw != "" {
			t.Errorf("204 with a body: %s", ans.Raw)
		}
		for _, c := range sockets {
			if got := c.closeStatus(); got != websocket.StatusPolicyViolation {
				t.Fatalf("a socket closed with %v, want %v", got, websocket.StatusPolicyViolation)
			}
		}
		expect(t, a.call("GET", "/api/v1/users/me", bob.Access, nil), 401)
		expect(t, a.call("GET", "/api/v1/users/me", bob.Token, nil), 401)
		expect(t, there.call("GET", "/ws", bob.Token, nil), 401)
		expect(t, a.call("POST", "/webhooks/inbound?token="+hook, "", map[string]string{"title": "after the deletion"}), 401)
		expect(t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": refresh}), 401)
		refusedBySCIM(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": bob.Email, "password": goodPassword}))
		refusedBySCIM(t, a.exchange(app, deviceCode, app.Verifier))
		refusedBySCIM(t, a.call("POST", "/api/v1/auth/reset-password/check", "", map[string]string{"token": resetLink}))
		refusedBySCIM(t, a.call("POST", "/api/v1/auth/reset-password", "", map[string]string{"token": resetLink, "password": "a new password 2026"}))
		known := expect(t, a.call("POST", "/api/v1/auth/forgot-password", "", map[string]string{"email": bob.Email}), 202)
		unknown := expect(t, a.call("POST", "/api/v1/auth/forgot-password", "", map[string]string{"email": "nobody@example.com"}), 202)
		if known.Raw != unknown.Raw {
			t.Errorf("forgot-password tells a disabled account from no account:\n%s\n%s", known.Raw, unknown.Raw)
		}

		// Gone for SCIM, still in the organisation, disabled.
		idp.do("GET", path, nil).want(t, 404)
		idp.do("PATCH", path, patchOp("replace", "active", true)).want(t, 404)
		idp.do("DELETE", path, nil).want(t, 404)
		if found := idp.do("GET", "/scim/v2/Users?filter="+url.QueryEscape(`userName eq "`+bob.Email+`"`), nil).want(t, 200); found.Body["totalResults"] != 0.0 {
			t.Errorf("a deleted member is listed: %s", found.Raw)
		}
		if all := idp.do("GET", "/scim/v2/Users", nil).want(t, 200); all.Body["totalResults"] != 1.0 {
			t.Errorf("the members SCIM lists after the deletion: %s", all.Raw)
		}
		if m := a.memberOf(owner, bob.ID); m["disabled"] != true || m["role"] != "admin" {
			t.Errorf("the member after the deletion: %v", m)
		}
		if m := a.memberOf(owner, owner.ID); m["disabled"] != false {
			t.Errorf("the owner: %v", m)
		}
		if u := a.adminUser(root, bob); u["disabled"] != true || u["org_id"] != owner.OrgID {
			t.Errorf("the admins see %v", u)
		}
		if n := a.orgCount(); n != orgs {
			t.Errorf("%d organisations after the deletion, %d before", n, orgs)
		}
		entries := a.scimAudits(perch.AuditSCIMUserDeleted, bob.ID)
		if len(entries) != 1 || entries[0].Changes["active"] != false || entries[0].OrgID != owner.OrgID {
			t.Errorf("the deletion's audit entries: %+v", entries)
		}

		// A POST of the same userName restores the same account.
		restored := idp.do("POST", "/scim/v2/Users", newUser(bob.Email)).want(t, 201)
		if restored.str("id") != bob.ID || restored.Body["active"] != true || restored.Header.Get("Location") != a.srv.scimBase()+"/Users/"+bob.ID {
			t.Fatalf("restored %s (Location %q)", restored.Raw, restored.Header.Get("Location"))
		}
		idp.do("GET", path, nil).want(t, 200)
		if m := a.memberOf(owner, bob.ID); m["disabled"] != false || m["role"] != "admin" {
			t.Errorf("the member after the restore: %v", m)
		}
		expect(t, a.call("GET", "/api/v1/users/me", bob.Token, nil), 200)
		expect(t, a.call("POST", "/webhooks/inbound?token="+hook, "", map[string]string{"title": "after the restore"}), 200)
		expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": bob.Email, "password": goodPassword}), 200)
		expect(t, a.call("GET", "/api/v1/users/me", bob.Access, nil), 401) // ended sign-ins stay ended
		if n := a.orgCount(); n != orgs {
			t.Errorf("%d organisations after the restore, %d before", n, orgs)
		}
		if got := a.scimAudits(perch.AuditSCIMUserRestored, bob.ID); len(got) != 1 || got[0].Changes["active"] != true {
			t.Errorf("the restore's audit entries: %+v", got)
		}
		if u, err := s.User(t.Context(), bob.ID); err != nil || u.IsAdmin || u.OrgID != owner.OrgID {
			t.Errorf("the restored account: %+v, %v", u, err)
		}

		// Nothing was mailed to the disabled account.
		if err := a.srv.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := a.mail.Count(bob.Email); n != mailed {
			t.Errorf("%d mails to the member, %d before the deletion", n, mailed)
		}
		if n := len(a.scimAuditsOf(perch.AuditPasswordResetAsked, bob.ID)); n != 1 {
			t.Errorf("%d password resets asked for, want the one before the deletion", n)
		}
	})
}

// TestSCIMDeactivationIsADisable: `active: false` disables the member as a
// platform admin does, in the organisation and still listed by SCIM
// (active false); the admins and the members list see it disabled;
// sign-in is refused naming the identity provider and forgot-password
// mails nothing; `active: true` enables it again.
func TestSCIMDeactivationIsADisable(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root Admin")
		owner := a.register("Olive Owner")
		bob := a.invite(owner, "Bob Member", "member")
		idp := a.scimClient(owner, "test", "example.com")
		orgs := a.orgCount()
		path := "/scim/v2/Users/" + bob.ID
		a.srv.mailing.Wait() // the invitation, sent in the background, is in before the count
		mailed := a.mail.Count(bob.Email)

		if off := idp.do("PATCH", path, patchOp("Replace", "active", "False")).want(t, 200); off.Body["active"] != false {
			t.Fatalf("deactivated %s", off.Raw)
		}
		if got := idp.do("GET", path, nil).want(t, 200); got.Body["active"] != false {
			t.Errorf("a deactivated member reads %s", got.Raw)
		}
		if inactive := idp.do("GET", "/scim/v2/Users?filter="+url.QueryEscape(`active eq false`), nil).want(t, 200); inactive.Body["totalResults"] != 1.0 {
			t.Errorf("inactive members: %s", inactive.Raw)
		}
		expect(t, a.call("GET", "/api/v1/users/me", bob.Access, nil), 401)
		refusedBySCIM(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": bob.Email, "password": goodPassword}))
		expect(t, a.call("POST", "/api/v1/auth/forgot-password", "", map[string]string{"email": bob.Email}), 202)
		if m := a.memberOf(owner, bob.ID); m["disabled"] != true {
			t.Errorf("the member: %v", m)
		}
		if u := a.adminUser(root, bob); u["disabled"] != true {
			t.Errorf("the admins see %v", u)
		}
		if got := a.scimAudits(perch.AuditSCIMUserDeactivated, bob.ID); len(got) != 1 {
			t.Errorf("deactivation entries: %+v", got)
		}

		if on := idp.do("PUT", path, newUser(bob.Email)).want(t, 200); on.Body["active"] != true {
			t.Fatalf("reactivated %s", on.Raw)
		}
		expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": bob.Email, "password": goodPassword}), 200)
		if n := a.orgCount(); n != orgs {
			t.Errorf("%d organisations, %d before", n, orgs)
		}
		if err := a.srv.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := a.mail.Count(bob.Email); n != mailed {
			t.Errorf("%d mails to the deactivated member, %d before", n, mailed)
		}
	})
}

// TestSCIMRestoreStaysInItsOrganisation: a POST of an address whose
// account another organisation's provider deleted is 409, and restores
// nothing; a restore of an account a platform admin disabled is 409 and
// leaves it deleted, until the admin's enable gives it back to the
// provider; restoring by externalId takes the new address, as the
// provider's assertion.
func TestSCIMRestoreStaysInItsOrganisation(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, func(o *Options) { o.SSO.AnyDomain = true })
		root := a.platformAdmin("Root Admin")
		ours, theirs := a.scimClient(a.register("Olive Owner"), "ours"), a.scimClient(a.register("Oscar Other"), "theirs")
		zed := theirs.do("POST", "/scim/v2/Users", newUser("zed@example.com")).want(t, 201)
		theirs.do("DELETE", "/scim/v2/Users/"+zed.str("id"), nil).want(t, 204)
		ours.do("POST", "/scim/v2/Users", newUser("zed@example.com")).want(t, 409, scim.Uniqueness)
		theirs.do("GET", "/scim/v2/Users/"+zed.str("id"), nil).want(t, 404)

		cy := ours.do("POST", "/scim/v2/Users", newUser("cy@example.com")).want(t, 201)
		id := cy.str("id")
		ours.do("DELETE", "/scim/v2/Users/"+id, nil).want(t, 204)
		expect(t, a.call("PATCH", "/api/v1/admin/users/"+id, root.Access, map[string]bool{"disabled": true}), 200)
		ours.do("POST", "/scim/v2/Users", newUser("cy@example.com")).want(t, 409)
		ours.do("GET", "/scim/v2/Users/"+id, nil).want(t, 404)
		// The admin's enable gives the account back to the provider, which
		// sees it (and deletes it again).
		expect(t, a.call("PATCH", "/api/v1/admin/users/"+id, root.Access, map[string]bool{"disabled": false}), 200)
		if got := ours.do("GET", "/scim/v2/Users/"+id, nil).want(t, 200); got.Body["active"] != true {
			t.Errorf("after the admin's enable: %s", got.Raw)
		}
		ours.do("DELETE", "/scim/v2/Users/"+id, nil).want(t, 204)

		moved := ours.do("POST", "/scim/v2/Users", newUser("cyril@example.com", "externalId", "ext-cy@example.com")).want(t, 201)
		if moved.str("id") != id || moved.str("emails.0.value") != "cyril@example.com" {
			t.Fatalf("restored by externalId: %s", moved.Raw)
		}
		if u, err := s.User(t.Context(), id); err != nil || u.Email != "cyril@example.com" || u.EmailVerified || u.Disabled {
			t.Errorf("the account: %+v, %v", u, err)
		}
	})
}

// scimAudits are the entries of action about userID written with actor
// type scim.
func (a *api) scimAudits(action, userID string) []*perch.AuditEntry {
	a.t.Helper()
	var out []*perch.AuditEntry
	for _, e := range a.scimAuditsOf(action, userID) {
		if e.Actor.Type != perch.ActorSCIM || !strings.HasPrefix(e.Actor.ID, perch.SCIMTokenPrefix) {
			a.t.Errorf("%s entry by %+v", action, e.Actor)
		}
		out = append(out, e)
	}
	return out
}

// scimAuditsOf are the entries of action about userID.
func (a *api) scimAuditsOf(action, userID string) []*perch.AuditEntry {
	a.t.Helper()
	entries, _, err := a.store.AuditLog(a.t.Context(), perch.AuditFilter{Action: action, Page: perch.Page{Limit: 100}})
	if err != nil {
		a.t.Fatal(err)
	}
	var out []*perch.AuditEntry
	for _, e := range entries {
		if e.Action == action && e.Target.ID == userID {
			out = append(out, e)
		}
	}
	return out
}

// TestSCIMDeletedAccountCannotSignInWithAProvider: signing in with GitHub
// to an account its organisation's identity provider deleted is refused,
// saying who disabled it, and sets no session.
func TestSCIMDeletedAccountCannotSignInWithAProvider(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		p.github.SignInAs(githubUser(10, "zed", "zed@example.com", true))
		b := a.browser()
		res, _ := b.signIn("/api/v1/auth/github")
		access := b.landed(res, "/notifications")
		me := b.me(access)
		zed := &account{ID: me["id"].(string), Email: "zed@example.com", OrgID: me["org_id"].(string), Access: access}
		idp := a.scimClient(zed, "test", "example.com")
		idp.do("DELETE", "/scim/v2/Users/"+zed.ID, nil).want(t, 204)

		b = a.browser()
		res, _ = b.signIn("/api/v1/auth/github")
		if msg := refused(t, res, "/signin"); !strings.Contains(msg, "identity provider") {
			t.Errorf("refused with %q", msg)
		}
		if b.session() != "" {
			t.Error("a deleted account got a session")
		}
	})
}
