package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func TestInvitationMailJoinsNewUserToTheOrg(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		inv := expect(t, a.call("POST", "/api/v1/org/invitations", ada.Access, map[string]string{"email": "Bob@Example.com", "role": "admin"}), 201).Data()
		if inv["email"] != "Bob@Example.com" || inv["role"] != "admin" || inv["status"] != "pending" || inv["invited_by"].(map[string]any)["id"] != ada.ID {
			t.Fatalf("invitation = %v", inv)
		}
		m := a.mail.WaitFor(t, "Bob@Example.com")
		if !strings.Contains(m.Subject, "Ada's organisation") || !strings.Contains(m.Text, "Ada") || !strings.Contains(m.HTML, m.Link()) {
			t.Fatalf("mail: subject %q\n%s", m.Subject, m.Text)
		}
		// Two links: the one Ada is shown to pass on by hand, and the one
		// only mailed to Bob, which alone can prove his mailbox.
		shown := tokenOf(t, inv["url"].(string), "/invitations/accept")
		token := tokenOf(t, m.Link(), "/invitations/accept")
		if shown == token {
			t.Fatalf("the answered url %q is the mailed link", inv["url"])
		}

		// Registering through the link with another address does not work.
		res := expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": "Mallory", "email": "mallory@example.com", "password": goodPassword, "invitation_token": token}), 403)
		if !strings.Contains(res.Raw, "Bob@Example.com") {
			t.Fatalf("the refusal does not say whom the invitation is for: %s", res.Raw)
		}
		bob := expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": "Bob", "email": "bob@example.com", "password": goodPassword, "invitation_token": token}), 201).Data()
		u := bob["user"].(map[string]any)
		if u["org_id"] != ada.OrgID || u["org_role"] != "admin" || u["email_verified"] != true {
			t.Fatalf("Bob = %v", u)
		}
		// Spent.
		expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": "Bob", "email": "bob2@example.com", "password": goodPassword, "invitation_token": token}), 400)
		list := expect(t, a.call("GET", "/api/v1/org/invitations", ada.Access, nil), 200).List()
		if len(list) != 1 || list[0]["status"] != "accepted" || list[0]["accepted_at"] == nil {
			t.Fatalf("invitations = %v", list)
		}
		if _, ok := list[0]["url"]; ok {
			t.Fatal("the list repeats the invitation link")
		}
	})
}

// TestCheckInvitation: a live link (either of the two) says whose
// organisation it joins, who invited, the role and the address, without
// being spent; a link that is not live says nothing of them.
func TestCheckInvitation(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		inv := expect(t, a.call("POST", "/api/v1/org/invitations", ada.Access, map[string]string{"email": "bob@example.com", "role": "admin"}), 201).Data()
		shown := tokenOf(t, inv["url"].(string), "/invitations/accept")
		mailed := a.mailedToken("bob@example.com", "/invitations/accept")
		for _, token := range []string{shown, mailed} {
			got := expect(t, a.call("POST", "/api/v1/auth/invitation/check", "", map[string]string{"token": token}), 200).Data()
			if got["org_name"] != "Ada's organisation" || got["invited_by"] != "Ada" || got["email"] != "bob@example.com" ||
				got["role"] != "admin" || got["expires_at"] != inv["expires_at"] {
				t.Fatalf("check = %v", got)
			}
		}
		expect(t, a.call("POST", "/api/v1/auth/invitation/check", "", map[string]string{}), 422)
		// Not spent by the check: Bob still joins with it.
		expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": "Bob", "email": "bob@example.com", "password": goodPassword, "invitation_token": mailed}), 201)
		for _, token := range []string{mailed, shown, "inv_nothing"} {
			res := expect(t, a.call("POST", "/api/v1/auth/invitation/check", "", map[string]string{"token": token}), 400)
			if strings.Contains(res.Raw, "Ada") || strings.Contains(res.Raw, "bob@") {
				t.Fatalf("a dead link names the invitation: %s", res.Raw)
			}
		}
	})
}

func TestAcceptInvitationWhenSignedIn(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, bob, carol := a.register("Ada"), a.register("Bob"), a.register("Carol")
		expect(t, a.call("POST", "/api/v1/org/invitations", ada.Access, map[string]string{"email": bob.Email}), 201)
		token := a.mailedToken(bob.Email, "/invitations/accept")

		expect(t, a.call("POST", "/api/v1/org/invitations/accept", "", map[string]string{"token": token}), 401)
		expect(t, a.call("POST", "/api/v1/org/invitations/accept", carol.Access, map[string]string{"token": token}), 403)
		expect(t, a.call("POST", "/api/v1/org/invitations/accept", bob.Access, map[string]string{}), 422)
		org := expect(t, a.call("POST", "/api/v1/org/invitations/accept", bob.Access, map[string]string{"token": token}), 200).Data()
		if org["id"] != ada.OrgID || org["seat_count"] != 2.0 {
			t.Fatalf("org = %v", org)
		}
		me := expect(t, a.call("GET", "/api/v1/users/me", bob.Access, nil), 200).Data()
		if me["org_id"] != ada.OrgID || me["org_role"] != "member" {
			t.Fatalf("Bob = %v", me)
		}
		expect(t, a.call("POST", "/api/v1/org/invitations/accept", bob.Access, map[string]string{"token": token}), 400)
	})
}

func TestInvitationRules(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		carol := a.invite(ada, "Carol", "admin")
		invite := func(by *account, email, role string) *response {
			return a.call("POST", "/api/v1/org/invitations", by.Access, map[string]string{"email": email, "role": role})
		}
		expect(t, invite(bob, "x@example.com", "member"), 403)
		expect(t, invite(carol, "x@example.com", "owner"), 403)
		res := expect(t, invite(carol, "not an address", "chief"), 422)
		if res.Fields()["email"] == nil || res.Fields()["role"] == nil {
			t.Fatalf("fields = %v", res.Fields())
		}
		expect(t, invite(carol, "BOB@example.com", "member"), 409) // a member already
		dan := expect(t, invite(carol, "dan@example.com", ""), 201).Data()
		if dan["role"] != "member" {
			t.Fatalf("default role = %v", dan["role"])
		}
		expect(t, invite(carol, "Dan@Example.com", "admin"), 409) // pending already
		expect(t, a.call("GET", "/api/v1/org/invitations", bob.Access, nil), 403)

		// Revoked: the link dies.
		danToken := a.mailedToken("dan@example.com", "/invitations/accept")
		expect(t, a.call("DELETE", "/api/v1/org/invitations/"+dan["id"].(string), carol.Access, nil), 204)
		expect(t, a.call("DELETE", "/api/v1/org/invitations/"+dan["id"].(string), carol.Access, nil), 409)
		expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": "Dan", "email": "dan@example.com", "password": goodPassword, "invitation_token": danToken}), 400)

		// Expired after seven days, and then it may be sent again.
		expect(t, invite(carol, "erin@example.com", "member"), 201)
		erinToken := a.mailedToken("erin@example.com", "/invitations/accept")
		a.apiToken(ada, "outlives the access token")
		a.clock.Advance(perch.InvitationTTL)
		list := expect(t, a.call("GET", "/api/v1/org/invitations", ada.Token, nil), 200).List()
		status := map[string]any{}
		for _, inv := range list {
			status[inv["email"].(string)] = inv["status"]
		}
		if status["erin@example.com"] != "expired" || status["dan@example.com"] != "revoked" || status["bob@example.com"] != "accepted" {
			t.Fatalf("statuses = %v", status)
		}
		expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": "Erin", "email": "erin@example.com", "password": goodPassword, "invitation_token": erinToken}), 400)
		expect(t, a.call("POST", "/api/v1/org/invitations", ada.Token, map[string]string{"email": "erin@example.com"}), 201)
	})
}

func TestSeatCapCountsMembersAndPendingInvitations(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada") // team plan: 25 seats
		var last string
		for i := range 24 {
			last = expect(t, a.call("POST", "/api/v1/org/invitations", ada.Access, map[string]string{"email": fmt.Sprintf("p%d@example.com", i)}), 201).Data()["id"].(string)
		}
		res := expect(t, a.call("POST", "/api/v1/org/invitations", ada.Access, map[string]string{"email": "one.too.many@example.com"}), 409)
		if !strings.Contains(res.Raw, "25 seats") {
			t.Fatalf("the message does not explain the cap: %s", res.Raw)
		}
		expect(t, a.call("DELETE", "/api/v1/org/invitations/"+last, ada.Access, nil), 204)
		expect(t, a.call("POST", "/api/v1/org/invitations", ada.Access, map[string]string{"email": "one.too.many@example.com"}), 201)
	})
}
