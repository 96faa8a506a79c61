package scim

import (
	"reflect"
	"testing"
)

const base = "https://perch.example.com/scim/v2"

// at follows keys (string) and indexes (int) into decoded JSON.
func at(tb testing.TB, v any, path ...any) any {
	tb.Helper()
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				tb.Fatalf("%v is not an object, looking for %q", v, p)
			}
			v = m[p]
		case int:
			a, ok := v.([]any)
			if !ok || p >= len(a) {
				tb.Fatalf("%v has no entry %d", v, p)
			}
			v = a[p]
		}
	}
	return v
}

func TestServiceProviderConfig(t *testing.T) {
	t.Parallel()
	doc := decoded(t, ServiceProviderConfig(base+"/"))
	tests := []struct {
		path []any
		want any
	}{
		{[]any{"schemas", 0}, "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"},
		{[]any{"patch", "supported"}, true},
		{[]any{"bulk", "supported"}, false},
		{[]any{"bulk", "maxOperations"}, 0.0},
		{[]any{"filter", "supported"}, true},
		{[]any{"filter", "maxResults"}, 200.0},
		{[]any{"changePassword", "supported"}, false},
		{[]any{"sort", "supported"}, false},
		{[]any{"etag", "supported"}, true},
		{[]any{"authenticationSchemes", 0, "type"}, "oauthbearertoken"},
		{[]any{"authenticationSchemes", 0, "name"}, "SCIM token"},
		{[]any{"authenticationSchemes", 0, "description"}, "The organisation's SCIM token as a Bearer token."},
		{[]any{"meta", "resourceType"}, "ServiceProviderConfig"},
		{[]any{"meta", "location"}, base + "/ServiceProviderConfig"},
	}
	for _, tt := range tests {
		if got := at(t, doc, tt.path...); got != tt.want {
			t.Errorf("%v = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestResourceTypes(t *testing.T) {
	t.Parallel()
	list := decoded(t, ResourceTypes(base))
	if got := at(t, list, "totalResults"); got != 2.0 {
		t.Errorf("totalResults = %v, want 2", got)
	}
	if got := at(t, list, "schemas", 0); got != ListSchema {
		t.Errorf("schemas = %v, want the ListResponse", got)
	}
	user, group := at(t, list, "Resources", 0), at(t, list, "Resources", 1)
	for i, id := range []string{"User", "group"} {
		one, ok := ResourceType(base, id)
		if !ok || !reflect.DeepEqual(at(t, list, "Resources", i), any(decoded(t, one))) {
			t.Errorf("the list's entry %d differs from ResourceType(%q) %v (%v)", i, id, one, ok)
		}
	}
	if one, ok := ResourceType(base, "Device"); ok {
		t.Errorf("ResourceType(Device) = %v, want none", one)
	}
	for _, tt := range []struct {
		path []any
		want any
	}{
		{[]any{"id"}, "Group"},
		{[]any{"endpoint"}, "/Groups"},
		{[]any{"schema"}, GroupSchema},
		{[]any{"meta", "location"}, base + "/ResourceTypes/Group"},
	} {
		if got := at(t, group, tt.path...); got != tt.want {
			t.Errorf("Group %v = %v, want %v", tt.path, got, tt.want)
		}
	}
	tests := []struct {
		path []any
		want any
	}{
		{[]any{"schemas", 0}, "urn:ietf:params:scim:schemas:core:2.0:ResourceType"},
		{[]any{"id"}, "User"},
		{[]any{"name"}, "User"},
		{[]any{"endpoint"}, "/Users"},
		{[]any{"schema"}, UserSchema},
		{[]any{"schemaExtensions", 0, "schema"}, EnterpriseSchema},
		{[]any{"schemaExtensions", 0, "required"}, false},
		{[]any{"meta", "resourceType"}, "ResourceType"},
		{[]any{"meta", "location"}, base + "/ResourceTypes/User"},
	}
	for _, tt := range tests {
		if got := at(t, user, tt.path...); got != tt.want {
			t.Errorf("%v = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestSchemas(t *testing.T) {
	t.Parallel()
	list := decoded(t, Schemas(base))
	if got := at(t, list, "totalResults"); got != 3.0 {
		t.Fatalf("totalResults = %v, want 3", got)
	}
	user, group, enterprise := at(t, list, "Resources", 0), at(t, list, "Resources", 1), at(t, list, "Resources", 2)
	names := func(doc any) []string {
		var names []string
		for _, a := range at(t, doc, "attributes").([]any) {
			names = append(names, at(t, a, "name").(string))
		}
		return names
	}
	for _, c := range []struct {
		doc  any
		id   string
		want []string
	}{
		{user, UserSchema, []string{"userName", "externalId", "name", "displayName", "emails", "active", "title", "roles"}},
		{group, GroupSchema, []string{"displayName", "externalId", "members"}},
		{enterprise, EnterpriseSchema, []string{"employeeNumber", "department", "manager"}},
	} {
		if got := at(t, c.doc, "id"); got != c.id {
			t.Errorf("schema id = %v, want %v", got, c.id)
		}
		if got := names(c.doc); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s attributes = %v, want %v", c.id, got, c.want)
		}
	}
	if got := at(t, group, "attributes", 0, "uniqueness"); got != "server" {
		t.Errorf("Group displayName uniqueness = %v", got)
	}
	if got := at(t, group, "attributes", 2, "subAttributes", 0, "name"); got != "value" {
		t.Errorf("Group members' first sub-attribute = %v", got)
	}
	if got := at(t, user, "attributes", 7, "subAttributes", 0, "canonicalValues"); !reflect.DeepEqual(got, []any{"owner", "admin", "member"}) {
		t.Errorf("roles' values = %v", got)
	}
	tests := []struct {
		path []any
		want any
	}{
		{[]any{"id"}, UserSchema},
		{[]any{"meta", "resourceType"}, "Schema"},
		{[]any{"meta", "location"}, base + "/Schemas/" + UserSchema},
		{[]any{"attributes", 0, "required"}, true},
		{[]any{"attributes", 0, "uniqueness"}, "server"},
		{[]any{"attributes", 0, "caseExact"}, false},
		{[]any{"attributes", 2, "type"}, "complex"},
		{[]any{"attributes", 2, "subAttributes", 5, "name"}, "honorificSuffix"},
		{[]any{"attributes", 4, "multiValued"}, true},
		{[]any{"attributes", 4, "subAttributes", 1, "name"}, "type"},
		{[]any{"attributes", 4, "subAttributes", 1, "canonicalValues", 2}, "other"},
		{[]any{"attributes", 4, "subAttributes", 2, "type"}, "boolean"},
		{[]any{"attributes", 5, "type"}, "boolean"},
	}
	for _, tt := range tests {
		if got := at(t, user, tt.path...); got != tt.want {
			t.Errorf("User %v = %v, want %v", tt.path, got, tt.want)
		}
	}
	if got := at(t, enterprise, "attributes", 2, "subAttributes", 0, "name"); got != "value" {
		t.Errorf("enterprise manager's sub-attribute = %v, want value", got)
	}
	if got := at(t, enterprise, "meta", "location"); got != base+"/Schemas/"+EnterpriseSchema {
		t.Errorf("enterprise location = %v", got)
	}
}

func TestSchema(t *testing.T) {
	t.Parallel()
	for _, id := range []string{UserSchema, EnterpriseSchema, GroupSchema, "URN:IETF:PARAMS:SCIM:SCHEMAS:CORE:2.0:USER"} {
		doc, ok := Schema(base, id)
		if !ok {
			t.Errorf("Schema(%q) not found", id)
			continue
		}
		if got := at(t, decoded(t, doc), "meta", "location"); got == "" {
			t.Errorf("Schema(%q) has no location", id)
		}
	}
	if doc, ok := Schema(base, "urn:ietf:params:scim:schemas:core:2.0:Device"); ok {
		t.Errorf("Schema(Device) = %v, want none", doc)
	}
}
