package scim

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// TestApplyPatchRoles: the one role Perch keeps, through every shape of
// PATCH on roles, from a user who is a member or an admin.
func TestApplyPatchRoles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		from, want string
		ops        []string
	}{
		{"add names a role", "member", "admin", []string{`{"op":"Add","path":"roles","value":[{"value":"Admin","display":"Admin","type":"WindowsAzureActiveDirectoryRole","primary":false}]}`}},
		{"add of one entry", "member", "owner", []string{`{"op":"add","path":"roles","value":{"value":"owner"}}`}},
		{"add of a bare value", "member", "admin", []string{`{"op":"add","path":"roles","value":"admin"}`}},
		{"replace names a role", "admin", "member", []string{`{"op":"replace","path":"roles","value":[{"value":"member"}]}`}},
		{"the primary one counts", "member", "member", []string{`{"op":"replace","path":"roles","value":[{"value":"owner"},{"value":"MEMBER","primary":true}]}`}},
		{"else the most privileged", "member", "admin", []string{`{"op":"replace","path":"roles","value":[{"value":"member"},{"value":"admin"}]}`}},
		{"Entra's single-role mapping", "member", "owner", []string{`{"op":"Replace","path":"roles[primary eq \"True\"].value","value":"Owner"}`}},
		{"roles.value", "owner", "admin", []string{`{"op":"replace","path":"roles.value","value":"admin"}`}},
		{"in a value object", "member", "admin", []string{`{"op":"replace","value":{"roles":[{"value":"admin"}]}}`}},
		{"unrecognised values change nothing", "admin", "admin", []string{`{"op":"replace","path":"roles","value":[{"value":"Viewer"},{"value":"superuser","primary":true}]}`}},
		{"an empty list changes nothing", "admin", "admin", []string{`{"op":"replace","path":"roles","value":[]}`}},
		{"never a platform admin", "member", "member", []string{`{"op":"add","path":"roles","value":[{"value":"platform admin"},{"value":"platform_admin"},{"value":"root"}]}`,
			`{"op":"replace","path":"roles[primary eq true].value","value":"PlatformAdmin"}`}},
		{"other sub-attributes change nothing", "admin", "admin", []string{`{"op":"replace","path":"roles[primary eq true].display","value":"Member"}`}},
		{"remove all", "admin", "member", []string{`{"op":"remove","path":"roles"}`}},
		{"remove the role held, by filter", "owner", "member", []string{`{"op":"remove","path":"roles[value eq \"Owner\"]"}`}},
		{"remove the primary", "admin", "member", []string{`{"op":"remove","path":"roles[primary eq \"True\"]"}`}},
		{"remove another role, by filter", "admin", "admin", []string{`{"op":"remove","path":"roles[value eq \"owner\"]"}`}},
		{"remove the role held, Entra's way", "admin", "member", []string{`{"op":"Remove","path":"roles","value":[{"value":"Admin"}]}`}},
		{"remove another role, Entra's way", "admin", "admin", []string{`{"op":"Remove","path":"roles","value":[{"value":"member"}]}`}},
		{"promote: add then remove", "member", "admin", []string{`{"op":"Add","path":"roles","value":[{"value":"admin"}]}`,
			`{"op":"Remove","path":"roles","value":[{"value":"member"}]}`}},
		{"demote: remove then add", "admin", "member", []string{`{"op":"Remove","path":"roles","value":[{"value":"admin"}]}`,
			`{"op":"Add","path":"roles","value":[{"value":"member"}]}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := ann()
			u.Role = tt.from
			got, err := ApplyPatch(u, patchBody(tt.ops...))
			if err != nil || got.Role != tt.want {
				t.Fatalf("ApplyPatch: role %q, %v; want %q", got.Role, err, tt.want)
			}
		})
	}
	for _, op := range []string{`{"op":"add","path":"roles","value":{"value":7}}`, `{"op":"add","path":"roles","value":[5]}`,
		`{"op":"replace","path":"roles[name eq \"x\"]","value":{"value":"admin"}}`, `{"op":"replace","path":"roles.name","value":"x"}`,
		`{"op":"replace","path":"roles.value","value":5}`} {
		u := ann()
		u.Role = "member"
		if _, err := ApplyPatch(u, patchBody(op)); err == nil {
			t.Errorf("%s: no error", op)
		} else if e := err.(*Error); e.Status != http.StatusBadRequest || e.Type != InvalidValue && e.Type != InvalidPath {
			t.Errorf("%s: %v", op, err)
		}
	}
}

// TestUserProfileRequests: the project's own PUT and PATCH in Okta's and
// Entra's shapes carry title, roles and the enterprise extension.
func TestUserProfileRequests(t *testing.T) {
	t.Parallel()
	put, err := DecodeUser(request(t, "okta/put_user_profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := Enterprise{Department: "Operations", EmployeeNumber: "E-1042", Manager: "u2"}
	if put.Title != "Site reliability engineer" || put.Role != "admin" || put.Enterprise != want {
		t.Errorf("Okta's PUT: %#v", put)
	}
	u := ann()
	u.Role = "member"
	patched, err := ApplyPatch(u, request(t, "entra/patch_user_profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	want = Enterprise{Department: "Reliability", EmployeeNumber: "E-2077", Manager: "u2"}
	if patched.Title != "Incident commander" || patched.Role != "owner" || patched.Enterprise != want {
		t.Errorf("Entra's PATCH: %#v", patched)
	}
}

func TestRenderUserExtras(t *testing.T) {
	t.Parallel()
	u := ann()
	u.Title, u.Role, u.Enterprise = "CTO", "admin", Enterprise{Department: "Ops", EmployeeNumber: "7", Manager: "m1"}
	got := decoded(t, Render(u, "u1", Meta{}))
	if !reflect.DeepEqual(got["schemas"], []any{UserSchema, EnterpriseSchema}) || got["title"] != "CTO" ||
		!reflect.DeepEqual(got["roles"], []any{map[string]any{"value": "admin", "primary": true}}) ||
		!reflect.DeepEqual(got[EnterpriseSchema], map[string]any{"department": "Ops", "employeeNumber": "7", "manager": map[string]any{"value": "m1"}}) {
		t.Errorf("Render = %v", got)
	}
	plain := decoded(t, Render(ann(), "u1", Meta{}))
	for _, k := range []string{"title", "roles", EnterpriseSchema} {
		if _, ok := plain[k]; ok {
			t.Errorf("a user without %s renders it: %v", k, plain)
		}
	}
	tag := ETag(u, "u1")
	for name, change := range map[string]func(*User){
		"title": func(u *User) { u.Title = "CEO" }, "role": func(u *User) { u.Role = "owner" },
		"department": func(u *User) { u.Enterprise.Department = "" }, "employeeNumber": func(u *User) { u.Enterprise.EmployeeNumber = "8" },
		"manager": func(u *User) { u.Enterprise.Manager = "m2" },
	} {
		v := u
		change(&v)
		if ETag(v, "u1") == tag {
			t.Errorf("changing %s kept the ETag", name)
		}
	}
	if !strings.HasPrefix(tag, `W/"`) {
		t.Errorf("ETag %s", tag)
	}
}
