package server

import (
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func TestRegister(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		res := expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]any{
			"name": "Ada Lovelace", "email": "Ada@Example.com", "password": goodPassword, "plan": "ignored",
		}), 201)
		d := res.Data()
		u := d["user"].(map[string]any)
		if u["email"] != "Ada@Example.com" || u["name"] != "Ada Lovelace" || u["org_role"] != "owner" || u["id"] == "" {
			t.Fatalf("user = %v", u)
		}
		if !strings.HasPrefix(d["access_token"].(string), perch.AccessTokenPrefix) || !strings.HasPrefix(d["refresh_token"].(string), perch.RefreshTokenPrefix) {
			t.Fatalf("tokens = %v", d)
		}
		if d["expires_in"] != 900.0 {
			t.Fatalf("expires_in = %v", d["expires_in"])
		}
		// The new account can be used at once.
		me := expect(t, a.call("GET", "/api/v1/users/me", d["access_token"].(string), nil), 200)
		if me.Data()["id"] != u["id"] {
			t.Fatalf("me = %v", me.Data())
		}
		org, err := s.Org(t.Context(), u["org_id"].(string))
		if err != nil || org.Name != "Ada Lovelace's organisation" || org.PlanStatus != perch.PlanTrialing {
			t.Fatalf("org = %+v, %v", org, err)
		}
		// The same address in another case is taken.
		expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": "Imposter", "email": "ada@EXAMPLE.com", "password": goodPassword}), 409)
	})
}

func TestRegisterValidation(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		cases := []struct {
			name        string
			body        map[string]string
			wantProblem map[string]string
		}{
			{"everything missing", map[string]string{}, map[string]string{"name": "is required", "email": "is required", "password": "must be at least 10 characters"}},
			{"short password", map[string]string{"name": "A", "email": "a@example.com", "password": "short"}, map[string]string{"password": "must be at least 10 characters"}},
			{"long password", map[string]string{"name": "A", "email": "a@example.com", "password": strings.Repeat("ab", 65)}, map[string]string{"password": "must be at most 128 characters"}},
			{"password is the address", map[string]string{"name": "A", "email": "alice@example.com", "password": "ALICE@example.com"}, map[string]string{"password": "must not be your e-mail address"}},
			{"one repeated character", map[string]string{"name": "A", "email": "a@example.com", "password": "aaaaaaaaaaaa"}, map[string]string{"password": "must not be one character repeated"}},
			{"bad address", map[string]string{"name": "A", "email": "not-an-address", "password": goodPassword}, map[string]string{"email": "must be a valid e-mail address"}},
			{"address with a display name", map[string]string{"name": "A", "email": "A <a@example.com>", "password": goodPassword}, map[string]string{"email": "must be a valid e-mail address"}},
			{"address without a domain dot", map[string]string{"name": "A", "email": "a@localhost", "password": goodPassword}, map[string]string{"email": "must be a valid e-mail address"}},
			{"long name", map[string]string{"name": strings.Repeat("n", 101), "email": "a@example.com", "password": goodPassword}, map[string]string{"name": "must be at most 100 characters"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				res := expect(t, a.call("POST", "/api/v1/auth/register", "", c.body), 422)
				got := res.Fields()
				if len(got) != len(c.wantProblem) {
					t.Fatalf("fields = %v, want %v", got, c.wantProblem)
				}
				for f, p := range c.wantProblem {
					if got[f] != p {
						t.Errorf("fields[%s] = %v, want %q", f, got[f], p)
					}
				}
			})
		}
	})
}

func TestLogin(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		res := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": "ADA@example.com", "password": goodPassword}), 200)
		if res.Data()["user"].(map[string]any)["id"] != ada.ID || res.Data()["access_token"] == ada.Access {
			t.Fatalf("login = %v", res.Data())
		}
		wrong := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": ada.Email, "password": "not the password"}), 401)
		unknown := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": "nobody@example.com", "password": "not the password"}), 401)
		if wrong.Raw != unknown.Raw {
			t.Fatalf("a wrong password and an unknown address answer differently:\n%s\n%s", wrong.Raw, unknown.Raw)
		}
		res = expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": ""}), 422)
		if res.Fields()["email"] != "is required" || res.Fields()["password"] != "is required" {
			t.Fatalf("fields = %v", res.Fields())
		}
	})
}

func TestRefreshRotatesAndReuseRevokes(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		res := expect(t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": ada.Refresh}), 200)
		access, refresh := res.Data()["access_token"].(string), res.Data()["refresh_token"].(string)
		if refresh == ada.Refresh || access == ada.Access {
			t.Fatal("refresh did not issue new tokens")
		}
		expect(t, a.call("GET", "/api/v1/users/me", access, nil), 200)

		// The old refresh token again: reuse. Every token of the sign-in dies.
		expect(t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": ada.Refresh}), 401)
		expect(t, a.call("GET", "/api/v1/users/me", access, nil), 401)
		expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 401)
		expect(t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": refresh}), 401)

		expect(t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": "prf_made_up"}), 401)
		// A missing refresh token is a field that is missing: 422 naming it,
		// as every validation problem is, on refresh and on sign-out alike.
		for _, path := range []string{"/api/v1/auth/refresh", "/api/v1/auth/logout"} {
			if res := expect(t, a.call("POST", path, "", map[string]string{}), 422); res.Fields()["refresh_token"] != "is required" {
				t.Errorf("%s without refresh_token: fields = %v", path, res.Fields())
			}
		}
	})
}

func TestAccessTokenExpiresAfterFifteenMinutes(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		a.clock.Advance(perch.AccessTokenTTL - 1)
		expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200)
		a.clock.Advance(1)
		expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 401)
		// The refresh token still works and yields a live access token.
		res := expect(t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": ada.Refresh}), 200)
		expect(t, a.call("GET", "/api/v1/users/me", res.Data()["access_token"].(string), nil), 200)
	})
}

func TestLogoutRevokesOneSignIn(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		other := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": ada.Email, "password": goodPassword}), 200).Data()
		res := expect(t, a.call("POST", "/api/v1/auth/logout", "", map[string]string{"refresh_token": ada.Refresh}), 204)
		if res.Raw != "" {
			t.Fatalf("204 with a body: %q", res.Raw)
		}
		expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 401)
		expect(t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": ada.Refresh}), 401)
		expect(t, a.call("GET", "/api/v1/users/me", other["access_token"].(string), nil), 200)
		// Again: harmless.
		expect(t, a.call("POST", "/api/v1/auth/logout", "", map[string]string{"refresh_token": ada.Refresh}), 204)
	})
}
