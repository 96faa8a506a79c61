package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// setupCode makes a setup link as perch serve does at start-up and
// returns its code, failing unless the server needs an admin.
func (a *api) setupCode() string {
	a.t.Helper()
	link, expires, err := a.srv.SetupLink(a.t.Context())
	if err != nil {
		a.t.Fatal(err)
	}
	code, ok := strings.CutPrefix(link, "http://perch.test/setup#code="+perch.SetupCodePrefix)
	if !ok || len(code) < 26 { // 26 base32 characters are 130 bits
		a.t.Fatalf("setup link %q is not {base}/setup#code=pst_ and at least 128 random bits", link)
	}
	if want := a.clock.Now().Add(24 * time.Hour); !expires.Equal(want) {
		a.t.Fatalf("the link expires at %v, want %v", expires, want)
	}
	return perch.SetupCodePrefix + code
}

// adminNeeded is GET /api/v1/setup's answer to access.
func (a *api) adminNeeded(access string) bool {
	a.t.Helper()
	return expect(a.t, a.call("GET", "/api/v1/setup", access, nil), http.StatusOK).Data()["admin_needed"].(bool)
}

// redeem posts a setup code with the credential token.
func (a *api) redeem(token, code string) *response {
	a.t.Helper()
	return a.call("POST", "/api/v1/setup/admin", token, map[string]string{"code": code})
}

// refusedSetup checks the one refusal of a setup code that does not work.
func refusedSetup(t *testing.T, res *response) {
	t.Helper()
	expect(t, res, http.StatusForbidden)
	if msg := res.ErrorMessage(); !strings.Contains(msg, "used or has expired") || !strings.Contains(msg, "perch serve prints a new link") {
		t.Errorf("the refusal says %q; want it to say why and where a new link comes from", msg)
	}
}

func TestSetupLinkMakesTheFirstPlatformAdmin(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, bob := a.register("Ada"), a.register("Bob")
		if !a.adminNeeded(ada.Access) {
			t.Fatal("a new server says it needs no admin")
		}
		code := a.setupCode()
		refusedSetup(t, a.redeem(ada.Access, code+"x"))

		u := expect(t, a.redeem(ada.Access, code), http.StatusOK).Data()
		if u["id"] != ada.ID || u["is_admin"] != true {
			t.Fatalf("redeemed, the answer is %v; want Ada, a platform admin", u)
		}
		// The sign-in she has reaches the admin routes: no new one needed.
		expect(t, a.call("GET", "/api/v1/admin/users", ada.Access, nil), http.StatusOK)
		if a.adminNeeded(bob.Access) {
			t.Error("with Ada admin, the server still says it needs one")
		}
		g := a.grants(ada.ID)
		if len(g) != 1 || g[0].Actor.ID != ada.ID || g[0].Actor.Type != perch.ActorUser || g[0].Changes["via"] != "setup link" || g[0].OrgID != ada.OrgID {
			t.Fatalf("admin.granted entries = %+v; want one by Ada via the setup link", g)
		}

		// The link works once, and the next start makes none.
		refusedSetup(t, a.redeem(bob.Access, code))
		a.notAdmin(bob.Access)
		if link, _, err := a.srv.SetupLink(t.Context()); err != nil || link != "" {
			t.Fatalf("a start with an admin made the link %q (%v)", link, err)
		}
	})
}

func TestSetupLinkRefusals(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		res := expect(t, a.redeem(ada.Access, " "), http.StatusUnprocessableEntity)
		if res.Fields()["code"] == nil {
			t.Errorf("a missing code: %s; want a problem on code", res.Raw)
		}
		expect(t, a.call("POST", "/api/v1/setup/admin", ada.Access, `{"code": 7}`), http.StatusBadRequest)
		expect(t, a.redeem("", a.setupCode()), http.StatusUnauthorized)

		// A day later the link is dead; the next start prints a new one.
		code := a.setupCode()
		a.clock.Advance(24 * time.Hour)
		bea := a.register("Bea") // Ada's sign-in has expired meanwhile
		refusedSetup(t, a.redeem(bea.Access, code))
		a.notAdmin(bea.Access)

		// An address of PERCH_ADMIN_EMAILS, once proven, is an admin: the
		// links made before stop working, and no new one is made.
		code = a.setupCode()
		root := a.register("Root")
		a.verifyEmail(root)
		if a.adminNeeded(bea.Access) {
			t.Error("with a listed admin, the server still says it needs one")
		}
		refusedSetup(t, a.redeem(bea.Access, code))
		if link, _, err := a.srv.SetupLink(t.Context()); err != nil || link != "" {
			t.Fatalf("a start with a listed admin made the link %q (%v)", link, err)
		}
	})
}

// An API token is the account's own credential: it may redeem a link (the
// code is the secret that matters).
func TestSetupLinkTakesAnAPIToken(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		a.apiToken(ada, "setup script")
		expect(t, a.redeem(ada.Token, a.setupCode()), http.StatusOK)
		expect(t, a.call("GET", "/api/v1/admin/users", ada.Token, nil), http.StatusOK)
	})
}

func TestSetupLinkIsLimitedPerAddress(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, func(o *Options) { o.Limits.Auth = perch.Limit{Count: 2, Period: 15 * time.Minute} })
		ada := a.register("Ada")
		for range 2 {
			refusedSetup(t, a.redeem(ada.Access, "pst_guess"))
		}
		expect(t, a.redeem(ada.Access, "pst_guess"), http.StatusTooManyRequests)
		// Another address has its own allowance.
		expect(t, a.call("POST", "/api/v1/setup/admin", ada.Access, map[string]string{"code": "pst_guess"}, "RemoteAddr", "198.51.100.7:1234"), http.StatusForbidden)
	})
}
