package server

import (
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// A signed-in user who starts a sign-in with a provider from Perch's own
// pages links it to their account (and stays who they are); a provider
// account linked to someone else is refused with a message on the profile.
// Another site's link to the start does not link: it signs in.
func TestOAuthLinksWhileSignedIn(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		root := a.platformAdmin("Root")
		ada, bob := a.register("Ada"), a.register("Bob")

		// Ada links a Google account whose address is not hers and not
		// verified: linking while signed in needs neither.
		p.google.SignInAs("g-ada", "ada.personal@example.com", false)
		b := a.browser()
		b.setSession(ada.Access)
		b.site = "same-origin"
		res, _ := b.signIn("/api/v1/auth/google?redirect=/profile")
		b.landed(res, "/profile")
		if b.session() != ada.Access {
			t.Fatal("linking replaced the session")
		}
		ids := expect(t, a.call("GET", "/api/v1/users/me/identities", ada.Access, nil), 200).List()
		if len(ids) != 1 || ids[0]["provider"] != "google" || ids[0]["email"] != "ada.personal@example.com" {
			t.Fatalf("identities = %v", ids)
		}
		if e := findAudit(t, a.auditEntries(root), perch.AuditIdentityLinked, ada.ID); e["changes"].(map[string]any)["provider"] != "google" {
			t.Errorf("entry = %v", e)
		}
		// That Google account now signs Ada in.
		p.google.SignInAs("g-ada", "ada.personal@example.com", false)
		other := a.browser()
		res, _ = other.signIn("/api/v1/auth/google")
		if other.me(other.landed(res, "/notifications"))["id"] != ada.ID {
			t.Fatal("the linked Google account does not sign in as ada")
		}

		// Bob cannot link Ada's Google account.
		p.google.SignInAs("g-ada", "ada.personal@example.com", true)
		bb := a.browser()
		bb.setSession(bob.Access)
		res, _ = bb.signIn("/api/v1/auth/google")
		if msg := refused(t, res, "/profile"); msg != "This Google account is already linked to another Perch account." {
			t.Fatalf("message %q", msg)
		}
		// Nor can Ada link a second Google account.
		p.google.SignInAs("g-ada-2", "ada.work@example.com", true)
		res, _ = b.signIn("/api/v1/auth/google")
		if msg := refused(t, res, "/profile"); !strings.Contains(msg, "already linked to another Google account") {
			t.Fatalf("message %q", msg)
		}

		// From another site, the start does not link to Bob: it signs in
		// as whoever the GitHub account is (here a new account).
		p.github.SignInAs(githubUser(77, "mallory", "mallory@example.com", true))
		bb.site = "cross-site"
		res, _ = bb.signIn("/api/v1/auth/github")
		if me := bb.me(bb.landed(res, "/notifications")); me["id"] == bob.ID || me["email"] != "mallory@example.com" {
			t.Fatalf("signed in as %v", me)
		}
		if ids := expect(t, a.call("GET", "/api/v1/users/me/identities", bob.Access, nil), 200).List(); len(ids) != 0 {
			t.Fatalf("a cross-site start linked %v to bob", ids)
		}
	})
}

// GET and DELETE /users/me/identities: removing a provider is refused
// while it is the last way to sign in, and allowed once there is another
// (a provider, or a password).
func TestIdentitiesListAndRemove(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a, p := newOAuthAPI(t, s)
		root := a.platformAdmin("Root")
		p.github.SignInAs(githubUser(5, "solo", "solo@example.com", true))
		b := a.browser()
		res, _ := b.signIn("/api/v1/auth/github")
		access := b.landed(res, "/notifications")
		id := b.me(access)["id"].(string)

		res = expect(t, a.call("DELETE", "/api/v1/users/me/identities/github", access, nil), 409)
		if !strings.Contains(res.ErrorMessage(), "GitHub is the only way you sign in") {
			t.Fatalf("message %q", res.ErrorMessage())
		}
		expect(t, a.call("DELETE", "/api/v1/users/me/identities/google", access, nil), 404)
		expect(t, a.call("DELETE", "/api/v1/users/me/identities/gitlab", access, nil), 404)
		expect(t, a.call("DELETE", "/api/v1/users/me/identities/github", "", nil), 401)

		// Link Google too: now GitHub may go, and then Google may not.
		p.google.SignInAs("g-solo", "solo@example.com", true)
		b.site = "same-origin"
		res, _ = b.signIn("/api/v1/auth/google?redirect=/profile")
		b.landed(res, "/profile")
		ids := expect(t, a.call("GET", "/api/v1/users/me/identities", access, nil), 200).List()
		if len(ids) != 2 || ids[0]["provider"] != "github" || ids[1]["provider"] != "google" {
			t.Fatalf("identities = %v", ids)
		}
		expect(t, a.call("DELETE", "/api/v1/users/me/identities/github", access, nil), 204)
		if ids := expect(t, a.call("GET", "/api/v1/users/me/identities", access, nil), 200).List(); len(ids) != 1 || ids[0]["provider"] != "google" {
			t.Fatalf("identities = %v", ids)
		}
		expect(t, a.call("DELETE", "/api/v1/users/me/identities/google", access, nil), 409)
		if e := findAudit(t, a.auditEntries(root), perch.AuditIdentityRemoved, id); e["changes"].(map[string]any)["provider"] != "github" {
			t.Errorf("entry = %v", e)
		}

		// An account with a password may remove its only provider.
		ada := a.register("Ada")
		a.verifyEmail(ada)
		p.github.SignInAs(githubUser(6, "ada", ada.Email, true))
		res, _ = a.browser().signIn("/api/v1/auth/github")
		expect(t, res, 302)
		expect(t, a.call("DELETE", "/api/v1/users/me/identities/github", ada.Access, nil), 204)
		if ids := expect(t, a.call("GET", "/api/v1/users/me/identities", ada.Access, nil), 200).List(); len(ids) != 0 {
			t.Fatalf("identities = %v", ids)
		}
	})
}
