package web_test

import (
	"net/url"
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestDashboardMembersShowDisabledAccounts: a member whose account is
// disabled (here by a platform admin; a SCIM deactivation or deletion
// alike) stays on the organisation page, marked Disabled; the mark goes
// when the account is enabled.
func TestDashboardMembersShowDisabledAccounts(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	root, _ := platformAdmin(t, a, "Root Admin")
	a.register("Olive Owner")
	olive := signedIn(t, a, "Olive Owner")
	owner := a.register("Oscar Owner")
	inv := expect(t, a.call("POST", "/api/v1/org/invitations", owner.Access, map[string]string{"email": "grace@example.com", "role": "member"}), 201).Data()
	link, err := url.Parse(inv["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	grace := expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": "Grace Hopper", "email": "grace@example.com",
		"password": goodPassword, "invitation_token": link.Query().Get("token")}), 201).Data()["user"].(map[string]any)["id"].(string)
	oscar := signedIn(t, a, "Oscar Owner")
	mark := `title="The account is disabled`

	oscar.get("/org").expect(t, 200, "").contains(t, "Grace Hopper").lacks(t, mark)
	expect(t, a.call("PATCH", "/api/v1/admin/users/"+grace, root.Access, map[string]bool{"disabled": true}), 200)
	oscar.get("/org").expect(t, 200, "").contains(t, "Grace Hopper", mark)
	olive.get("/org").expect(t, 200, "").lacks(t, "Grace Hopper", mark) // another organisation
	expect(t, a.call("PATCH", "/api/v1/admin/users/"+grace, root.Access, map[string]bool{"disabled": false}), 200)
	oscar.get("/org").expect(t, 200, "").contains(t, "Grace Hopper").lacks(t, mark)
}
