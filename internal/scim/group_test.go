package scim

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// request reads a file of testdata/requests (the project's own requests
// in Okta's and Entra's shapes) with its placeholders filled in.
func request(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "requests", filepath.FromSlash(name)))
	if err != nil {
		tb.Fatal(err)
	}
	return fill(b)
}

// fill puts the ids of the group tests in the placeholders.
func fill(b []byte) []byte {
	return []byte(strings.NewReplacer("{{USER_ID}}", "u1", "{{USER2_ID}}", "u2", "{{GROUP_ID}}", "g1").Replace(string(b)))
}

// ops is a group of two members most PATCH tests start from; each call
// returns a fresh copy.
func ops() Group {
	return Group{DisplayName: "Ops", ExternalID: "ext-g", Members: []Member{{Value: "u1", Display: "Ann"}, {Value: "u2"}}}
}

func TestDecodeGroupRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want Group
	}{
		{"okta/create_group.json", Group{DisplayName: "Incident responders", Members: []Member{{Value: "u1", Display: "rita.responder@perch-test.example"}}}},
		{"okta/put_group.json", Group{DisplayName: "Incident responders", Members: []Member{{Value: "u2", Display: "sam.standby@perch-test.example"}}}},
		{"entra/create_group.json", Group{DisplayName: "Incident responders", ExternalID: "3f1c9d2e-7a65-4b0e-9c2d-5e8f1a2b3c4d"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			g, err := DecodeGroup(request(t, tt.file))
			if err != nil {
				t.Fatalf("DecodeGroup: %v", err)
			}
			if !reflect.DeepEqual(g, tt.want) {
				t.Fatalf("DecodeGroup = %#v, want %#v", g, tt.want)
			}
		})
	}
}

// TestDecodeGroupFixtures reads the shared fixtures, when they are here.
func TestDecodeGroupFixtures(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]Group{
		"okta/create_group.request.json":  {DisplayName: "Payments on-call", Members: []Member{{Value: "u1", Display: "test.user@okta.local"}}},
		"entra/create_group.request.json": {DisplayName: "Payments on-call", ExternalID: "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159"},
	} {
		g, err := DecodeGroup(fill(fixture(t, file)))
		if err != nil || !reflect.DeepEqual(g, want) {
			t.Errorf("%s: DecodeGroup = %#v, %v; want %#v", file, g, err, want)
		}
	}
}

func TestDecodeGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       Group
	}{
		{"the least", `{"displayName":"Ops"}`, Group{DisplayName: "Ops"}},
		{"names in any case, trimmed", `{"DISPLAYNAME":" Ops ","ExternalId":"x","MEMBERS":[{"VALUE":"u1","Display":"Ann","$ref":"r","type":"User"}]}`,
			Group{DisplayName: "Ops", ExternalID: "x", Members: []Member{{Value: "u1", Display: "Ann"}}}},
		{"a member twice is kept once", `{"displayName":"Ops","members":[{"value":"u1"},{"value":"u2"},{"value":"u1","display":"again"}]}`,
			Group{DisplayName: "Ops", Members: []Member{{Value: "u1"}, {Value: "u2"}}}},
		{"read-only and extensions read past", `{"displayName":"Ops","id":"g9","meta":{"x":1},"urn:example:ext":{"a":1},"members":null}`,
			Group{DisplayName: "Ops"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := DecodeGroup([]byte(tt.body))
			if err != nil || !reflect.DeepEqual(g, tt.want) {
				t.Fatalf("DecodeGroup = %#v, %v; want %#v", g, err, tt.want)
			}
		})
	}
}

func TestDecodeGroupRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, scimType, detail string
	}{
		{"not JSON", `displayName=x`, InvalidSyntax, "not JSON"},
		{"no displayName", `{"members":[]}`, InvalidValue, "required"},
		{"a blank displayName", `{"displayName":"  "}`, InvalidValue, "empty"},
		{"displayName null", `{"displayName":null}`, InvalidValue, "required"},
		{"displayName a number", `{"displayName":5}`, InvalidValue, "string"},
		{"displayName too long", `{"displayName":"` + strings.Repeat("a", 257) + `"}`, InvalidValue, "256"},
		{"an unknown attribute", `{"displayName":"x","owner":"me"}`, InvalidSyntax, `"owner"`},
		{"schemas without Group", `{"schemas":["` + UserSchema + `"],"displayName":"x"}`, InvalidSyntax, "schemas"},
		{"members an object", `{"displayName":"x","members":{"value":"u1"}}`, InvalidValue, "array"},
		{"a member a string", `{"displayName":"x","members":["u1"]}`, InvalidValue, "objects"},
		{"a member without a value", `{"displayName":"x","members":[{"display":"Ann"}]}`, InvalidValue, "value"},
		{"a member a group", `{"displayName":"x","members":[{"value":"g2","type":"Group"}]}`, InvalidValue, "users only"},
		{"a member's value a number", `{"displayName":"x","members":[{"value":7}]}`, InvalidValue, "members.value"},
		{"a name twice", `{"displayName":"x","DisplayName":"y"}`, InvalidSyntax, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := DecodeGroup([]byte(tt.body))
			if err == nil {
				t.Fatalf("DecodeGroup = %#v, want an error", g)
			}
			wantError(t, err, http.StatusBadRequest, tt.scimType)
			if d := err.(*Error).Detail; !strings.Contains(d, tt.detail) {
				t.Errorf("detail %q, want it to contain %q", d, tt.detail)
			}
		})
	}
}

func TestApplyGroupPatchRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file   string
		change func(g *Group)
	}{
		{"okta/patch_group_rename.json", func(g *Group) { g.DisplayName = "Incident responders (APAC)" }},
		{"okta/patch_group_add_members.json", func(g *Group) {
			g.Members = []Member{{Value: "u1", Display: "Ann"}, {Value: "u2"}}
		}},
		{"okta/patch_group_remove_member.json", func(g *Group) { g.Members = []Member{{Value: "u2"}} }},
		{"entra/patch_group_add_member.json", func(g *Group) {}},
		{"entra/patch_group_remove_member.json", func(g *Group) { g.Members = []Member{{Value: "u2"}} }},
		{"entra/patch_group_rename.json", func(g *Group) { g.DisplayName = "Incident responders (EMEA)" }},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			want := ops()
			tt.change(&want)
			got, err := ApplyGroupPatch(ops(), request(t, tt.file))
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("ApplyGroupPatch = %#v, %v; want %#v", got, err, want)
			}
		})
	}
	// From an empty group, the adds add.
	empty := Group{DisplayName: "Ops"}
	got, err := ApplyGroupPatch(empty, request(t, "entra/patch_group_add_member.json"))
	if err != nil || !reflect.DeepEqual(got.Members, []Member{{Value: "u1"}}) {
		t.Errorf("Entra's add to an empty group = %#v, %v", got, err)
	}
	got, err = ApplyGroupPatch(empty, request(t, "okta/patch_group_add_members.json"))
	if err != nil || len(got.Members) != 2 || got.Members[1] != (Member{Value: "u2", Display: "sam.standby@perch-test.example"}) {
		t.Errorf("Okta's add to an empty group = %#v, %v", got, err)
	}
}

// TestApplyGroupPatchFixtures plays the shared fixtures, when they are
// here, on a group of u2 (adds) or of u2 and u1 (the rest).
func TestApplyGroupPatchFixtures(t *testing.T) {
	t.Parallel()
	both := []Member{{Value: "u2"}, {Value: "u1"}}
	tests := []struct {
		file        string
		start, want []Member
		name        string
	}{
		{"okta/patch_group_add_members.request.json", both[:1], []Member{{Value: "u2"}, {Value: "u1", Display: "test.user@okta.local"}}, "Payments on-call"},
		{"entra/patch_group_add_member.request.json", both[:1], both, "Payments on-call"},
		{"okta/patch_group_remove_member.request.json", both, both[:1], "Payments on-call"},
		{"entra/patch_group_remove_member.request.json", both, both[:1], "Payments on-call"},
		{"okta/patch_group_rename.request.json", both, both, "Payments on-call (EU)"},
	}
	for _, tt := range tests {
		start := Group{DisplayName: "Payments on-call", Members: tt.start}
		got, err := ApplyGroupPatch(start, fill(fixture(t, tt.file)))
		if err != nil || !reflect.DeepEqual(got.Members, tt.want) || got.DisplayName != tt.name {
			t.Errorf("%s: %#v, %v; want members %#v named %q", tt.file, got, err, tt.want, tt.name)
		}
	}
}

func TestApplyGroupPatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ops    []string
		change func(g *Group)
	}{
		{"ops in any case", []string{`{"op":"REPLACE","path":"DisplayName","value":"Ops 2"}`}, func(g *Group) { g.DisplayName = "Ops 2" }},
		{"rename without a path, id and unknown extensions read past", []string{`{"op":"replace","value":{"id":"g1","displayName":" New ","externalId":"e2","urn:example:x":1}}`},
			func(g *Group) { g.DisplayName, g.ExternalID = "New", "e2" }},
		{"the Group URN as a path prefix", []string{`{"op":"replace","path":"` + GroupSchema + `:displayName","value":"X"}`}, func(g *Group) { g.DisplayName = "X" }},
		{"externalId removed", []string{`{"op":"remove","path":"externalId"}`}, func(g *Group) { g.ExternalID = "" }},
		{"add a member", []string{`{"op":"add","path":"members","value":[{"value":"u3","display":"Cy"}]}`},
			func(g *Group) { g.Members = append(g.Members, Member{Value: "u3", Display: "Cy"}) }},
		{"add one member object", []string{`{"op":"add","path":"members","value":{"value":"u3"}}`},
			func(g *Group) { g.Members = append(g.Members, Member{Value: "u3"}) }},
		{"add a member already in", []string{`{"op":"add","path":"members","value":[{"value":"u1","display":"other"}]}`}, func(g *Group) {}},
		{"replace the members", []string{`{"op":"replace","path":"members","value":[{"value":"u3"},{"value":"u3"}]}`},
			func(g *Group) { g.Members = []Member{{Value: "u3"}} }},
		{"replace the members with none", []string{`{"op":"replace","path":"members","value":[]}`}, func(g *Group) { g.Members = nil }},
		{"replace members in a value object", []string{`{"op":"replace","value":{"members":[{"value":"u2"}]}}`},
			func(g *Group) { g.Members = []Member{{Value: "u2"}} }},
		{"remove all members", []string{`{"op":"remove","path":"members"}`}, func(g *Group) { g.Members = nil }},
		{"remove by filter", []string{`{"op":"remove","path":"members[value eq \"u2\"]"}`}, func(g *Group) { g.Members = g.Members[:1] }},
		{"remove by filter on display and type", []string{`{"op":"remove","path":"members[display eq \"Ann\" and type eq \"User\"]"}`},
			func(g *Group) { g.Members = g.Members[1:] }},
		{"remove someone not in", []string{`{"op":"remove","path":"members[value eq \"u9\"]"}`,
			`{"op":"Remove","path":"members","value":[{"value":"u9"}]}`}, func(g *Group) {}},
		{"remove by value list", []string{`{"op":"Remove","path":"members","value":[{"value":"u1"},{"value":"u2"}]}`},
			func(g *Group) { g.Members = nil }},
		{"in order", []string{`{"op":"remove","path":"members"}`, `{"op":"add","path":"members","value":[{"value":"u5"}]}`},
			func(g *Group) { g.Members = []Member{{Value: "u5"}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := ops()
			tt.change(&want)
			got, err := ApplyGroupPatch(ops(), patchBody(tt.ops...))
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("ApplyGroupPatch = %#v, %v; want %#v", got, err, want)
			}
		})
	}
}

func TestApplyGroupPatchRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		ops      []string
		scimType string
		detail   string
	}{
		{"remove displayName", []string{`{"op":"remove","path":"displayName"}`}, Mutability, "needs a name"},
		{"blank displayName", []string{`{"op":"replace","path":"displayName","value":" "}`}, InvalidValue, "empty"},
		{"id by path", []string{`{"op":"replace","path":"id","value":"g2"}`}, Mutability, "cannot be changed"},
		{"unknown attribute", []string{`{"op":"add","path":"owners","value":"x"}`}, InvalidPath, "not an attribute"},
		{"unknown schema", []string{`{"op":"add","path":"urn:example:x:attr","value":"x"}`}, InvalidPath, "schema"},
		{"a member sub-attribute", []string{`{"op":"replace","path":"members.display","value":"x"}`}, InvalidPath, "whole entries"},
		{"add with a filter", []string{`{"op":"add","path":"members[value eq \"u1\"]","value":{"value":"u1"}}`}, InvalidPath, "remove"},
		{"a filter on an unknown sub-attribute", []string{`{"op":"remove","path":"members[name eq \"x\"]"}`}, InvalidPath, "name"},
		{"remove without a path", []string{`{"op":"remove"}`}, NoTarget, "path"},
		{"a value not an object without a path", []string{`{"op":"replace","value":"x"}`}, InvalidValue, "object"},
		{"a member without value", []string{`{"op":"add","path":"members","value":[{"display":"x"}]}`}, InvalidValue, "value"},
		{"a bad filter", []string{`{"op":"remove","path":"members[value sw \"u\"]"}`}, InvalidPath, "eq"},
		{"the second fails", []string{`{"op":"add","path":"members","value":[{"value":"u3"}]}`, `{"op":"frob","path":"members"}`}, InvalidSyntax, "Operation 2"},
		{"displayName on a sub-path", []string{`{"op":"replace","path":"displayName.x","value":"a"}`}, InvalidPath, "sub-attributes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := ops()
			got, err := ApplyGroupPatch(in, patchBody(tt.ops...))
			if err == nil {
				t.Fatalf("ApplyGroupPatch = %#v, want an error", got)
			}
			wantError(t, err, http.StatusBadRequest, tt.scimType)
			if d := err.(*Error).Detail; !strings.Contains(d, tt.detail) {
				t.Errorf("detail %q, want it to contain %q", d, tt.detail)
			}
			if !reflect.DeepEqual(got, ops()) || !reflect.DeepEqual(in, ops()) {
				t.Errorf("after an error: %#v (input %#v)", got, in)
			}
		})
	}
}

func TestRenderGroup(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.FixedZone("x", 3600))
	res := RenderGroup(ops(), "g1", Meta{Created: at, LastModified: at, Location: base + "/Groups/g1"}, base+"/Users", true)
	got := decoded(t, res)
	want := map[string]any{
		"schemas": []any{GroupSchema}, "id": "g1", "externalId": "ext-g", "displayName": "Ops",
		"members": []any{
			map[string]any{"value": "u1", "display": "Ann", "$ref": base + "/Users/u1", "type": "User"},
			map[string]any{"value": "u2", "$ref": base + "/Users/u2", "type": "User"},
		},
		"meta": map[string]any{"resourceType": "Group", "created": "2026-03-01T09:00:00Z", "lastModified": "2026-03-01T09:00:00Z",
			"location": base + "/Groups/g1", "version": GroupETag(ops(), "g1")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RenderGroup =\n%v\nwant\n%v", got, want)
	}
	bare := decoded(t, RenderGroup(ops(), "g1", Meta{}, base+"/Users", false))
	if _, ok := bare["members"]; ok || bare["meta"].(map[string]any)["version"] != want["meta"].(map[string]any)["version"] {
		t.Errorf("without members: %v", bare)
	}
	list, _ := json.Marshal(NewList(1, 1, []GroupResource{res}))
	if !strings.Contains(string(list), `"Resources":[{"schemas":["`+GroupSchema+`"]`) {
		t.Errorf("a list of groups: %s", list)
	}
}

func TestGroupETag(t *testing.T) {
	t.Parallel()
	tag := GroupETag(ops(), "g1")
	if !strings.HasPrefix(tag, `W/"`) {
		t.Fatalf("GroupETag = %s", tag)
	}
	reordered := ops()
	reordered.Members[0], reordered.Members[1] = reordered.Members[1], reordered.Members[0]
	if GroupETag(reordered, "g1") != tag {
		t.Error("the members' order changed the tag")
	}
	for name, change := range map[string]func(g *Group){
		"displayName": func(g *Group) { g.DisplayName = "Ops2" },
		"externalId":  func(g *Group) { g.ExternalID = "" },
		"a member":    func(g *Group) { g.Members = g.Members[:1] },
		"a display":   func(g *Group) { g.Members[1].Display = "Bo" },
	} {
		g := ops()
		change(&g)
		if GroupETag(g, "g1") == tag {
			t.Errorf("changing %s kept the tag", name)
		}
	}
	if GroupETag(ops(), "g2") == tag {
		t.Error("another id kept the tag")
	}
}
