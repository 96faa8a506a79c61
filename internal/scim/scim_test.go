package scim

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// fixtureDir holds the requests Okta and Entra send, shared by every
// worktree and read in place, never copied into the repository.
const fixtureDir = "../../../shared/fixtures/scim"

// fixture reads one shared fixture, e.g. "okta/create_user.request.json",
// and skips the test when the shared fixtures are not on this machine.
func fixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, filepath.FromSlash(name)))
	if errors.Is(err, fs.ErrNotExist) {
		tb.Skipf("the shared SCIM fixtures are not at %s: %v", fixtureDir, err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// wantError checks that err is an *Error of this status and scimType, with a detail.
func wantError(tb testing.TB, err error, status int, scimType string) {
	tb.Helper()
	var e *Error
	if !errors.As(err, &e) {
		tb.Fatalf("error = %v (%T), want an *Error %d %s", err, err, status, scimType)
	}
	if e.Status != status || e.Type != scimType {
		tb.Fatalf("error = %d %q (%s), want %d %q", e.Status, e.Type, e.Detail, status, scimType)
	}
	if e.Detail == "" {
		tb.Fatal("error without a detail")
	}
}

// decoded marshals v and reads it back as generic JSON, to compare shapes.
func decoded(tb testing.TB, v any) map[string]any {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatalf("%s: %v", b, err)
	}
	return m
}

func TestErrorJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  *Error
		want map[string]any
	}{
		{"with a scimType", Errorf(http.StatusBadRequest, InvalidFilter, "bad %s", "filter"), map[string]any{
			"schemas": []any{ErrorSchema}, "status": "400", "scimType": "invalidFilter", "detail": "bad filter"}},
		{"without a scimType", Errorf(http.StatusNotFound, "", "User 7 not found."), map[string]any{
			"schemas": []any{ErrorSchema}, "status": "404", "detail": "User 7 not found."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decoded(t, tt.err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("JSON = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	err := Errorf(http.StatusConflict, Uniqueness, "%q is taken.", "a@b.c")
	if got, want := err.Error(), `scim 409 uniqueness: "a@b.c" is taken.`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
