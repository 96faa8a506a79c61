package perch

import (
	"strings"
	"testing"
)

func TestPagerDutyIntegrationValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		key, from string
		bad       []string // fields with a problem
	}{
		{"u+AbC_123-xyz", "ops@example.com", nil},
		{"  u+AbC_123  ", " ops@example.com ", nil}, // trimmed
		{"", "ops@example.com", []string{"api_key"}},
		{"has space", "ops@example.com", []string{"api_key"}},
		{"tab\tkey", "ops@example.com", []string{"api_key"}},
		{"clé", "ops@example.com", []string{"api_key"}},
		{strings.Repeat("k", MaxIntegrationKey), "ops@example.com", nil},
		{strings.Repeat("k", MaxIntegrationKey+1), "ops@example.com", []string{"api_key"}},
		{"k", "", []string{"from_email"}},
		{"k", "Ops <ops@example.com>", []string{"from_email"}},
		{"", "nope", []string{"api_key", "from_email"}},
	} {
		in := PagerDutyIntegration{APIKey: c.key, FromEmail: c.from}
		err := in.Validate()
		if len(c.bad) == 0 {
			if err != nil {
				t.Errorf("%q, %q: %v", c.key, c.from, err)
			}
			continue
		}
		e, ok := err.(*Error)
		if !ok || e.Code != EVALIDATION || len(e.Fields) != len(c.bad) {
			t.Errorf("%q, %q: %v, want problems with %v", c.key, c.from, err, c.bad)
			continue
		}
		for _, f := range c.bad {
			if e.Fields[f] == "" {
				t.Errorf("%q, %q: no problem with %s in %v", c.key, c.from, f, e.Fields)
			}
		}
	}
}

// TestAuthorizeActionsAndIntegrations: every user runs actions (with the
// send scope alone); owners and admins see and manage integrations.
func TestAuthorizeActionsAndIntegrations(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		role string
		run  bool
		view bool
	}{
		{RoleMember, true, false},
		{RoleAdmin, true, true},
		{RoleOwner, true, true},
	} {
		u := &User{ID: "u1", OrgID: "o1", OrgRole: c.role}
		if err := Authorize(u, RunNotificationActions); (err == nil) != c.run {
			t.Errorf("%s: RunNotificationActions = %v", c.role, err)
		}
		if err := Authorize(u, ViewIntegrations); (err == nil) != c.view {
			t.Errorf("%s: ViewIntegrations = %v", c.role, err)
		}
		if err := Authorize(u, ManageIntegrations); (err == nil) != c.view {
			t.Errorf("%s: ManageIntegrations = %v", c.role, err)
		}
	}
	if RunNotificationActions.Scope() != ScopeSend || ViewIntegrations.Scope() != ScopeRead || ManageIntegrations.Scope() != ScopeManage {
		t.Error("scopes")
	}
	if err := AuthorizeScopes([]TokenScope{ScopeRead}, RunNotificationActions); ErrorCode(err) != EFORBIDDEN {
		t.Errorf("a read token runs actions: %v", err)
	}
	if err := AuthorizeScopes([]TokenScope{ScopeRead, ScopeSend}, RunNotificationActions); err != nil {
		t.Errorf("a send token cannot run actions: %v", err)
	}
}
