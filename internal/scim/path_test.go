package scim

import (
	"net/http"
	"reflect"
	"testing"
)

func TestParsePath(t *testing.T) {
	t.Parallel()
	const enterprise = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:user"
	tests := []struct {
		path string
		want Path
	}{
		{`active`, Path{Attr: "active"}},
		{`userName`, Path{Attr: "username"}},
		{`name.givenName`, Path{Attr: "name", Sub: "givenname"}},
		{`emails[type eq "work"].value`, Path{Attr: "emails", Filter: Filter{{"type", "work"}}, Sub: "value"}},
		{`emails[value eq "a@b.c"]`, Path{Attr: "emails", Filter: Filter{{"value", "a@b.c"}}}},
		{`emails[type eq "work" and primary eq true]`, Path{Attr: "emails", Filter: Filter{{"type", "work"}, {"primary", true}}}},
		{`emails[value eq "a]b"].display`, Path{Attr: "emails", Filter: Filter{{"value", "a]b"}}, Sub: "display"}},
		{`urn:ietf:params:scim:schemas:core:2.0:User:name.familyName`, Path{Attr: "name", Sub: "familyname"}},
		{`urn:ietf:params:scim:schemas:core:2.0:User:emails[type eq "work"].value`,
			Path{Attr: "emails", Filter: Filter{{"type", "work"}}, Sub: "value"}},
		{`urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department`, Path{Schema: enterprise, Attr: "department"}},
		{`urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager.value`, Path{Schema: enterprise, Attr: "manager", Sub: "value"}},
		{`addresses[type eq "work"].formatted`, Path{Attr: "addresses", Filter: Filter{{"type", "work"}}, Sub: "formatted"}},
		{`phoneNumbers[type eq "mobile"].value`, Path{Attr: "phonenumbers", Filter: Filter{{"type", "mobile"}}, Sub: "value"}},
		{`x509Certificates`, Path{Attr: "x509certificates"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := ParsePath(tt.path)
			if err != nil {
				t.Fatalf("ParsePath: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParsePath = %#v, want %#v", got, tt.want)
			}
			again, err := ParsePath(got.String())
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("ParsePath(%q) = %#v, %v; want %#v", got.String(), again, err, got)
			}
		})
	}
}

func TestParsePathRefuses(t *testing.T) {
	t.Parallel()
	for _, path := range []string{
		``, `.a`, `a.`, `a..b`, `a[`, `a[]`, `a[type eq "x"`, `a b`, `a.b.c`,
		`1a`, `a[type sw "x"]`, `a[type eq "x"]b`, `a[type eq "x"].`, `a[b.c eq "x"]`,
		`a[urn:x:y:b eq "x"]`, `a[type eq "x"][value eq "y"]`, `urn:`, `urn:x`, `urn:a::b:c`,
		`urn:ietf:params:scim:schemas:core:2.0:User:`, `a]`, `"a"`, ` a`, `a `,
	} {
		t.Run(path, func(t *testing.T) {
			p, err := ParsePath(path)
			if err == nil {
				t.Fatalf("ParsePath = %#v, want an error", p)
			}
			wantError(t, err, http.StatusBadRequest, InvalidPath)
		})
	}
}
