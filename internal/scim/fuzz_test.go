package scim

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// addFixtures seeds f with the shared fixtures of this pattern, when they are here.
func addFixtures(f *testing.F, pattern string) {
	files, _ := filepath.Glob(filepath.Join(fixtureDir, pattern))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
}

// wantScimError checks, on any input, that err is an *Error of this status
// and, unless scimType is "", this scimType.
func wantScimError(t *testing.T, err error, status int, scimType string) {
	t.Helper()
	var e *Error
	switch {
	case !errors.As(err, &e):
		t.Fatalf("error %v is a %T, want an *Error", err, err)
	case e.Status != status || scimType != "" && e.Type != scimType:
		t.Fatalf("error = %d %q, want %d %q", e.Status, e.Type, status, scimType)
	case e.Detail == "":
		t.Fatal("error without a detail")
	}
}

func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		`userName eq "test.user@okta.local"`,
		`externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"`,
		`emails.value eq "x@y.z" and active eq true`,
		`urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber eq -1.5e3`,
		`userName eq "say \"hi\" \u00e9" AND x eq null`,
		`userName sw "a" or (x pr)`,
		`emails[type eq "work"]`,
		`userName eq "a`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseFilter(s)
		if err != nil {
			wantScimError(t, err, http.StatusBadRequest, InvalidFilter)
			return
		}
		if len(got) == 0 || len(got) > maxComparisons {
			t.Fatalf("ParseFilter(%q) has %d comparisons", s, len(got))
		}
		again, err := ParseFilter(got.String())
		if err != nil {
			t.Fatalf("ParseFilter(%q) = %v, the rendering of ParseFilter(%q)", got.String(), err, s)
		}
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("ParseFilter(%q) = %#v, want %#v", got.String(), again, got)
		}
	})
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{
		`active`, `name.givenName`, `emails[type eq "work"].value`, `emails[value eq "a]b" and primary eq true]`,
		`urn:ietf:params:scim:schemas:core:2.0:User:name.familyName`,
		`urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department`,
		`a..b`, `a[type eq "x"`, `a.b.c`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParsePath(s)
		if err != nil {
			wantScimError(t, err, http.StatusBadRequest, InvalidPath)
			return
		}
		if got.Attr == "" {
			t.Fatalf("ParsePath(%q) = %#v without an attribute", s, got)
		}
		again, err := ParsePath(got.String())
		if err != nil {
			t.Fatalf("ParsePath(%q) = %v, the rendering of ParsePath(%q)", got.String(), err, s)
		}
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("ParsePath(%q) = %#v, want %#v", got.String(), again, got)
		}
	})
}

func FuzzDecodeUser(f *testing.F) {
	addFixtures(f, "*/create_user.request.json")
	addFixtures(f, "*/put_user_replace.request.json")
	for _, s := range []string{
		`{"userName":"a@b.c","active":"False","emails":[{"value":"a@b.c","primary":"true"}]}`,
		`{"userName":"a","name":{"givenName":null},"urn:x:y":{"a":1}}`,
		`{"userName":5}`, `[]`, `{"userName":"a"} x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		u, err := DecodeUser(body)
		if err != nil {
			wantScimError(t, err, http.StatusBadRequest, "")
			return
		}
		checkUser(t, u)
	})
}

func FuzzApplyPatch(f *testing.F) {
	addFixtures(f, "*/patch_user_*.request.json")
	for _, s := range []string{
		`{"Operations":[{"op":"Replace","path":"active","value":"False"}]}`,
		`{"Operations":[{"op":"add","value":{"name.givenName":"Bo","emails":[{"value":"b@x.y","primary":true}]}}]}`,
		`{"Operations":[{"op":"add","path":"emails[type eq \"other\"].value","value":"o@x.y"}]}`,
		`{"Operations":[{"op":"remove","path":"emails[type eq \"home\"]"},{"op":"replace","path":"emails.primary","value":true}]}`,
		`{"Operations":[{"op":"remove","path":"userName"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in := ann()
		got, err := ApplyPatch(in, body)
		if !reflect.DeepEqual(in, ann()) {
			t.Fatalf("ApplyPatch changed its input to %#v", in)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status < 400 || e.Status > 499 || e.Detail == "" {
				t.Fatalf("error = %#v, want an *Error with a 4xx status and a detail", err)
			}
			if !reflect.DeepEqual(got, ann()) {
				t.Fatalf("ApplyPatch returned %#v with an error, want the user as given", got)
			}
			return
		}
		checkUser(t, got)
	})
}

// checkUser checks what every User that DecodeUser or ApplyPatch answers obeys.
func checkUser(t *testing.T, u User) {
	t.Helper()
	if u.UserName == "" {
		t.Fatalf("%#v has no userName", u)
	}
	if primaries(u.Emails) > 1 {
		t.Fatalf("%#v has %d primary emails", u, primaries(u.Emails))
	}
	if len(u.Emails) > maxEmails {
		t.Fatalf("%#v has %d emails", u, len(u.Emails))
	}
	for _, e := range u.Emails {
		if e.Value == "" {
			t.Fatalf("%#v has an email without a value", u)
		}
	}
}

// addRequests seeds f with the project's own requests of this pattern.
func addRequests(f *testing.F, pattern string) {
	files, _ := filepath.Glob(filepath.Join("testdata", "requests", pattern))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(fill(b))
		}
	}
}

func FuzzDecodeGroup(f *testing.F) {
	addFixtures(f, "*/create_group.request.json")
	addRequests(f, "*/*_group.json")
	for _, s := range []string{
		`{"displayName":"Ops","members":[{"value":"u1"},{"value":"u1"}]}`,
		`{"displayName":" ","members":[{"value":"u1","type":"Group"}]}`,
		`{"DisplayName":"x","members":null,"id":1,"urn:a:b:c":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		g, err := DecodeGroup(body)
		if err != nil {
			wantScimError(t, err, http.StatusBadRequest, "")
			return
		}
		checkGroup(t, g)
	})
}

func FuzzApplyGroupPatch(f *testing.F) {
	addFixtures(f, "*/patch_group_*.request.json")
	addRequests(f, "*/patch_group_*.json")
	for _, s := range []string{
		`{"Operations":[{"op":"Remove","path":"members","value":[{"value":"u1"}]}]}`,
		`{"Operations":[{"op":"remove","path":"members[value eq \"u2\" and type eq \"User\"]"}]}`,
		`{"Operations":[{"op":"replace","value":{"id":"g","displayName":"N","members":[{"value":"u3"}]}}]}`,
		`{"Operations":[{"op":"remove","path":"displayName"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in := ops()
		got, err := ApplyGroupPatch(in, body)
		if !reflect.DeepEqual(in, ops()) {
			t.Fatalf("ApplyGroupPatch changed its input to %#v", in)
		}
		if err != nil {
			wantScimError(t, err, http.StatusBadRequest, "")
			if !reflect.DeepEqual(got, ops()) {
				t.Fatalf("ApplyGroupPatch returned %#v with an error, want the group as given", got)
			}
			return
		}
		checkGroup(t, got)
	})
}

// checkGroup checks what every Group that DecodeGroup or ApplyGroupPatch
// answers obeys: a name, and members with ids, each once.
func checkGroup(t *testing.T, g Group) {
	t.Helper()
	if strings.TrimSpace(g.DisplayName) == "" {
		t.Fatalf("%#v has no displayName", g)
	}
	seen := map[string]bool{}
	for _, m := range g.Members {
		if m.Value == "" || seen[m.Value] {
			t.Fatalf("%#v has an empty or repeated member", g)
		}
		seen[m.Value] = true
	}
}
