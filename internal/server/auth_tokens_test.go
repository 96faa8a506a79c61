package server

import (
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func TestCreateAndUseAPIToken(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		res := expect(t, a.call("POST", "/api/v1/tokens", ada.Access, map[string]string{"label": " laptop "}), 201)
		raw := res.Data()["raw_token"].(string)
		tok := res.Data()["token"].(map[string]any)
		if !strings.HasPrefix(raw, "pat_") || tok["label"] != "laptop" || tok["is_active"] != true || tok["token_prefix"] != raw[:12] || tok["id"] == "" {
			t.Fatalf("created %v", res.Data())
		}

		// Usable as a bearer credential, and its use is recorded.
		me := expect(t, a.call("GET", "/api/v1/users/me", raw, nil), 200)
		if me.Data()["id"] != ada.ID {
			t.Fatalf("me = %v", me.Data())
		}
		list := expect(t, a.call("GET", "/api/v1/tokens", raw, nil), 200).List()
		if len(list) != 1 {
			t.Fatalf("list = %v", list)
		}
		item := list[0]
		for _, f := range []string{"id", "label", "token_prefix", "is_active", "last_verified_at", "created_at"} {
			if _, ok := item[f]; !ok {
				t.Errorf("list item lacks %q: %v", f, item)
			}
		}
		if _, ok := item["raw_token"]; ok {
			t.Error("the raw token is listed again")
		}
		if v, _ := item["last_verified_at"].(string); v != a.clock.Now().Format("2006-01-02T15:04:05Z") {
			t.Errorf("last_verified_at = %v, want %v", item["last_verified_at"], a.clock.Now())
		}
		a.clock.Advance(2 * time.Minute)
		expect(t, a.call("GET", "/api/v1/users/me", raw, nil), 200)
		list = expect(t, a.call("GET", "/api/v1/tokens", ada.Access, nil), 200).List()
		if v := list[0]["last_verified_at"]; v != a.clock.Now().Format("2006-01-02T15:04:05Z") {
			t.Errorf("last_verified_at after a later use = %v", v)
		}
	})
}

func TestAPITokenLabelRules(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		for _, body := range []any{map[string]string{}, map[string]string{"label": "   "}, map[string]string{"label": strings.Repeat("x", 101)}} {
			res := expect(t, a.call("POST", "/api/v1/tokens", ada.Access, body), 400)
			if res.Fields()["label"] == nil {
				t.Errorf("%v: no label problem in %s", body, res.Raw)
			}
		}
		expect(t, a.call("POST", "/api/v1/tokens", ada.Access, map[string]string{"label": strings.Repeat("é", 100)}), 201)
		expect(t, a.call("POST", "/api/v1/tokens", "", map[string]string{"label": "x"}), 401)
		expect(t, a.call("GET", "/api/v1/tokens", "", nil), 401)
	})
}

func TestDeactivatedOrDeletedTokenFailsAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		id := a.apiToken(ada, "laptop")
		path := "/api/v1/tokens/" + id

		res := expect(t, a.call("PATCH", path, ada.Access, map[string]any{"is_active": false, "label": "old laptop"}), 200)
		if res.Data()["is_active"] != false || res.Data()["label"] != "old laptop" {
			t.Fatalf("patched = %v", res.Data())
		}
		expect(t, a.call("GET", "/api/v1/users/me", ada.Token, nil), 401)
		expect(t, a.call("PATCH", path, ada.Access, map[string]any{"is_active": true}), 200)
		expect(t, a.call("GET", "/api/v1/users/me", ada.Token, nil), 200)
		expect(t, a.call("PATCH", path, ada.Access, map[string]any{"label": ""}), 400)
		expect(t, a.call("PATCH", path, ada.Access, map[string]any{"is_active": "no"}), 400)

		expect(t, a.call("DELETE", path, ada.Access, nil), 204)
		expect(t, a.call("GET", "/api/v1/users/me", ada.Token, nil), 401)
		expect(t, a.call("DELETE", path, ada.Access, nil), 404)
	})
}

func TestAnotherUsersTokenIsNotFound(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, bob := a.register("Ada"), a.register("Bob")
		id := a.apiToken(ada, "laptop")
		expect(t, a.call("PATCH", "/api/v1/tokens/"+id, bob.Access, map[string]any{"is_active": false}), 404)
		expect(t, a.call("DELETE", "/api/v1/tokens/"+id, bob.Access, nil), 404)
		if list := expect(t, a.call("GET", "/api/v1/tokens", bob.Access, nil), 200).List(); len(list) != 0 {
			t.Fatalf("Bob sees %v", list)
		}
		expect(t, a.call("GET", "/api/v1/users/me", ada.Token, nil), 200)
	})
}

// TestAnAPITokenCannotMakeCredentials: what a token made would outlive the
// token's deletion, so only a signed-in person makes tokens.
func TestAnAPITokenCannotMakeCredentials(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		a.apiToken(ada, "script")
		// The refusal says why, and what to use instead.
		for path, body := range map[string]map[string]string{
			"/api/v1/tokens":         {"label": "child"},
			"/api/v1/webhook-tokens": {"label": "child", "sender": "inbound", "scope": "user"},
		} {
			msg := expect(t, a.call("POST", path, ada.Token, body), 403).ErrorMessage()
			for _, says := range []string{"An API token cannot create", "outlive the token's deletion", "Sign in", "access token"} {
				if !strings.Contains(msg, says) {
					t.Errorf("POST %s with an API token: %q does not say %q", path, msg, says)
				}
			}
		}
		if got := expect(t, a.call("GET", "/api/v1/tokens", ada.Access, nil), 200).List(); len(got) != 1 {
			t.Fatalf("%d API tokens, want only the one made by signing in", len(got))
		}
		if got := expect(t, a.call("GET", "/api/v1/webhook-tokens", ada.Access, nil), 200).List(); len(got) != 0 {
			t.Fatalf("%d webhook tokens were made with an API token", len(got))
		}
		// Listing, renaming and deleting stay open to a token.
		expect(t, a.call("GET", "/api/v1/webhook-tokens", ada.Token, nil), 200)
	})
}
