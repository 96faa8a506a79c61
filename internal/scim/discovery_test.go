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
	if got := at(t, list, "totalResults"); got != 1.0 {
		t.Errorf("totalResults = %v, want 1", got)
	}
	if got := at(t, list, "schemas", 0); got != ListSchema {
		t.Errorf("schemas = %v, want the ListResponse", got)
	}
	user := at(t, list, "Resources", 0)
	if one := decoded(t, ResourceType(base)); !reflect.DeepEqual(user, any(one)) {
		t.Errorf("the list's entry %v differs from ResourceType %v", user, one)
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
	if got := at(t, list, "totalResults"); got != 2.0 {
		t.Fatalf("totalResults = %v, want 2", got)
	}
	user, enterprise := at(t, list, "Resources", 0), at(t, list, "Resources", 1)

	var names []string
	for _, a := range at(t, user, "attributes").([]any) {
		names = append(names, at(t, a, "name").(string))
	}
	if want := []string{"userName", "externalId", "name", "displayName", "emails", "active"}; !reflect.DeepEqual(names, want) {
		t.Errorf("User attributes = %v, want %v", names, want)
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
	if got := at(t, enterprise, "id"); got != EnterpriseSchema {
		t.Errorf("second schema = %v, want the enterprise extension", got)
	}
	if got, ok := at(t, enterprise, "attributes").([]any); !ok || len(got) != 0 {
		t.Errorf("enterprise attributes = %#v, want []", at(t, enterprise, "attributes"))
	}
	if got := at(t, enterprise, "meta", "location"); got != base+"/Schemas/"+EnterpriseSchema {
		t.Errorf("enterprise location = %v", got)
	}
}

func TestSchema(t *testing.T) {
	t.Parallel()
	for _, id := range []string{UserSchema, EnterpriseSchema, "URN:IETF:PARAMS:SCIM:SCHEMAS:CORE:2.0:USER"} {
		doc, ok := Schema(base, id)
		if !ok {
			t.Errorf("Schema(%q) not found", id)
			continue
		}
		if got := at(t, decoded(t, doc), "meta", "location"); got == "" {
			t.Errorf("Schema(%q) has no location", id)
		}
	}
	if doc, ok := Schema(base, "urn:ietf:params:scim:schemas:core:2.0:Group"); ok {
		t.Errorf("Schema(Group) = %v, want none", doc)
	}
}
