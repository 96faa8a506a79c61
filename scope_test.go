package perch

import (
	"slices"
	"testing"
	"time"
)

// TestEveryActionHasAScope: no action is left out of the scope table, so no
// route can be served to a scoped token without a scope saying it may.
func TestEveryActionHasAScope(t *testing.T) {
	t.Parallel()
	for a := Action(0); a < actionCount; a++ {
		if a.Scope().level() < 0 {
			t.Errorf("action %d needs no known scope (%q): add it to actionScopes", a, a.Scope())
		}
	}
	if got := actionCount.Scope(); got != "" {
		t.Errorf("an action past the table needs %q, want none", got)
	}
}

// TestAuthorizeScopes: a scope allows what it names and the scopes below it
// allow nothing above them; an unscoped credential is not limited.
func TestAuthorizeScopes(t *testing.T) {
	t.Parallel()
	read, send, manage := []TokenScope{ScopeRead}, []TokenScope{ScopeRead, ScopeSend}, TokenScopes
	for _, c := range []struct {
		action Action
		scopes []TokenScope
		ok     bool
	}{
		{ViewOrg, nil, true},
		{ViewOrg, read, true},
		{ReadNotifications, read, true},
		{ManageOrg, read, false},
		{ManageOrg, send, false},
		{ManageOrg, manage, true},
		{PlatformAdmin, read, false},
		{PlatformAdmin, manage, true},
		{ManageTokens, send, false},
		{ManageTokens, nil, true},
		{actionCount, manage, false}, // an action without a scope: no scoped token
		{actionCount, nil, true},
	} {
		err := AuthorizeScopes(c.scopes, c.action)
		if (err == nil) != c.ok {
			t.Errorf("action %d with %v: %v, want allowed %v", c.action, c.scopes, err, c.ok)
		}
		if err != nil && ErrorCode(err) != EFORBIDDEN {
			t.Errorf("action %d with %v: code %q, want forbidden", c.action, c.scopes, ErrorCode(err))
		}
	}
	err := AuthorizeScopes(read, ManageOrg)
	if want := "This API token's scopes (read) do not allow this; it needs manage."; ErrorMessage(err) != want {
		t.Errorf("message %q, want %q", ErrorMessage(err), want)
	}
}

// TestAuthorizePrincipal: the role decides first, then the token's scopes.
func TestAuthorizePrincipal(t *testing.T) {
	t.Parallel()
	member := &User{ID: "u1", OrgID: "o1", OrgRole: RoleMember}
	owner := &User{ID: "u2", OrgID: "o1", OrgRole: RoleOwner}
	if err := AuthorizePrincipal(&Principal{User: member, Scopes: TokenScopes}, ManageOrg); ErrorMessage(err) != ErrorMessage(errOrgAdminsOnly) {
		t.Errorf("member with a manage token: %v, want the role's refusal", err)
	}
	if err := AuthorizePrincipal(&Principal{User: owner, Scopes: []TokenScope{ScopeRead}}, ManageOrg); ErrorCode(err) != EFORBIDDEN {
		t.Errorf("owner with a read token: %v, want forbidden", err)
	}
	if err := AuthorizePrincipal(&Principal{User: owner}, ManageOrg); err != nil {
		t.Errorf("owner signed in: %v", err)
	}
}

func TestValidateTokenLimits(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		name      string
		expiresAt *string
		scopes    []TokenScope
		want      []TokenScope
		wantExp   string
		fields    []string
	}{
		{name: "nothing"},
		{name: "future", expiresAt: str("2027-01-01T00:00:00+01:00"), wantExp: "2026-12-31T23:00:00Z"},
		{name: "past", expiresAt: str("2026-11-30T00:00:00Z"), fields: []string{"expires_at"}},
		{name: "now", expiresAt: str("2026-12-01T12:00:00Z"), fields: []string{"expires_at"}},
		{name: "not a time", expiresAt: str("tomorrow"), fields: []string{"expires_at"}},
		{name: "a date alone", expiresAt: str("2027-01-01"), fields: []string{"expires_at"}},
		{name: "read", scopes: []TokenScope{ScopeRead}, want: []TokenScope{ScopeRead}},
		{name: "send brings read", scopes: []TokenScope{ScopeSend}, want: []TokenScope{ScopeRead, ScopeSend}},
		{name: "any order", scopes: []TokenScope{ScopeManage, ScopeRead}, want: TokenScopes},
		{name: "unknown", scopes: []TokenScope{"write"}, fields: []string{"scopes"}},
		{name: "twice", scopes: []TokenScope{ScopeRead, ScopeRead}, fields: []string{"scopes"}},
		{name: "empty", scopes: []TokenScope{}, fields: []string{"scopes"}},
		{name: "both wrong", expiresAt: str("x"), scopes: []TokenScope{"x"}, fields: []string{"expires_at", "scopes"}},
	} {
		lim, err := ValidateTokenLimits(c.expiresAt, c.scopes, now)
		if c.fields != nil {
			e, ok := err.(*Error)
			if !ok || e.Code != EVALIDATION {
				t.Errorf("%s: %v, want a validation error", c.name, err)
				continue
			}
			for _, f := range c.fields {
				if e.Fields[f] == "" {
					t.Errorf("%s: fields %v lack %s", c.name, e.Fields, f)
				}
			}
			if len(e.Fields) != len(c.fields) {
				t.Errorf("%s: fields %v, want only %v", c.name, e.Fields, c.fields)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !slices.Equal(lim.Scopes, c.want) || (lim.Scopes == nil) != (c.want == nil) {
			t.Errorf("%s: scopes %v, want %v", c.name, lim.Scopes, c.want)
		}
		got := ""
		if lim.ExpiresAt != nil {
			got = lim.ExpiresAt.Format(time.RFC3339)
		}
		if got != c.wantExp {
			t.Errorf("%s: expires %q, want %q", c.name, got, c.wantExp)
		}
	}
}

func TestDescribeTokenScopes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		scopes []TokenScope
		want   string
	}{
		{nil, "everything your account may do"},
		{[]TokenScope{ScopeRead}, "read"},
		{[]TokenScope{ScopeRead, ScopeSend}, "read and send"},
		{TokenScopes, "read, send and manage"},
	} {
		if got := DescribeTokenScopes(c.scopes); got != c.want {
			t.Errorf("%v: %q, want %q", c.scopes, got, c.want)
		}
		if got := ParseTokenScopes(FormatTokenScopes(c.scopes)); !slices.Equal(got, c.scopes) || (got == nil) != (c.scopes == nil) {
			t.Errorf("%v: stored and read back as %v", c.scopes, got)
		}
	}
}
