package server

import (
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func TestMeNeedsACredential(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		for _, auth := range []string{"", "Basic abc", "Bearer", "Bearer nonsense", "Bearer pat_unknown", "Bearer pac_unknown"} {
			res := expect(t, a.call("GET", "/api/v1/users/me", "", nil, "Authorization", auth), 401)
			if res.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%q: 401 without WWW-Authenticate", auth)
			}
		}
	})
}

func TestUpdateMe(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		res := expect(t, a.call("PATCH", "/api/v1/users/me", ada.Access, map[string]string{"name": "  Countess of Lovelace "}), 200)
		if res.Data()["name"] != "Countess of Lovelace" {
			t.Fatalf("name = %v", res.Data()["name"])
		}
		res = expect(t, a.call("PATCH", "/api/v1/users/me", ada.Access, map[string]string{"name": ""}), 422)
		if res.Fields()["name"] != "is required" {
			t.Fatalf("fields = %v", res.Fields())
		}
		// Nothing to change: the user as they are.
		res = expect(t, a.call("PATCH", "/api/v1/users/me", ada.Access, map[string]string{}), 200)
		if res.Data()["name"] != "Countess of Lovelace" {
			t.Fatalf("name = %v", res.Data()["name"])
		}
	})
}

func TestPasswordChangeNeedsCurrentAndSignsOutOthers(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		phone := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": ada.Email, "password": goodPassword}), 200).Data()
		a.apiToken(ada, "ci")

		res := expect(t, a.call("PATCH", "/api/v1/users/me", ada.Access, map[string]string{"password": "a brand new secret"}), 422)
		if res.Fields()["current_password"] != "is required to change the password or e-mail address" {
			t.Fatalf("fields = %v", res.Fields())
		}
		res = expect(t, a.call("PATCH", "/api/v1/users/me", ada.Access, map[string]string{"password": "short", "current_password": "wrong one!"}), 422)
		if res.Fields()["current_password"] != "is incorrect" || res.Fields()["password"] != "must be at least 10 characters" {
			t.Fatalf("fields = %v", res.Fields())
		}
		expect(t, a.call("PATCH", "/api/v1/users/me", ada.Access, map[string]string{"password": "a brand new secret", "current_password": goodPassword}), 200)

		expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200) // the session that changed it
		expect(t, a.call("GET", "/api/v1/users/me", phone["access_token"].(string), nil), 401)
		expect(t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": phone["refresh_token"].(string)}), 401)
		expect(t, a.call("GET", "/api/v1/users/me", ada.Token, nil), 200) // API tokens are not sign-ins
		expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": ada.Email, "password": goodPassword}), 401)
		expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": ada.Email, "password": "a brand new secret"}), 200)
	})
}

func TestFeatures(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		res := expect(t, a.call("GET", "/api/v1/users/me/features", ada.Access, nil), 200)
		// Workflows and the marketplace are built and on; the digest is not yet.
		want := map[string]any{"workflows": true, "marketplace": true, "digest_email": false}
		if len(res.Data()) != len(want) {
			t.Fatalf("features = %v", res.Data())
		}
		for k, v := range want {
			if res.Data()[k] != v {
				t.Errorf("features[%s] = %v, want %v", k, res.Data()[k], v)
			}
		}
		expect(t, a.call("GET", "/api/v1/users/me/features", "", nil), 401)
	})
}

// TestAdminByAddressNeedsTheAddressVerified: whoever registers an address
// listed in PERCH_ADMIN_EMAILS first is not admin until the mail to it is
// answered.
func TestAdminByAddressNeedsTheAddressVerified(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.register("Root") // root@example.com is listed
		me := expect(t, a.call("GET", "/api/v1/users/me", root.Access, nil), 200).Data()
		if me["is_admin"] != false {
			t.Fatalf("an unverified listed address is admin: %v", me)
		}
		expect(t, a.call("POST", "/api/v1/admin/announcements", root.Access, map[string]string{"title": "Hi", "body": "x"}), 403)
		a.verifyEmail(root)
		if me := expect(t, a.call("GET", "/api/v1/users/me", root.Access, nil), 200).Data(); me["is_admin"] != true {
			t.Fatalf("a verified listed address is not admin: %v", me)
		}
		expect(t, a.call("POST", "/api/v1/admin/announcements", root.Access, map[string]string{"title": "Hi", "body": "x"}), 201)
	})
}
