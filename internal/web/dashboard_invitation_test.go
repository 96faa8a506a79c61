package web_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestDashboardInvitationSaysWhoInvitesWhere: a live invitation link's
// page names the inviter, the organisation and the role, and its sign-up
// form has the invited address filled in, read-only. The link is the
// credential: a dead or made-up one names nobody.
func TestDashboardInvitationSaysWhoInvitesWhere(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	olive := a.register("Olive Owner")
	expect(t, a.call("PATCH", "/api/v1/org", olive.Access, map[string]string{"name": "Acme Ops"}), 200)
	inv := expect(t, a.call("POST", "/api/v1/org/invitations", olive.Access, map[string]string{"email": "grace@example.com", "role": "admin"}), 201).Data()
	link, err := url.Parse(inv["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	token := link.Query().Get("token")

	visitor := newBrowser(t, a.ts)
	p := visitor.get("/invitations/accept?token="+url.QueryEscape(token)).expect(t, 200, "")
	p.contains(t, "<h1>Join Acme Ops</h1>", `id="invited-by">Olive Owner invited you to join <strong>Acme Ops</strong> on Perch as an admin.`,
		`id="invited-email">grace@example.com<`, `href="/signup?invitation_token=`+url.QueryEscape(token)+`"`)
	signup := visitor.get("/signup?invitation_token="+url.QueryEscape(token)).expect(t, 200, "")
	signup.contains(t, "Join <strong>Acme Ops</strong> on Perch, as Olive Owner invited you.",
		`value="grace@example.com" readonly`, "The invitation is for this address")

	// A made-up link, or none: nothing named, and a clear way on.
	for _, path := range []string{"/invitations/accept?token=inv_made_up", "/invitations/accept"} {
		dead := visitor.get(path).expect(t, 400, "")
		dead.contains(t, "<h1>Join an organisation</h1>", `id="invitation-dead"`).lacks(t, "Acme Ops", "Olive", "grace@")
	}
	visitor.get("/signup?invitation_token=inv_made_up").expect(t, 200, "").lacks(t, "Acme Ops", "Olive", "grace@", "readonly")

	// Signed in as someone else: told so, and offered no Accept.
	a.register("Mallory")
	mallory := signedIn(t, a, "Mallory")
	mallory.get("/invitations/accept?token="+url.QueryEscape(token)).expect(t, 200, "").
		contains(t, `id="invitation-elsewhere"`, "The invitation is for grace@example.com").lacks(t, `action="/invitations/accept"`)

	// Joining through the form: the page's welcome names the organisation.
	visitor.post("/signup", url.Values{"name": {"Grace Hopper"}, "email": {"grace@example.com"}, "password": {goodPassword},
		"invitation_token": {token}}).expect(t, 303, "/notifications")
	org := visitor.get("/org").expect(t, 200, "")
	if !strings.Contains(org.Body, "<h1>Acme Ops</h1>") {
		t.Fatalf("after joining, the organisation page is not Acme Ops': %.500s", org.Body)
	}
	// Spent: the link names nobody any more.
	visitor.get("/invitations/accept?token="+url.QueryEscape(token)).expect(t, 400, "").lacks(t, "Acme Ops")
}
