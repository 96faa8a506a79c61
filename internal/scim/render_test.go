package scim

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	t.Parallel()
	paris := time.FixedZone("CEST", 2*60*60)
	meta := Meta{
		Created:      time.Date(2026, 3, 1, 10, 0, 0, 0, paris),
		LastModified: time.Date(2026, 3, 2, 10, 0, 0, 5_000_000, paris),
		Location:     "https://perch.example.com/scim/v2/Users/u1",
	}
	tests := []struct {
		name string
		user User
		want map[string]any
	}{
		{"every attribute", ann(), map[string]any{
			"schemas":     []any{UserSchema},
			"id":          "u1",
			"externalId":  "ext-1",
			"userName":    "ann@x.y",
			"name":        map[string]any{"givenName": "Ann", "familyName": "Lee"},
			"displayName": "Ann Lee",
			"emails": []any{
				map[string]any{"value": "ann@x.y", "type": "work", "primary": true},
				map[string]any{"value": "ann@home.y", "type": "home"},
			},
			"active": true,
			"meta": map[string]any{
				"resourceType": "User",
				"created":      "2026-03-01T08:00:00Z",
				"lastModified": "2026-03-02T08:00:00.005Z",
				"location":     "https://perch.example.com/scim/v2/Users/u1",
				"version":      ETag(ann(), "u1"),
			},
		}},
		{"only a userName, inactive", User{UserName: "bo"}, map[string]any{
			"schemas":  []any{UserSchema},
			"id":       "u1",
			"userName": "bo",
			"active":   false,
			"meta": map[string]any{
				"resourceType": "User",
				"created":      "2026-03-01T08:00:00Z",
				"lastModified": "2026-03-02T08:00:00.005Z",
				"location":     "https://perch.example.com/scim/v2/Users/u1",
				"version":      ETag(User{UserName: "bo"}, "u1"),
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decoded(t, Render(tt.user, "u1", meta)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("JSON =\n%v, want\n%v", got, tt.want)
			}
		})
	}
}

func TestRenderCopiesEmails(t *testing.T) {
	t.Parallel()
	u := ann()
	r := Render(u, "u1", Meta{})
	r.Emails[0].Value = "changed@x.y"
	if u.Emails[0].Value != "ann@x.y" {
		t.Error("changing the resource's emails changed the user's")
	}
}

func TestETag(t *testing.T) {
	t.Parallel()
	base := ann()
	tag := ETag(base, "u1")
	if !regexp.MustCompile(`^W/"[0-9a-f]{16}"$`).MatchString(tag) {
		t.Fatalf("ETag = %s, want W/\"<16 hex digits>\"", tag)
	}
	if again := ETag(ann(), "u1"); again != tag {
		t.Fatalf("ETag of an equal user = %s, want %s", again, tag)
	}

	changes := []struct {
		name   string
		id     string
		change func(u *User)
	}{
		{"id", "u2", func(u *User) {}},
		{"userName", "u1", func(u *User) { u.UserName = "bo@x.y" }},
		{"externalId", "u1", func(u *User) { u.ExternalID = "ext-2" }},
		{"displayName", "u1", func(u *User) { u.DisplayName = "" }},
		{"name.formatted", "u1", func(u *User) { u.Name.Formatted = "Ann Lee" }},
		{"name.familyName", "u1", func(u *User) { u.Name.FamilyName = "Le" }},
		{"name.givenName", "u1", func(u *User) { u.Name.GivenName = "Anna" }},
		{"name.middleName", "u1", func(u *User) { u.Name.MiddleName = "M" }},
		{"name.honorificPrefix", "u1", func(u *User) { u.Name.HonorificPrefix = "Dr" }},
		{"name.honorificSuffix", "u1", func(u *User) { u.Name.HonorificSuffix = "III" }},
		{"text moved between parts", "u1", func(u *User) { u.Name.GivenName, u.Name.FamilyName = "AnnL", "ee" }},
		{"active", "u1", func(u *User) { u.Active = false }},
		{"an email's value", "u1", func(u *User) { u.Emails[1].Value = "ann@home.z" }},
		{"an email's type", "u1", func(u *User) { u.Emails[1].Type = "other" }},
		{"an email's primary", "u1", func(u *User) { u.Emails[0].Primary = false }},
		{"an email's display", "u1", func(u *User) { u.Emails[0].Display = "Ann" }},
		{"the emails' order", "u1", func(u *User) { u.Emails[0], u.Emails[1] = u.Emails[1], u.Emails[0] }},
		{"an email fewer", "u1", func(u *User) { u.Emails = u.Emails[:1] }},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			u := ann()
			c.change(&u)
			if got := ETag(u, c.id); got == tag {
				t.Errorf("ETag did not change: %s", got)
			}
		})
	}
}

func TestNewList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		total int
		start int
		items []Resource
		want  string
	}{
		{"nothing found", 0, 1, nil,
			`{"schemas":["` + ListSchema + `"],"totalResults":0,"startIndex":1,"itemsPerPage":0,"Resources":[]}`},
		{"an empty page past the end", 5, 11, []Resource{},
			`{"schemas":["` + ListSchema + `"],"totalResults":5,"startIndex":11,"itemsPerPage":0,"Resources":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(NewList(tt.total, tt.start, tt.items))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("JSON = %s, want %s", b, tt.want)
			}
		})
	}

	page := NewList(3, 2, []Resource{Render(ann(), "u1", Meta{}), Render(User{UserName: "bo"}, "u2", Meta{})})
	got := decoded(t, page)
	if got["itemsPerPage"] != 2.0 || got["totalResults"] != 3.0 || got["startIndex"] != 2.0 || len(got["Resources"].([]any)) != 2 {
		t.Errorf("page = %v, want 2 of 3 resources from the second", got)
	}
}
