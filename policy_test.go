package perch

import "testing"

// TestAuthorizeWorkflows: every member reads and tries the organisation's
// workflows; only owners and admins change them.
func TestAuthorizeWorkflows(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		role         string
		view, manage bool
	}{
		{RoleMember, true, false},
		{RoleAdmin, true, true},
		{RoleOwner, true, true},
	} {
		u := &User{ID: "u1", OrgID: "o1", OrgRole: c.role}
		if err := Authorize(u, ViewWorkflows); (err == nil) != c.view {
			t.Errorf("%s: ViewWorkflows = %v, want allowed %v", c.role, err, c.view)
		}
		err := Authorize(u, ManageWorkflows)
		if (err == nil) != c.manage {
			t.Errorf("%s: ManageWorkflows = %v, want allowed %v", c.role, err, c.manage)
		}
		if err != nil && ErrorCode(err) != EFORBIDDEN {
			t.Errorf("%s: ManageWorkflows refused with %q, want %q", c.role, ErrorCode(err), EFORBIDDEN)
		}
	}
}
