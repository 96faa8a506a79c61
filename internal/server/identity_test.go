package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/samltest"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// Identity you can trust: a mailbox is proven only by a round trip of
// Perch's own, platform admin comes only from a grant or a listed address
// whose mailbox is proven, and an organisation's identity provider speaks
// for its own members alone. Each test here is one way the review found
// to reach platform admin, or another person's account, without that.
// newAPI lists root@example.com in PERCH_ADMIN_EMAILS: a.register("Root")
// signs that address up.

// me is the signed-in user of access.
func (a *api) me(access string) map[string]any {
	a.t.Helper()
	return expect(a.t, a.call("GET", "/api/v1/users/me", access, nil), http.StatusOK).Data()
}

// notAdmin fails unless access is an account without a proven mailbox
// and without the platform admin's routes.
func (a *api) notAdmin(access string) {
	a.t.Helper()
	if me := a.me(access); me["email_verified"] != false || me["is_admin"] != false {
		a.t.Fatalf("me = %v; want neither a proven mailbox nor platform admin", me)
	}
	expect(a.t, a.call("GET", "/api/v1/admin/users", access, nil), http.StatusForbidden)
}

// grants are the admin.granted entries about the account id.
func (a *api) grants(id string) []*perch.AuditEntry {
	a.t.Helper()
	entries, _, err := a.store.AuditLog(a.t.Context(), perch.AuditFilter{Action: perch.AuditAdminGranted, Page: perch.Page{Limit: 50}})
	if err != nil {
		a.t.Fatal(err)
	}
	return slices.DeleteFunc(entries, func(e *perch.AuditEntry) bool { return e.Target.ID != id })
}

// Finding 1: registering a listed address, making one's own organisation's
// SCIM token and patching oneself through SCIM made the address verified,
// and the account a platform admin.
func TestSCIMWritesDoNotProveAMailbox(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		boss := a.register("Root")
		idp := a.scimClient(boss, "attacker")
		idp.do("PATCH", "/scim/v2/Users/"+boss.ID, patchOp("replace", "displayName", "x")).want(t, 200)
		a.notAdmin(boss.Access)
		if g := a.grants(boss.ID); len(g) != 0 {
			t.Fatalf("admin granted: %+v", g)
		}

		// The round trip is what proves it, and the grant it brings is
		// audited once.
		a.verifyEmail(boss)
		if me := a.me(boss.Access); me["is_admin"] != true {
			t.Fatalf("after the verify link, me = %v", me)
		}
		expect(t, a.call("GET", "/api/v1/admin/users", boss.Access, nil), 200)
		g := a.grants(boss.ID)
		if len(g) != 1 || g[0].Actor.Type != perch.ActorSystem || g[0].Changes["via"] != "PERCH_ADMIN_EMAILS" || g[0].IP == "" {
			t.Fatalf("admin.granted entries = %+v; want one by PERCH_ADMIN_EMAILS, from the verifying request", g)
		}
		if err := a.srv.SyncListedAdmins(t.Context()); err != nil || len(a.grants(boss.ID)) != 1 {
			t.Fatalf("a start-up after the grant audited it again (%v)", err)
		}
	})
}

// Finding 2: the invitation link the inviter is shown registered the
// invited address as verified, and so a listed address as platform admin.
func TestTheInvitationLinkShownToTheInviterProvesNothing(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, func(o *Options) { o.AdminEmails = append(o.AdminEmails, "cto@example.com") })
		mallory := a.register("Mallory")
		inv := expect(t, a.call("POST", "/api/v1/org/invitations", mallory.Access, map[string]string{"email": "root@example.com"}), 201).Data()
		token := tokenOf(t, inv["url"].(string), "/invitations/accept")
		res := expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]string{
			"name": "Not Root", "email": "root@example.com", "password": goodPassword, "invitation_token": token}), 201).Data()
		a.notAdmin(res["access_token"].(string))
		// As after any sign-up that proved nothing, a confirmation link is
		// mailed: the address's owner can still prove it.
		a.mailedToken("root@example.com", "/verify-email")

		// The link only mailed to the address proves it: cto joins as a
		// platform admin, and the grant is audited.
		expect(t, a.call("POST", "/api/v1/org/invitations", mallory.Access, map[string]string{"email": "cto@example.com"}), 201)
		mailed := a.mailedToken("cto@example.com", "/invitations/accept")
		cto := expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]string{
			"name": "Cto", "email": "cto@example.com", "password": goodPassword, "invitation_token": mailed}), 201).Data()
		user := cto["user"].(map[string]any)
		if user["email_verified"] != true || user["is_admin"] != true {
			t.Fatalf("registered through the mailed link: %v", user)
		}
		if g := a.grants(user["id"].(string)); len(g) != 1 || g[0].Changes["via"] != "PERCH_ADMIN_EMAILS" {
			t.Fatalf("admin.granted entries = %+v", g)
		}
	})
}

// Finding 3: an owner who runs their own identity provider, with
// just-in-time accounts on, asserted a listed address and got a verified
// platform admin in their organisation.
func TestSAMLJustInTimeAccountsAreNeitherProvenNorAdmins(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		e.configure(map[string]any{"jit_provisioning": true})
		e.idp.AddUser("chief", "chiefs idp password", "root@example.com", "Chief")
		b := samltest.NewBrowser(t)
		refusedWith(t, b.Submit(e.idp.SignIn(b, e.loginURL(""), "chief", "chiefs idp password")), "not in one of the organisation's verified domains")
		if failed := e.audited(perch.AuditSignInFailed)[0]; failed.OrgID != e.owner.OrgID || failed.Actor.Email != "root@example.com" {
			t.Errorf("the refusal's entry = %+v", failed)
		}

		// Even in a verified domain, the account is the organisation's
		// assertion: no proven mailbox, no platform admin.
		e.a.verifyDomains(e.owner, "example.com")
		b = samltest.NewBrowser(t)
		p := b.Submit(e.idp.SignIn(b, e.loginURL(""), "chief", "chiefs idp password"))
		e.signedIn(b, p, samlDefaultTarget, "root@example.com")
		me := b.Get(e.base + "/api/v1/users/me")
		if !strings.Contains(me.Body, `"email_verified":false`) || !strings.Contains(me.Body, `"is_admin":false`) {
			t.Fatalf("the just-in-time account: %s", me.Body)
		}
		if admin := b.Get(e.base + "/api/v1/admin/users"); admin.Status != http.StatusForbidden {
			t.Fatalf("the admin routes answered %d", admin.Status)
		}

		// With PERCH_SSO_ANY_DOMAIN, any address: still asserted, not proven.
		anyDomain := newSAMLEnv(t, storetest.New(t, store.SQLite), func(o *Options) { o.SSO.AnyDomain = true })
		anyDomain.configure(map[string]any{"jit_provisioning": true})
		anyDomain.idp.AddUser("nia", "nias idp password", "nia@elsewhere.test", "Nia")
		b = samltest.NewBrowser(t)
		anyDomain.signedIn(b, b.Submit(anyDomain.idp.SignIn(b, anyDomain.loginURL(""), "nia", "nias idp password")), samlDefaultTarget, "nia@elsewhere.test")
		if me := b.Get(anyDomain.base + "/api/v1/users/me"); !strings.Contains(me.Body, `"email_verified":false`) {
			t.Fatalf("an any-domain account: %s", me.Body)
		}
	})
}

// Finding 4: with an account pre-made under the victim's address (here
// through the invitation link its maker was shown), the victim's later
// "Continue with GitHub" linked into it, and the maker's password still
// worked.
func TestGitHubDoesNotLinkIntoAnAccountWhoseMailboxIsNotProven(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		mallory := a.register("Mallory")
		inv := expect(t, a.call("POST", "/api/v1/org/invitations", mallory.Access, map[string]string{"email": "victim@example.com"}), 201).Data()
		pre := expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": "Victim", "email": "victim@example.com",
			"password": goodPassword, "invitation_token": tokenOf(t, inv["url"].(string), "/invitations/accept")}), 201).Data()
		preID := pre["user"].(map[string]any)["id"].(string)

		p.github.SignInAs(githubUser(77, "victim", "victim@example.com", true))
		res, _ := a.browser().signIn("/api/v1/auth/github")
		if msg := refused(t, res, "/signin"); !strings.Contains(msg, "not confirmed yet") {
			t.Fatalf("message %q", msg)
		}
		if ids := expect(t, a.call("GET", "/api/v1/users/me/identities", pre["access_token"].(string), nil), 200).List(); len(ids) != 0 {
			t.Fatalf("the victim's GitHub account was linked into the pre-made account %s: %v", preID, ids)
		}
	})
}

// Finding 5: when a platform admin is a member of someone's organisation,
// that organisation's identity provider signed in as the admin, and its
// SCIM token deactivated the admin.
func TestAnOrganisationsIdentityProviderCannotReachAPlatformAdmin(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		e.configure(nil)
		root := e.invite("Root", "member") // the mailed link: a proven, listed address
		granted := e.invite("Grace Granted", "member")
		if err := s.GrantAdmin(t.Context(), granted.Email); err != nil {
			t.Fatal(err)
		}
		rootLogin := expect(t, e.a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": root.Email, "password": goodPassword}), 200).Data()
		root.Access = rootLogin["access_token"].(string)
		if me := e.a.me(root.Access); me["is_admin"] != true {
			t.Fatalf("root = %v", me)
		}
		e.a.apiToken(root, "laptop")

		for _, admin := range []*account{root, granted} {
			login := strings.Split(admin.Email, "@")[0]
			e.idp.AddUser(login, "idp password", admin.Email, "The Admin")
			b := samltest.NewBrowser(t)
			refusedWith(t, b.Submit(e.idp.SignIn(b, e.loginURL(""), login, "idp password")), "is a platform admin of this server")
		}

		idp := e.a.scimClient(e.owner, "attacker")
		for _, admin := range []*account{root, granted} {
			path := "/scim/v2/Users/" + admin.ID
			idp.do("GET", path, nil).want(t, 200) // a member, as the organisation sees its members
			idp.do("PATCH", path, patchOp("replace", "active", false)).want(t, 403)
			idp.do("PUT", path, newUser(admin.Email, "displayName", "Taken over")).want(t, 403)
			idp.do("DELETE", path, nil).want(t, 403)
		}
		expect(t, e.a.call("GET", "/api/v1/admin/users", root.Token, nil), 200) // the admin's API token still works
		refusals := e.audited(perch.AuditSCIMRefused)
		if len(refusals) != 6 || refusals[0].Actor.Type != perch.ActorSCIM || refusals[0].OrgID != e.owner.OrgID {
			t.Fatalf("scim.user.refused entries: %d, newest %+v", len(refusals), refusals[0])
		}
	})
}

// SCIM creates accounts only in the organisation's verified domains, and
// moves none out of them (unless the operator allows any domain); each
// refusal is audited and changes nothing.
func TestSCIMCreatesOnlyInVerifiedDomains(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner := a.register("Olive Owner")
		idp := a.scimClient(owner, "test", "corp.test")
		idp.do("POST", "/scim/v2/Users", newUser("root@example.com")).want(t, 403)
		idp.do("POST", "/scim/v2/Users", newUser("bob@sub.corp.test")).want(t, 403) // a subdomain is a domain of its own
		bob := idp.do("POST", "/scim/v2/Users", newUser("bob@corp.test")).want(t, 201)
		idp.do("PATCH", "/scim/v2/Users/"+bob.str("id"), patchOp("replace", `emails[type eq "work"].value`, "root@example.com")).want(t, 403)
		if u, err := s.User(t.Context(), bob.str("id")); err != nil || u.Email != "bob@corp.test" || u.EmailVerified {
			t.Fatalf("bob = %+v, %v", u, err)
		}
		if _, _, err := s.UserCredentials(t.Context(), "root@example.com"); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Fatalf("a refused create made an account: %v", err)
		}
		entries, _, err := s.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditSCIMRefused, Page: perch.Page{Limit: 10}})
		if err != nil || len(entries) != 3 || entries[0].Target.ID != bob.str("id") || entries[2].Changes["email"] != "root@example.com" {
			t.Fatalf("refusals audited: %d, %v", len(entries), err)
		}

		open := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) { o.SSO.AnyDomain = true })
		anyIdP := open.scimClient(open.register("Olive Owner"), "test")
		made := anyIdP.do("POST", "/scim/v2/Users", newUser("root@example.com")).want(t, 201)
		if u, err := open.store.User(t.Context(), made.str("id")); err != nil || u.EmailVerified || open.srv.isAdmin(u) {
			t.Fatalf("an any-domain SCIM account: %+v, %v", u, err)
		}
	})
}

// Finding 8a: a SCIM deactivation left the member's webhook tokens
// delivering from the token cache for up to 30 s.
func TestSCIMDeactivationStopsWebhookTokensAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		owner := a.register("Olive Owner")
		bob := a.invite(owner, "Bob Member", "member")
		raw := expect(t, a.call("POST", "/api/v1/webhook-tokens", bob.Access, map[string]string{"label": "deploys", "sender": "inbound", "scope": "user"}), 201).
			Data()["raw_token"].(string)
		deliver := func() *response {
			return a.call("POST", "/webhooks/inbound?token="+raw, "", map[string]string{"title": "deployed"})
		}
		expect(t, deliver(), 200) // the token is in the cache now
		idp := a.scimClient(owner, "test")
		idp.do("PATCH", "/scim/v2/Users/"+bob.ID, patchOp("replace", "active", false)).want(t, 200)
		expect(t, deliver(), http.StatusUnauthorized)
		idp.do("PATCH", "/scim/v2/Users/"+bob.ID, patchOp("replace", "active", true)).want(t, 200)
		expect(t, deliver(), 200)
	})
}

// Every grant and withdrawal of platform admin, by any path, is audited:
// an admin's change, and the setting's when an address leaves it.
func TestEveryAdminGrantIsAudited(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		grace := a.platformAdmin("Grace")
		ada := a.register("Ada")
		expect(t, a.call("PATCH", "/api/v1/admin/users/"+ada.ID, grace.Access, map[string]bool{"platform_admin": true}), 200)
		g := a.grants(ada.ID)
		if len(g) != 1 || g[0].Actor.Type != perch.ActorAdmin || g[0].Actor.ID != grace.ID || g[0].Changes["via"] != "admin" {
			t.Fatalf("admin.granted entries = %+v", g)
		}
		expect(t, a.call("PATCH", "/api/v1/admin/users/"+ada.ID, grace.Access, map[string]bool{"platform_admin": false}), 200)
		revoked, _, err := s.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditAdminRevoked, Page: perch.Page{Limit: 10}})
		if err != nil || len(revoked) != 1 || revoked[0].Target.ID != ada.ID {
			t.Fatalf("admin.revoked entries = %+v, %v", revoked, err)
		}

		// root proves the listed address; a later server without it in
		// the list withdraws the role at start-up, audited once.
		root := a.register("Root")
		a.verifyEmail(root)
		if len(a.grants(root.ID)) != 1 {
			t.Fatal("the listed grant is not audited")
		}
		later := newAPI(t, s, func(o *Options) { o.AdminEmails = nil })
		for range 2 {
			if err := later.srv.SyncListedAdmins(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		revoked, _, err = s.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditAdminRevoked, Page: perch.Page{Limit: 10}})
		if err != nil || len(revoked) != 2 || revoked[0].Target.ID != root.ID || revoked[0].Changes["via"] != "PERCH_ADMIN_EMAILS" {
			t.Fatalf("admin.revoked entries = %+v, %v", revoked, err)
		}
	})
}

// Finding 8j: turning enforce on left members' password-era sign-ins and
// API tokens working for ever. Enforcement now ends them (and closes their
// WebSockets) for every member it binds: at once when it starts, when
// someone joins the organisation, and when an owner stops being one.
func TestEnforcedSingleSignOnEndsEarlierSignIns(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		e.configure(nil)
		signIn := func(acc *account) {
			t.Helper()
			d := expect(t, e.a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": acc.Email, "password": goodPassword}), 200).Data()
			acc.Access, acc.Refresh = d["access_token"].(string), d["refresh_token"].(string)
		}
		bob, olga := e.invite("Bob Member", "member"), e.invite("Olga Owner", "owner")
		signIn(bob)
		signIn(olga)
		tokenID := e.a.apiToken(bob, "laptop")
		socket := dial(t, e.ts, bob.Token, "")
		socket.ready()

		e.configure(map[string]any{"enforce": true})
		if got := socket.closeStatus(); got != 1008 {
			t.Fatalf("bob's socket closed with %v, want 1008", got)
		}
		expect(t, e.a.call("GET", "/api/v1/users/me", bob.Access, nil), 401)
		expect(t, e.a.call("GET", "/api/v1/users/me", bob.Token, nil), 401)
		expect(t, e.a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": bob.Refresh}), 401)
		for _, owner := range []*account{e.owner, olga} { // break-glass: owners keep every way in
			expect(t, e.a.call("GET", "/api/v1/users/me", owner.Access, nil), 200)
		}
		if ended := e.audited(perch.AuditSSOSignInsEnded); len(ended) != 1 || ended[0].Target.ID != bob.ID ||
			fmt.Sprint(ended[0].Changes["api_credentials_switched_off"]) != "1" {
			t.Fatalf("sign_ins_ended entries = %+v", *ended[0])
		}

		// Through the organisation's SAML, bob may switch his token on again.
		e.idp.AddUser("bob", "bobs idp password", bob.Email, "Bob")
		b := samltest.NewBrowser(t)
		p := b.Submit(e.idp.SignIn(b, e.loginURL(""), "bob", "bobs idp password"))
		e.signedIn(b, p, samlDefaultTarget, bob.Email)
		expect(t, e.a.call("PATCH", "/api/v1/tokens/"+tokenID, sessionOf(t, p), map[string]bool{"is_active": true}), 200)
		expect(t, e.a.call("GET", "/api/v1/users/me", bob.Token, nil), 200)

		// An owner who stops being one is bound from then on.
		expect(t, e.a.call("PATCH", "/api/v1/org/members/"+olga.ID, e.owner.Access, map[string]string{"role": "admin"}), 200)
		expect(t, e.a.call("GET", "/api/v1/users/me", olga.Access, nil), 401)

		// Carol has an account of her own; joining the organisation ends
		// the password sign-in she joined with.
		carol := e.a.register("Carol")
		expect(t, e.a.call("POST", "/api/v1/org/invitations", e.owner.Access, map[string]string{"email": carol.Email}), 201)
		var token string
		for token == "" { // past her verification mail
			if link, err := url.Parse(e.a.mail.WaitFor(t, carol.Email).Link()); err == nil && link.Path == "/invitations/accept" {
				token = link.Query().Get("token")
			}
		}
		expect(t, e.a.call("POST", "/api/v1/org/invitations/accept", carol.Access, map[string]string{"token": token}), 200)
		expect(t, e.a.call("GET", "/api/v1/users/me", carol.Access, nil), 401)
	})
}

// sessionOf is the access token in the session cookie a sign-in set.
func sessionOf(t *testing.T, p samltest.Page) string {
	t.Helper()
	for _, c := range p.Header.Values("Set-Cookie") {
		if v, ok := strings.CutPrefix(c, perch.SessionCookie+"="); ok {
			return strings.SplitN(v, ";", 2)[0]
		}
	}
	t.Fatal("no session cookie")
	return ""
}
