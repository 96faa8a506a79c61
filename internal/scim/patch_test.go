package scim

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// patchBody wraps operations, given as JSON objects, in a PatchOp message.
func patchBody(ops ...string) []byte {
	return []byte(`{"schemas":["` + PatchSchema + `"],"Operations":[` + strings.Join(ops, ",") + `]}`)
}

// ann is the user most PATCH tests start from; each call returns a fresh copy.
func ann() User {
	return User{
		UserName:    "ann@x.y",
		ExternalID:  "ext-1",
		Name:        Name{GivenName: "Ann", FamilyName: "Lee"},
		DisplayName: "Ann Lee",
		Emails:      []Email{{Value: "ann@x.y", Type: "work", Primary: true}, {Value: "ann@home.y", Type: "home"}},
		Active:      true,
	}
}

func TestApplyPatchFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		create, patch string
		change        func(u *User)
	}{
		{"okta/create_user.request.json", "okta/patch_user_deactivate.request.json", func(u *User) { u.Active = false }},
		{"entra/create_user.request.json", "entra/patch_user_disable.request.json", func(u *User) { u.Active = false }},
		{"entra/create_user.request.json", "entra/patch_user_multivalued.request.json", func(u *User) {
			u.Emails[0].Value = "updatedEmail@microsoft.com"
			u.Name.FamilyName = "updatedFamilyName"
		}},
		{"entra/create_user.request.json", "entra/patch_user_username.request.json", func(u *User) {
			u.UserName = "5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.patch, func(t *testing.T) {
			u, err := DecodeUser(fixture(t, tt.create))
			if err != nil {
				t.Fatalf("DecodeUser: %v", err)
			}
			want := u
			want.Emails = slices.Clone(u.Emails)
			tt.change(&want)
			got, err := ApplyPatch(u, fixture(t, tt.patch))
			if err != nil {
				t.Fatalf("ApplyPatch: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("ApplyPatch = %#v, want %#v", got, want)
			}
		})
	}
}

func TestApplyPatchMultivaluedFixtureKeepsPrimary(t *testing.T) {
	t.Parallel()
	u, err := DecodeUser(fixture(t, "entra/create_user.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ApplyPatch(u, fixture(t, "entra/patch_user_multivalued.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Email() != "updatedEmail@microsoft.com" || !got.Emails[0].Primary {
		t.Errorf("emails = %#v, want the work email updated and still primary", got.Emails)
	}
}

func TestApplyPatch(t *testing.T) {
	t.Parallel()
	const enterprise = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
	tests := []struct {
		name   string
		ops    []string
		change func(u *User)
	}{
		// Op names and Entra's strings for booleans.
		{"Replace active with Entra's string", []string{`{"op":"Replace","path":"active","value":"False"}`},
			func(u *User) { u.Active = false }},
		{"REPLACE in capitals", []string{`{"OP":"REPLACE","PATH":"displayName","VALUE":"A"}`}, func(u *User) { u.DisplayName = "A" }},
		{"Add", []string{`{"op":"Add","path":"externalId","value":"ext-2"}`}, func(u *User) { u.ExternalID = "ext-2" }},
		{"active back to true", []string{`{"op":"replace","path":"active","value":false}`, `{"op":"replace","path":"active","value":"TRUE"}`},
			func(u *User) {}},
		{"a PatchOp without schemas", nil, func(u *User) { u.DisplayName = "A" }},

		// No path: Okta's shape, and Entra's dotted keys.
		{"no path, value object", []string{`{"op":"replace","value":{"active":false,"displayName":"A"}}`},
			func(u *User) { u.Active, u.DisplayName = false, "A" }},
		{"no path, dotted and URN keys", []string{`{"op":"replace","value":{"name.givenName":"Bo","NAME.FAMILYNAME":"Ng",
			"` + enterprise + `:department":"Ops","` + UserSchema + `:displayName":"Bo Ng","` + enterprise + `":{"employeeNumber":"7"}}}`},
			func(u *User) {
				u.Name.GivenName, u.Name.FamilyName, u.DisplayName = "Bo", "Ng", "Bo Ng"
				u.Enterprise = Enterprise{Department: "Ops", EmployeeNumber: "7"}
			}},
		{"the core schema as the path", []string{`{"op":"add","path":"` + UserSchema + `","value":{"displayName":"A"}}`},
			func(u *User) { u.DisplayName = "A" }},

		// Attributes kept.
		{"userName trimmed", []string{`{"op":"replace","path":"userName","value":" bo@x.y "}`}, func(u *User) { u.UserName = "bo@x.y" }},
		{"userName with the core URN", []string{`{"op":"replace","path":"` + UserSchema + `:userName","value":"bo@x.y"}`},
			func(u *User) { u.UserName = "bo@x.y" }},
		{"externalId removed", []string{`{"op":"remove","path":"externalId"}`}, func(u *User) { u.ExternalID = "" }},
		{"displayName null", []string{`{"op":"replace","path":"displayName","value":null}`}, func(u *User) { u.DisplayName = "" }},
		{"displayName removed", []string{`{"op":"remove","path":"displayName"}`}, func(u *User) { u.DisplayName = "" }},
		{"name merged", []string{`{"op":"add","path":"name","value":{"givenName":"Bo","formatted":"Bo Lee"}}`},
			func(u *User) { u.Name = Name{GivenName: "Bo", FamilyName: "Lee", Formatted: "Bo Lee"} }},
		{"name removed", []string{`{"op":"remove","path":"name"}`}, func(u *User) { u.Name = Name{} }},
		{"name.familyName removed", []string{`{"op":"remove","path":"name.familyName"}`}, func(u *User) { u.Name.FamilyName = "" }},
		{"name.honorificPrefix added", []string{`{"op":"add","path":"name.honorificPrefix","value":"Dr"}`},
			func(u *User) { u.Name.HonorificPrefix = "Dr" }},

		// The whole list of emails.
		{"an email added", []string{`{"op":"add","path":"emails","value":{"value":"ann@other.y","type":"other"}}`},
			func(u *User) { u.Emails = append(u.Emails, Email{Value: "ann@other.y", Type: "other"}) }},
		{"a primary email added takes primary", []string{`{"op":"add","path":"emails","value":[{"value":"n@x.y","primary":true}]}`},
			func(u *User) {
				u.Emails[0].Primary = false
				u.Emails = append(u.Emails, Email{Value: "n@x.y", Primary: true})
			}},
		{"emails replaced", []string{`{"op":"replace","path":"emails","value":[{"value":"n@x.y","type":"work"}]}`},
			func(u *User) { u.Emails = []Email{{Value: "n@x.y", Type: "work"}} }},
		{"emails removed", []string{`{"op":"remove","path":"emails"}`}, func(u *User) { u.Emails = nil }},

		// Emails picked by a filter.
		{"the home email removed", []string{`{"op":"remove","path":"emails[type eq \"home\"]"}`},
			func(u *User) { u.Emails = u.Emails[:1] }},
		{"a value compared without case", []string{`{"op":"add","path":"emails[value eq \"ANN@X.Y\"].display","value":"Ann"}`},
			func(u *User) { u.Emails[0].Display = "Ann" }},
		{"a type compared without case", []string{`{"op":"replace","path":"emails[type eq \"WORK\"].value","value":"w@x.y"}`},
			func(u *User) { u.Emails[0].Value = "w@x.y" }},
		{"primary moved", []string{`{"op":"replace","path":"emails[type eq \"home\"].primary","value":"True"}`},
			func(u *User) { u.Emails[0].Primary, u.Emails[1].Primary = false, true }},
		{"an object merged into a match", []string{`{"op":"replace","path":"emails[type eq \"home\"]","value":{"value":"h@x.y","primary":true}}`},
			func(u *User) {
				u.Emails[0].Primary, u.Emails[1] = false, Email{Value: "h@x.y", Type: "home", Primary: true}
			}},
		{"a display removed", []string{`{"op":"add","path":"emails[type eq \"work\"].display","value":"W"}`,
			`{"op":"remove","path":"emails[type eq \"work\"].display"}`}, func(u *User) {}},
		{"a filter of two comparisons", []string{`{"op":"remove","path":"emails[type eq \"work\" and primary eq true]"}`},
			func(u *User) { u.Emails = u.Emails[1:] }},
		{"a sub-attribute of every email", []string{`{"op":"replace","path":"emails.display","value":"D"}`},
			func(u *User) { u.Emails[0].Display, u.Emails[1].Display = "D", "D" }},
		{"Entra's value of a type not there yet", []string{`{"op":"add","path":"emails[type eq \"other\"].value","value":"o@x.y"}`},
			func(u *User) { u.Emails = append(u.Emails, Email{Value: "o@x.y", Type: "other"}) }},
		{"Entra's value of a type, the only email so primary", []string{`{"op":"remove","path":"emails"}`,
			`{"op":"Replace","path":"emails[type eq \"work\"].value","value":"w@x.y"}`},
			func(u *User) { u.Emails = []Email{{Value: "w@x.y", Type: "work", Primary: true}} }},

		// Attributes accepted and not kept.
		{"attributes not kept", []string{`{"op":"replace","path":"locale","value":1}`,
			`{"op":"add","path":"phoneNumbers[type eq \"work\"].value","value":"+1 555"}`,
			`{"op":"replace","path":"addresses[type eq \"work\"].formatted","value":"1 Main St"}`,
			`{"op":"remove","path":"groups[value eq \"g1\"]"}`,
			`{"op":"replace","path":"` + enterprise + `:costCenter","value":"4"}`,
			`{"op":"replace","path":"` + enterprise + `","value":{"organization":"X"}}`}, func(u *User) {}},

		// Title and the enterprise extension.
		{"title", []string{`{"op":"add","path":"title","value":"CTO"}`}, func(u *User) { u.Title = "CTO" }},
		{"title removed", []string{`{"op":"add","path":"title","value":"CTO"}`, `{"op":"remove","path":"TITLE"}`}, func(u *User) {}},
		{"department by its URN path", []string{`{"op":"Add","path":"` + enterprise + `:department","value":"Ops"}`},
			func(u *User) { u.Enterprise.Department = "Ops" }},
		{"the extension's URN in any case", []string{`{"op":"Replace","path":"URN:IETF:PARAMS:SCIM:SCHEMAS:EXTENSION:ENTERPRISE:2.0:USER:employeeNumber","value":"7"}`},
			func(u *User) { u.Enterprise.EmployeeNumber = "7" }},
		{"manager as an object", []string{`{"op":"add","path":"` + enterprise + `:manager","value":{"value":"m1"}}`},
			func(u *User) { u.Enterprise.Manager = "m1" }},
		{"manager as Entra's id", []string{`{"op":"Replace","path":"` + enterprise + `:manager","value":"m2"}`},
			func(u *User) { u.Enterprise.Manager = "m2" }},
		{"manager.value", []string{`{"op":"replace","path":"` + enterprise + `:manager.value","value":"m3"}`},
			func(u *User) { u.Enterprise.Manager = "m3" }},
		{"the whole extension", []string{`{"op":"replace","path":"` + enterprise + `","value":{"department":"Ops","manager":"m4"}}`},
			func(u *User) { u.Enterprise = Enterprise{Department: "Ops", Manager: "m4"} }},
		{"the extension removed", []string{`{"op":"add","path":"` + enterprise + `:department","value":"Ops"}`, `{"op":"remove","path":"` + enterprise + `"}`},
			func(u *User) {}},
		{"manager removed", []string{`{"op":"add","path":"` + enterprise + `:manager","value":"m1"}`, `{"op":"remove","path":"` + enterprise + `:manager"}`},
			func(u *User) {}},
		{"in a value object", []string{`{"op":"replace","value":{"title":"CTO","` + enterprise + `:department":"Ops"}}`},
			func(u *User) { u.Title, u.Enterprise.Department = "CTO", "Ops" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := ann()
			tt.change(&want)
			body := patchBody(tt.ops...)
			if tt.ops == nil {
				body = []byte(`{"Operations":[{"op":"replace","path":"displayName","value":"A"}]}`)
			}
			got, err := ApplyPatch(ann(), body)
			if err != nil {
				t.Fatalf("ApplyPatch: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("ApplyPatch =\n%#v, want\n%#v", got, want)
			}
		})
	}
}

func TestApplyPatchRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		scimType string
	}{
		// Not a PatchOp.
		{"not JSON", `{"Operations":`, InvalidSyntax},
		{"an array", `[]`, InvalidSyntax},
		{"no Operations", `{"schemas":["` + PatchSchema + `"]}`, InvalidSyntax},
		{"no operation", string(patchBody()), InvalidSyntax},
		{"Operations an object", `{"Operations":{"op":"add"}}`, InvalidSyntax},
		{"101 operations", string(patchBody(slices.Repeat([]string{`{"op":"remove","path":"title"}`}, 101)...)), InvalidSyntax},
		{"schemas without PatchOp", `{"schemas":["` + UserSchema + `"],"Operations":[{"op":"remove","path":"title"}]}`, InvalidSyntax},
		{"an unknown member", `{"Operations":[{"op":"remove","path":"title"}],"id":"1"}`, InvalidSyntax},
		{"an unknown op", string(patchBody(`{"op":"copy","path":"title"}`)), InvalidSyntax},
		{"op not a string", string(patchBody(`{"op":1,"path":"title"}`)), InvalidSyntax},
		{"an operation not an object", string(patchBody(`"remove"`)), InvalidSyntax},
		{"an unknown member of an operation", string(patchBody(`{"op":"remove","path":"title","from":"x"}`)), InvalidSyntax},
		{"add without a value", string(patchBody(`{"op":"add","path":"title"}`)), InvalidSyntax},

		// Paths.
		{"remove without a path", string(patchBody(`{"op":"remove"}`)), NoTarget},
		{"no email matched", string(patchBody(`{"op":"remove","path":"emails[type eq \"other\"]"}`)), NoTarget},
		{"no email matched for a display", string(patchBody(`{"op":"replace","path":"emails[type eq \"other\"].display","value":"x"}`)), NoTarget},
		{"no email matched by value", string(patchBody(`{"op":"replace","path":"emails[value eq \"z@x.y\"].value","value":"x@x.y"}`)), NoTarget},
		{"path not a string", string(patchBody(`{"op":"add","path":1,"value":"x"}`)), InvalidPath},
		{"an unknown attribute", string(patchBody(`{"op":"add","path":"nickname2","value":"x"}`)), InvalidPath},
		{"an unknown attribute in a value object", string(patchBody(`{"op":"add","value":{"shoeSize":"x"}}`)), InvalidPath},
		{"an unknown schema", string(patchBody(`{"op":"add","path":"urn:example:ext:1.0:User:x","value":"x"}`)), InvalidPath},
		{"an unknown name part", string(patchBody(`{"op":"add","path":"name.nick","value":"x"}`)), InvalidPath},
		{"name filtered", string(patchBody(`{"op":"add","path":"name[givenName eq \"x\"]","value":"x"}`)), InvalidPath},
		{"an unknown email part", string(patchBody(`{"op":"add","path":"emails[type eq \"work\"].label","value":"x"}`)), InvalidPath},
		{"an email filter on an unknown part", string(patchBody(`{"op":"remove","path":"emails[label eq \"x\"]"}`)), InvalidPath},
		{"userName with a sub-attribute", string(patchBody(`{"op":"add","path":"userName.x","value":"x"}`)), InvalidPath},
		{"bad path syntax", string(patchBody(`{"op":"add","path":"a..b","value":"x"}`)), InvalidPath},

		// Mutability.
		{"userName removed", string(patchBody(`{"op":"remove","path":"userName"}`)), Mutability},
		{"active removed", string(patchBody(`{"op":"remove","path":"active"}`)), Mutability},

		// Values.
		{"userName a number", string(patchBody(`{"op":"replace","path":"userName","value":5}`)), InvalidValue},
		{"userName empty", string(patchBody(`{"op":"replace","path":"userName","value":" "}`)), InvalidValue},
		{"userName null", string(patchBody(`{"op":"replace","path":"userName","value":null}`)), InvalidValue},
		{"active maybe", string(patchBody(`{"op":"replace","path":"active","value":"maybe"}`)), InvalidValue},
		{"active null", string(patchBody(`{"op":"replace","path":"active","value":null}`)), InvalidValue},
		{"displayName a number", string(patchBody(`{"op":"replace","path":"displayName","value":1}`)), InvalidValue},
		{"name a string", string(patchBody(`{"op":"replace","path":"name","value":"Ann"}`)), InvalidValue},
		{"no path, value a string", string(patchBody(`{"op":"replace","value":"x"}`)), InvalidValue},
		{"no path, no value object", string(patchBody(`{"op":"replace","value":[{"active":false}]}`)), InvalidValue},
		{"an email value emptied", string(patchBody(`{"op":"replace","path":"emails[type eq \"work\"].value","value":""}`)), InvalidValue},
		{"an email value removed", string(patchBody(`{"op":"remove","path":"emails[type eq \"work\"].value"}`)), InvalidValue},
		{"two primaries added", string(patchBody(`{"op":"add","path":"emails","value":[{"value":"a@x.y","primary":true},{"value":"b@x.y","primary":true}]}`)), InvalidValue},
		{"two primaries by a filter", string(patchBody(`{"op":"replace","path":"emails.primary","value":true}`)), InvalidValue},
		{"eleven emails", string(patchBody(`{"op":"add","path":"emails","value":[` + strings.Repeat(`{"value":"a@x.y"},`, 8) + `{"value":"a@x.y"}]}`)), InvalidValue},
		{"emails a string", string(patchBody(`{"op":"add","path":"emails","value":"a@x.y"}`)), InvalidValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := ApplyPatch(ann(), []byte(tt.body))
			if err == nil {
				t.Fatalf("ApplyPatch = %#v, want an error", u)
			}
			wantError(t, err, http.StatusBadRequest, tt.scimType)
			if !reflect.DeepEqual(u, ann()) {
				t.Errorf("ApplyPatch returned %#v with its error, want the user as given", u)
			}
		})
	}
}

func TestApplyPatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	in := ann()
	body := patchBody(
		`{"op":"replace","path":"emails[type eq \"work\"].value","value":"new@x.y"}`,
		`{"op":"replace","path":"emails[type eq \"home\"].primary","value":true}`,
		`{"op":"replace","path":"displayName","value":"Changed"}`,
		`{"op":"remove","path":"userName"}`,
	)
	got, err := ApplyPatch(in, body)
	wantError(t, err, http.StatusBadRequest, Mutability)
	if !strings.HasPrefix(err.(*Error).Detail, "Operation 4: ") {
		t.Errorf("detail = %q, want it to name operation 4", err.(*Error).Detail)
	}
	if !reflect.DeepEqual(got, ann()) {
		t.Errorf("returned %#v, want the user as given", got)
	}
	if !reflect.DeepEqual(in, ann()) {
		t.Errorf("input changed to %#v", in)
	}
}

func TestApplyPatchLeavesItsInputAlone(t *testing.T) {
	t.Parallel()
	in := ann()
	body := patchBody(
		`{"op":"replace","path":"emails[type eq \"work\"].value","value":"new@x.y"}`,
		`{"op":"remove","path":"emails[type eq \"home\"]"}`,
	)
	if _, err := ApplyPatch(in, body); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, ann()) {
		t.Errorf("input changed to %#v", in)
	}
}
