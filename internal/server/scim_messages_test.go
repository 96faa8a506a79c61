package server

import (
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/scim"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestSCIMErrorDetailIsDeterministic: a validation error of several fields
// becomes one SCIM detail naming every field in sorted order, the same on
// every call. Taking the first field of a map range, as the translation once
// did, gave a different detail from one call to the next.
func TestSCIMErrorDetailIsDeterministic(t *testing.T) {
	err := perch.Problems{"name": "is required", "email": "is not an e-mail address", "active": "must be true or false", "userName": "is too long"}.Err()
	const want = "active must be true or false. email is not an e-mail address. name is required. userName is too long."
	for range 20 {
		got := scimErrorOf(err)
		if got.Status != 400 || got.Type != scim.InvalidValue || got.Detail != want {
			t.Fatalf("scimErrorOf = %d %q %q, want 400 %q %q", got.Status, got.Type, got.Detail, scim.InvalidValue, want)
		}
	}
}

// TestSCIMRefusalDetailIsTheSameEveryTime: a User with several bad
// attributes is refused with the same detail every time it is sent, naming
// the first bad attribute in the User schema's order.
func TestSCIMRefusalDetailIsTheSameEveryTime(t *testing.T) {
	a := newAPI(t, storetest.New(t, store.SQLite))
	owner := a.register("Olive Owner")
	idp := a.scimClient(owner, "test", "example.com")
	user := newUser("cy@example.com", "externalId", "ext\x00cy", "displayName", "C\x00y",
		"name", map[string]any{"givenName": "G\x00", "familyName": "F\x00", "honorificSuffix": "S\x00"})
	var first string
	for i := range 20 {
		res := idp.do("POST", "/scim/v2/Users", user).want(t, 400, scim.InvalidValue)
		detail, _ := res.Body["detail"].(string)
		if i == 0 {
			first = detail
			if !strings.HasPrefix(detail, "externalId ") {
				t.Fatalf("detail %q does not name externalId, the first bad attribute in schema order", detail)
			}
		}
		if detail != first {
			t.Fatalf("try %d: detail %q, want %q as on the first try", i+1, detail, first)
		}
	}
}
