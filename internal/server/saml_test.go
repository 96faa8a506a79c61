package server

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/beevik/etree"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/samltest"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestSAMLSignIn: a member signs in through the organisation's identity
// provider, over HTTP, from Perch's start of the sign-in to a session
// that works, and ends on the page asked for; a desktop sign-in ends on
// its approval page. Every sign-in is audited.
func TestSAMLSignIn(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		bob := e.invite("Bob Member", "member")
		e.configure(nil)
		e.idp.AddUser("bob", "bobs idp password", bob.Email, "Bob at the IdP")

		b := samltest.NewBrowser(t)
		form := e.idp.SignIn(b, e.loginURL("&redirect=/org"), "bob", "bobs idp password")
		if form.Action != e.base+samlACSPath || form.Values.Get("RelayState") == "" {
			t.Fatalf("the IdP posts to %q with %v", form.Action, form.Values)
		}
		e.signedIn(b, b.Submit(form), "/org", bob.Email)
		entry := e.audited(perch.AuditSignedIn)[0]
		if entry.Actor.ID != bob.ID || entry.OrgID != e.owner.OrgID || entry.Changes["method"] != "saml" {
			t.Errorf("audit entry %+v", entry)
		}

		// A desktop sign-in: the browser ends on the approval page; an
		// address off the site is not followed.
		b = samltest.NewBrowser(t)
		form = e.idp.SignIn(b, e.loginURL("&device_session=abc123"), "bob", "bobs idp password")
		e.signedIn(b, b.Submit(form), "/device?session_id=abc123", bob.Email)
		b = samltest.NewBrowser(t)
		form = e.idp.SignIn(b, e.loginURL("&redirect="+url.QueryEscape("//evil.test/x")), "bob", "bobs idp password")
		e.signedIn(b, b.Submit(form), samlDefaultTarget, bob.Email)
	})
}

// TestSAMLJustInTime: with jit_provisioning an unknown address of one of
// the organisation's verified domains becomes a member with the default
// role, its address the organisation's assertion (not a proven mailbox);
// without it, or outside those domains, the sign-in is refused.
func TestSAMLJustInTime(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		e.configure(nil)
		e.idp.AddUser("nia", "nias idp password", "nia.new@example.com", "Nia New")

		b := samltest.NewBrowser(t)
		refusedWith(t, b.Submit(e.idp.SignIn(b, e.loginURL(""), "nia", "nias idp password")), "no account for nia.new@example.com")
		if e.audited(perch.AuditSignInFailed)[0].Changes["method"] != "saml" {
			t.Error("the refusal is not audited as a SAML sign-in")
		}

		e.configure(map[string]any{"jit_provisioning": true, "default_role": "admin"})
		b = samltest.NewBrowser(t)
		refusedWith(t, b.Submit(e.idp.SignIn(b, e.loginURL(""), "nia", "nias idp password")), "not in one of the organisation's verified domains")
		if _, _, err := s.UserCredentials(t.Context(), "nia.new@example.com"); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Fatalf("an address outside the verified domains got an account: %v", err)
		}

		e.a.verifyDomains(e.owner, "example.com")
		b = samltest.NewBrowser(t)
		e.signedIn(b, b.Submit(e.idp.SignIn(b, e.loginURL(""), "nia", "nias idp password")), samlDefaultTarget, "nia.new@example.com")
		u, _, err := s.UserCredentials(t.Context(), "nia.new@example.com")
		if err != nil || u.OrgID != e.owner.OrgID || u.OrgRole != perch.RoleAdmin || u.EmailVerified || u.Name != "Nia New" {
			t.Fatalf("the new account: %+v, %v", u, err)
		}
		if au, err := s.AdminUser(t.Context(), u.ID); err != nil || au.EmailAssertedBy != e.owner.OrgID {
			t.Fatalf("the new account's address: %+v, %v; want asserted by %s", au, err, e.owner.OrgID)
		}
		if e.audited(perch.AuditSAMLProvisioned)[0].Target.ID != u.ID {
			t.Error("the new account is not audited")
		}
		// It has no password to sign in with.
		expect(t, e.a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": u.Email, "password": "any password at all"}), 401)
	})
}

// TestSAMLEnforce: with enforce, the organisation's members cannot sign in
// with a password, its owners still can (break-glass), and the members
// sign in with SAML; other organisations are untouched.
func TestSAMLEnforce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		bob := e.invite("Bob Member", "member")
		eve := e.a.register("Eve Elsewhere")
		e.configure(map[string]any{"enforce": true})
		login := func(acc *account) *response {
			return e.a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": acc.Email, "password": goodPassword})
		}
		res := expect(t, login(bob), 403)
		if !strings.Contains(res.ErrorMessage(), "single sign-on") {
			t.Errorf("the refusal says %q", res.ErrorMessage())
		}
		if e.audited(perch.AuditSignInFailed)[0].Changes["reason"] != "single sign-on enforced" {
			t.Error("the refusal is not audited")
		}
		expect(t, login(e.owner), 200)
		expect(t, login(eve), 200)
		// An invitation makes the account but no password session.
		carol := emailFor("Carol Invited")
		expect(t, e.a.call("POST", "/api/v1/org/invitations", e.owner.Access, map[string]string{"email": carol}), 201)
		link, err := url.Parse(e.a.mail.WaitFor(t, carol).Link())
		if err != nil {
			t.Fatal(err)
		}
		res = expect(t, e.a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": "Carol Invited", "email": carol,
			"password": goodPassword, "invitation_token": link.Query().Get("token")}), 403)
		if !strings.Contains(res.ErrorMessage(), "single sign-on") {
			t.Errorf("registering through an invitation: %q", res.ErrorMessage())
		}
		// A wrong password is still just wrong: the refusal tells nothing to
		// someone who does not know the password.
		expect(t, e.a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": bob.Email, "password": "not the password"}), 401)

		e.idp.AddUser("bob", "bobs idp password", bob.Email, "Bob")
		b := samltest.NewBrowser(t)
		e.signedIn(b, b.Submit(e.idp.SignIn(b, e.loginURL(""), "bob", "bobs idp password")), samlDefaultTarget, bob.Email)

		e.configure(map[string]any{"enforce": false})
		expect(t, login(bob), 200)
	})
}

// TestSAMLRefusesAnotherOrganisationsUser: an address whose account is in
// another organisation is refused with a message, whatever the settings.
func TestSAMLRefusesAnotherOrganisationsUser(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		eve := e.a.register("Eve Elsewhere")
		e.configure(map[string]any{"jit_provisioning": true})
		e.idp.AddUser("eve", "eves idp password", eve.Email, "Eve")
		b := samltest.NewBrowser(t)
		refusedWith(t, b.Submit(e.idp.SignIn(b, e.loginURL(""), "eve", "eves idp password")), "belongs to another organisation")
		if u, _, _ := s.UserCredentials(t.Context(), eve.Email); u.OrgID != eve.OrgID {
			t.Fatal("the account moved")
		}
	})
}

// TestSAMLTimeLimits: the server's own clock decides (±2 minutes): a
// response brought too late is expired, one that arrives before it is
// valid is refused, both on Perch's reading, which the library (on the
// real clock) would have passed.
func TestSAMLTimeLimits(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		bob := e.invite("Bob Member", "member")
		e.configure(nil)
		e.idp.AddUser("bob", "bobs idp password", bob.Email, "Bob")

		b := samltest.NewBrowser(t)
		form := e.idp.SignIn(b, e.loginURL(""), "bob", "bobs idp password")
		e.a.clock.Advance(8 * time.Minute) // the sign-in is still open (10 minutes), the assertion is not
		refusedWith(t, b.Submit(form), "has expired")

		e.a.clock.Advance(-8 * time.Minute)
		b = samltest.NewBrowser(t)
		form = e.idp.SignIn(b, e.loginURL(""), "bob", "bobs idp password")
		e.a.clock.Advance(-5 * time.Minute)
		refusedWith(t, b.Submit(form), "not valid yet")

		// Within the two minutes' leeway, it passes.
		e.a.clock.Advance(5*time.Minute - 90*time.Second)
		b = samltest.NewBrowser(t)
		form = e.idp.SignIn(b, e.loginURL(""), "bob", "bobs idp password")
		e.signedIn(b, b.Submit(form), samlDefaultTarget, bob.Email)
	})
}

// TestSAMLReplay: a response is used once. Brought again, the sign-in it
// answers is over; a response to no sign-in (started at the identity
// provider) is remembered by its assertion's ID, by every instance that
// shares the database.
func TestSAMLReplay(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		bob := e.invite("Bob Member", "member")
		e.configure(nil)
		e.idp.AddUser("bob", "bobs idp password", bob.Email, "Bob")
		b := samltest.NewBrowser(t)
		form := e.idp.SignIn(b, e.loginURL(""), "bob", "bobs idp password")
		e.signedIn(b, b.Submit(form), samlDefaultTarget, bob.Email)
		refusedWith(t, samltest.NewBrowser(t).Submit(form), "expired or was used")

		// Sign-ins the identity provider starts, brought to two instances.
		e.configure(map[string]any{"allow_idp_initiated": true})
		other := newAPI(t, s, func(o *Options) { o.BaseURL = e.base })
		other.clock.Advance(time.Since(other.clock.Now()))
		first := e.forger().Response(t, e.spec(bob.Email, ""))
		if p := postTo(t, other, first); p.Status != http.StatusFound || p.Location != samlDefaultTarget {
			t.Fatalf("the other instance refused a good response: %d %q", p.Status, p.Location)
		}
		refusedWith(t, e.post(samltest.NewBrowser(t), first, ""), "used already")
		second := e.forger().Response(t, e.spec(bob.Email, ""))
		b = samltest.NewBrowser(t)
		e.signedIn(b, e.post(b, second, ""), samlDefaultTarget, bob.Email)
		refusedWith(t, postTo(t, other, second), "used already")
		refusedWith(t, e.post(samltest.NewBrowser(t), second, ""), "used already")
	})
}

// postTo brings a response to the ACS of a's server, in-process.
func postTo(t *testing.T, a *api, response *etree.Element) samltest.Page {
	t.Helper()
	form := url.Values{"SAMLResponse": {samltest.Encode(t, response)}}
	req := httptest.NewRequest("POST", samlACSPath, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	a.srv.ServeHTTP(rec, req)
	return samltest.Page{Status: rec.Code, Location: rec.Header().Get("Location"), Body: rec.Body.String(), Header: rec.Header()}
}

// TestSAMLLoginRefusals: a sign-in cannot start for an organisation
// without SAML, or with it switched off.
func TestSAMLLoginRefusals(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		b := samltest.NewBrowser(t)
		refusedWith(t, b.Get(e.loginURL("")), "not set up")
		refusedWith(t, b.Get(e.base+samlLoginPath+"?org_id=nope"), "not set up")
		e.configure(map[string]any{"enabled": false})
		refusedWith(t, b.Get(e.loginURL("")), "not set up")

		// Nor can a response be brought for it.
		response := e.forger().Response(t, e.spec(e.owner.Email, ""))
		refusedWith(t, e.post(b, response, ""), "not enabled")
		res := b.Submit(samltest.Form{Action: e.base + samlACSPath, Values: url.Values{"SAMLResponse": {"%%%"}}})
		refusedWith(t, res, "no SAML response")
		req := httptest.NewRequest("POST", samlACSPath, strings.NewReader("SAMLResponse="+strings.Repeat("A", 2<<20)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		e.a.srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("a response past the body limit: %d", rec.Code)
		}
	})
}
