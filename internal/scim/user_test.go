package scim

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeUserFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file      string
		want      User
		wantEmail string
	}{
		{"okta/create_user.request.json", User{
			UserName:    "test.user@okta.local",
			ExternalID:  "00ujl29u0le5T6Aj10h7",
			Name:        Name{GivenName: "Test", FamilyName: "User"},
			DisplayName: "Test User",
			Emails:      []Email{{Value: "test.user@okta.local", Type: "work", Primary: true}},
			Active:      true,
		}, "test.user@okta.local"},
		{"okta/put_user_replace.request.json", User{
			UserName: "test.user@okta.local",
			Name:     Name{GivenName: "Another", MiddleName: "Excited", FamilyName: "User"},
			Emails:   []Email{{Value: "test.user@okta.local", Type: "work", Primary: true, Display: "test.user@okta.local"}},
			Active:   true,
		}, "test.user@okta.local"},
		{"entra/create_user.request.json", User{
			UserName:   "Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee",
			ExternalID: "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
			Name:       Name{Formatted: "givenName familyName", FamilyName: "familyName", GivenName: "givenName"},
			Emails:     []Email{{Value: "Test_User_11bb11bb-cc22-dd33-ee44-55ff55ff55ff@testuser.com", Type: "work", Primary: true}},
			Active:     true,
		}, "Test_User_11bb11bb-cc22-dd33-ee44-55ff55ff55ff@testuser.com"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			u, err := DecodeUser(fixture(t, tt.file))
			if err != nil {
				t.Fatalf("DecodeUser: %v", err)
			}
			if !reflect.DeepEqual(u, tt.want) {
				t.Fatalf("DecodeUser = %#v, want %#v", u, tt.want)
			}
			if got := u.Email(); got != tt.wantEmail {
				t.Errorf("Email() = %q, want %q", got, tt.wantEmail)
			}
		})
	}
}

func TestDecodeUser(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want User
	}{
		{"the least", `{"userName":"a@b.c"}`, User{UserName: "a@b.c", Active: true}},
		{"names in any case, trimmed userName", `{"SCHEMAS":["URN:IETF:PARAMS:SCIM:SCHEMAS:CORE:2.0:USER"],"USERNAME":"  a@b.c ",
			"Name":{"GIVENNAME":"Ann","familyname":"Lee"},"DisplayName":"Ann Lee","EMAILS":[{"VALUE":"a@b.c","TYPE":"work","PRIMARY":true}]}`,
			User{UserName: "a@b.c", Name: Name{GivenName: "Ann", FamilyName: "Lee"}, DisplayName: "Ann Lee",
				Emails: []Email{{Value: "a@b.c", Type: "work", Primary: true}}, Active: true}},
		{"active as Entra's string", `{"userName":"a","active":"False"}`, User{UserName: "a", Active: false}},
		{"active as a string in any case", `{"userName":"a","active":"TRUE"}`, User{UserName: "a", Active: true}},
		{"active null is true", `{"userName":"a","active":null}`, User{UserName: "a", Active: true}},
		{"primary as a string", `{"userName":"a","emails":[{"value":"a@b.c","primary":"True"},{"value":"d@e.f","primary":"false"}]}`,
			User{UserName: "a", Emails: []Email{{Value: "a@b.c", Primary: true}, {Value: "d@e.f"}}, Active: true}},
		{"nulls are absent", `{"userName":"a","externalId":null,"displayName":null,"name":null,"emails":null,"schemas":null}`,
			User{UserName: "a", Active: true}},
		{"extras inside an email ignored", `{"userName":"a","emails":[{"value":"a@b.c","$ref":"x","operation":"add"}]}`,
			User{UserName: "a", Emails: []Email{{Value: "a@b.c"}}, Active: true}},
		{"ignored attributes not type-checked", `{"userName":"a","id":5,"meta":"x","password":["p"],"groups":{},"roles":[],
			"locale":1,"phoneNumbers":"x","addresses":null,"x509Certificates":[]}`, User{UserName: "a", Active: true}},
		{"other extensions ignored", `{"userName":"a","URN:example:custom":1}`, User{UserName: "a", Active: true}},
		{"title and the enterprise extension kept", `{"userName":"a","Title":" Engineer ","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":
			{"department":"Ops","EMPLOYEENUMBER":"42","manager":{"value":"m-1","$ref":"../Users/m-1","displayName":"Max"},"costCenter":"9","organization":"X"}}`,
			User{UserName: "a", Active: true, Title: " Engineer ", Enterprise: Enterprise{Department: "Ops", EmployeeNumber: "42", Manager: "m-1"}}},
		{"the extension's URN in any case, manager as Entra's id", `{"userName":"a","URN:IETF:PARAMS:SCIM:SCHEMAS:EXTENSION:ENTERPRISE:2.0:USER":
			{"manager":"m-2"}}`, User{UserName: "a", Active: true, Enterprise: Enterprise{Manager: "m-2"}}},
		{"a role named", `{"userName":"a","roles":[{"value":"Viewer"},{"value":" ADMIN ","display":"Admin","type":"x"}]}`,
			User{UserName: "a", Active: true, Role: "admin"}},
		{"the primary role wins", `{"userName":"a","roles":[{"value":"owner"},{"value":"member","primary":"True"}]}`,
			User{UserName: "a", Active: true, Role: "member"}},
		{"else the most privileged", `{"userName":"a","roles":[{"value":"member"},{"value":"Owner"},{"value":"admin"}]}`,
			User{UserName: "a", Active: true, Role: "owner"}},
		{"an unrecognised primary is ignored", `{"userName":"a","roles":[{"value":"superuser","primary":true},{"value":"admin"}]}`,
			User{UserName: "a", Active: true, Role: "admin"}},
		{"no platform admin", `{"userName":"a","roles":[{"value":"platform admin"},{"value":"platform_admin","primary":true},{"value":"root"}]}`,
			User{UserName: "a", Active: true}},
		{"roles as strings", `{"userName":"a","roles":["admin"]}`, User{UserName: "a", Active: true, Role: "admin"}},
		{"escapes", `{"userName":"Ren\u00e9e"}`, User{UserName: "Renée", Active: true}},
		{"a userName of 256 bytes", `{"userName":"` + strings.Repeat("a", 256) + `"}`, User{UserName: strings.Repeat("a", 256), Active: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := DecodeUser([]byte(tt.body))
			if err != nil {
				t.Fatalf("DecodeUser: %v", err)
			}
			if !reflect.DeepEqual(u, tt.want) {
				t.Fatalf("DecodeUser = %#v, want %#v", u, tt.want)
			}
		})
	}
}

func TestDecodeUserRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		scimType string
		detail   string // a part of the detail
	}{
		{"not JSON", `userName=a`, InvalidSyntax, "not JSON"},
		{"empty", ``, InvalidSyntax, "not JSON"},
		{"an array", `[{"userName":"a"}]`, InvalidSyntax, "must be a JSON object"},
		{"a string", `"a"`, InvalidSyntax, "must be a JSON object"},
		{"trailing garbage", `{"userName":"a"} x`, InvalidSyntax, "more after"},
		{"two objects", `{"userName":"a"}{"userName":"b"}`, InvalidSyntax, "more after"},
		{"unknown attribute", `{"userName":"a","nickname2":"x"}`, InvalidSyntax, `"nickname2"`},
		{"a name twice", `{"userName":"a","username":"b"}`, InvalidSyntax, "twice"},
		{"schemas without User", `{"schemas":["urn:x:y"],"userName":"a"}`, InvalidSyntax, "schemas"},
		{"schemas not an array", `{"schemas":"urn:ietf:params:scim:schemas:core:2.0:User","userName":"a"}`, InvalidSyntax, "schemas"},
		{"unknown name part", `{"userName":"a","name":{"nick":"x"}}`, InvalidSyntax, `"nick"`},
		{"missing userName", `{"displayName":"a"}`, InvalidValue, "required"},
		{"null userName", `{"userName":null}`, InvalidValue, "required"},
		{"blank userName", `{"userName":"  "}`, InvalidValue, "empty"},
		{"userName a number", `{"userName":5}`, InvalidValue, `"userName" must be a string`},
		{"userName too long", `{"userName":"` + strings.Repeat("a", 257) + `"}`, InvalidValue, "256"},
		{"userName not UTF-8", "{\"userName\":\"a\xffb\"}", InvalidValue, "UTF-8"},
		{"active maybe", `{"userName":"a","active":"maybe"}`, InvalidValue, `"active" must be true or false`},
		{"active a number", `{"userName":"a","active":1}`, InvalidValue, `"active" must be true or false`},
		{"externalId a number", `{"userName":"a","externalId":7}`, InvalidValue, "externalId"},
		{"displayName too long", `{"userName":"a","displayName":"` + strings.Repeat("a", 257) + `"}`, InvalidValue, "256"},
		{"name a string", `{"userName":"a","name":"Ann"}`, InvalidValue, "object"},
		{"a name part a number", `{"userName":"a","name":{"givenName":1}}`, InvalidValue, "name.givenName"},
		{"emails a string", `{"userName":"a","emails":"x"}`, InvalidValue, "emails"},
		{"an email a string", `{"userName":"a","emails":["a@b.c"]}`, InvalidValue, "objects"},
		{"an email without a value", `{"userName":"a","emails":[{"type":"work"}]}`, InvalidValue, "value"},
		{"an email value too long", `{"userName":"a","emails":[{"value":"` + strings.Repeat("a", 321) + `"}]}`, InvalidValue, "320"},
		{"primary maybe", `{"userName":"a","emails":[{"value":"a@b.c","primary":"maybe"}]}`, InvalidValue, "primary"},
		{"two primaries", `{"userName":"a","emails":[{"value":"a@b.c","primary":true},{"value":"d@e.f","primary":true}]}`,
			InvalidValue, "more than one primary"},
		{"title a boolean", `{"userName":"a","title":true}`, InvalidValue, "title"},
		{"the extension a string", `{"userName":"a","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":"Ops"}`, InvalidValue, "object"},
		{"a department a number", `{"userName":"a","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":5}}`, InvalidValue, "department"},
		{"a manager a number", `{"userName":"a","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"manager":5}}`, InvalidValue, "manager"},
		{"roles an object", `{"userName":"a","roles":{"value":"admin"}}`, InvalidValue, "roles"},
		{"a role a number", `{"userName":"a","roles":[5]}`, InvalidValue, "objects"},
		{"a role's primary maybe", `{"userName":"a","roles":[{"value":"admin","primary":"maybe"}]}`, InvalidValue, "primary"},
		{"eleven emails", `{"userName":"a","emails":[` + strings.Repeat(`{"value":"a@b.c"},`, 10) + `{"value":"a@b.c"}]}`,
			InvalidValue, "at most 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := DecodeUser([]byte(tt.body))
			if err == nil {
				t.Fatalf("DecodeUser = %#v, want an error", u)
			}
			wantError(t, err, http.StatusBadRequest, tt.scimType)
			if detail := err.(*Error).Detail; !strings.Contains(detail, tt.detail) {
				t.Errorf("detail = %q, want it to contain %q", detail, tt.detail)
			}
		})
	}
}

func TestUserEmail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		user User
		want string
	}{
		{"the primary", User{UserName: "u@x.y", Emails: []Email{{Value: "w@x.y", Type: "work"}, {Value: "p@x.y", Primary: true}}}, "p@x.y"},
		{"else the work one", User{Emails: []Email{{Value: "h@x.y", Type: "home"}, {Value: "w@x.y", Type: "Work"}}}, "w@x.y"},
		{"else the first", User{Emails: []Email{{Value: "h@x.y", Type: "home"}, {Value: "o@x.y"}}}, "h@x.y"},
		{"else the userName as an address", User{UserName: "u@x.y"}, "u@x.y"},
		{"not a userName of two @", User{UserName: "u@x@y"}, ""},
		{"not a userName without a domain", User{UserName: "u@"}, ""},
		{"not a userName without a local part", User{UserName: "@x.y"}, ""},
		{"not a userName without @", User{UserName: "Test_User_00aa"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.user.Email(); got != tt.want {
				t.Errorf("Email() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUserAccountName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		user User
		want string
	}{
		{"the display name", User{UserName: "u", DisplayName: "Ann Lee", Name: Name{Formatted: "Dr Ann Lee"}}, "Ann Lee"},
		{"else the formatted name", User{UserName: "u", Name: Name{Formatted: "Dr Ann Lee", GivenName: "Ann"}}, "Dr Ann Lee"},
		{"else given and family names", User{UserName: "u", Name: Name{GivenName: "Ann", FamilyName: "Lee"}}, "Ann Lee"},
		{"the given name alone", User{UserName: "u", Name: Name{GivenName: "Ann"}}, "Ann"},
		{"the family name alone", User{UserName: "u", Name: Name{FamilyName: "Lee"}}, "Lee"},
		{"else the userName", User{UserName: "u@x.y", DisplayName: "  "}, "u@x.y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.user.AccountName(); got != tt.want {
				t.Errorf("AccountName() = %q, want %q", got, tt.want)
			}
		})
	}
}
