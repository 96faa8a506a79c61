package scim

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		filter string
		want   Filter
	}{
		// What Okta and Entra send.
		{`userName eq "test.user@okta.local"`, Filter{{"username", "test.user@okta.local"}}},
		{`externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"`, Filter{{"externalid", "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"}}},
		{`emails.value eq "x@y.z"`, Filter{{"emails.value", "x@y.z"}}},
		{`active eq true`, Filter{{"active", true}}},
		{`active eq false`, Filter{{"active", false}}},
		{`userName eq "a@b.c" and active eq true`, Filter{{"username", "a@b.c"}, {"active", true}}},
		{`userName eq "a" and externalId eq "b" and emails.value eq "c"`,
			Filter{{"username", "a"}, {"externalid", "b"}, {"emails.value", "c"}}},
		// Case and white space.
		{`USERNAME EQ "A@B.C" AND Active Eq TRUE`, Filter{{"username", "A@B.C"}, {"active", true}}},
		{"  userName\teq\n\"a\"   and  active  eq  false  ", Filter{{"username", "a"}, {"active", false}}},
		// Values.
		{`userName eq "say \"hi\""`, Filter{{"username", `say "hi"`}}},
		{`displayName eq "Ren\u00e9e \\ slash"`, Filter{{"displayname", `Renée \ slash`}}},
		{`userName eq ""`, Filter{{"username", ""}}},
		{`externalId eq null`, Filter{{"externalid", nil}}},
		{`x eq 42`, Filter{{"x", 42.0}}},
		{`x eq -1.5e3`, Filter{{"x", -1500.0}}},
		{`x eq 0`, Filter{{"x", 0.0}}},
		{`name.givenName eq "a and b or c"`, Filter{{"name.givenname", "a and b or c"}}},
		// Schema URNs: the core User one removed, others kept lower-cased.
		{`urn:ietf:params:scim:schemas:core:2.0:User:userName eq "a"`, Filter{{"username", "a"}}},
		{`urn:ietf:params:scim:schemas:core:2.0:user:emails.value eq "a"`, Filter{{"emails.value", "a"}}},
		{`urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber eq "7"`,
			Filter{{"urn:ietf:params:scim:schemas:extension:enterprise:2.0:user:employeenumber", "7"}}},
		// Exactly ten comparisons.
		{strings.Repeat(`a eq 1 and `, 9) + `a eq 1`, slices.Repeat(Filter{{"a", 1.0}}, 10)},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			got, err := ParseFilter(tt.filter)
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseFilter = %#v, want %#v", got, tt.want)
			}
			again, err := ParseFilter(got.String())
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("ParseFilter(%q) = %#v, %v; want %#v", got.String(), again, err, got)
			}
		})
	}
}

func TestParseFilterRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		filter string
		detail string // a part of the detail
	}{
		{``, "empty"},
		{`   `, "empty"},
		{`userName sw "a"`, `Perch supports only "eq" comparisons joined by "and"; found "sw" at character 10.`},
		{`userName ne "a"`, `found "ne"`},
		{`userName co "a"`, `found "co"`},
		{`userName ew "a"`, `found "ew"`},
		{`userName pr`, `found "pr"`},
		{`meta.lastModified gt "2011-05-13T04:42:34Z"`, `found "gt"`},
		{`x ge 1`, `found "ge"`},
		{`x lt 1`, `found "lt"`},
		{`x le 1`, `found "le"`},
		{`userName eq "a" or userName eq "b"`, `found "or" at character 17`},
		{`not (userName eq "a")`, `found "not"`},
		{`(userName eq "a")`, "parenthesis at character 1"},
		{`userName eq "a")`, "parenthesis at character 16"},
		{`emails[type eq "work"]`, "bracket at character 7"},
		{`userName eq "a" and`, `ends after "and"`},
		{`userName eq "a" userName`, `Expected "and" at character 17, found "userName"`},
		{`userName eq`, `ends after "eq"`},
		{`userName eq  `, `ends after "eq"`},
		{`userName `, `ends after "userName"`},
		{`a eq 1 and `, `ends after "and"`},
		{`userName`, `ends after "userName"`},
		{`userName eq "a`, "not terminated"},
		{`userName eq "a\"`, "not terminated"},
		{`userName eq "\x"`, "bad escape"},
		{`userName eq a@b.c`, `"a@b.c" at character 13 is not a value`},
		{`userName eq 01`, "is not a value"},
		{`x eq 1e999`, "out of range"},
		{`userName eq "a"and active eq true`, "after the value"},
		{`userName eq"a"`, `after "eq"`},
		{`userName equals "a"`, `Expected "eq" at character 10, found "equals"`},
		{`1userName eq "a"`, "is not an attribute name"},
		{`a.b.c eq "a"`, "is not an attribute name"},
		{`a. eq "a"`, "is not an attribute name"},
		{`urn:x eq "a"`, "is not an attribute name"},
		{`urn:a::b:c eq "a"`, "is not an attribute name"},
		{`userName eq "a` + strings.Repeat(" ", 1024) + `"`, "at most 1024"},
		{strings.Repeat(`a eq 1 and `, 10) + `a eq 1`, "more than 10 comparisons"},
		{"userName eq \"\xff\"", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			f, err := ParseFilter(tt.filter)
			if err == nil {
				t.Fatalf("ParseFilter = %#v, want an error", f)
			}
			wantError(t, err, http.StatusBadRequest, InvalidFilter)
			if detail := err.(*Error).Detail; !strings.Contains(detail, tt.detail) {
				t.Errorf("detail = %q, want it to contain %q", detail, tt.detail)
			}
		})
	}
}

func TestFilterString(t *testing.T) {
	t.Parallel()
	f := Filter{{"username", "a@b.c"}, {"active", true}, {"externalid", nil}, {"x", 1.5}, {"y", `<"&>`}}
	want := `username eq "a@b.c" and active eq true and externalid eq null and x eq 1.5 and y eq "<\"&>"`
	if got := f.String(); got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
}
