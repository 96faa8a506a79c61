package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/wsloop"
)

// signIn starts another sign-in of acc and returns its tokens.
func (a *api) signIn(acc *account) (access, refresh string) {
	a.t.Helper()
	d := expect(a.t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": acc.Email, "password": goodPassword}), 200).Data()
	return d["access_token"].(string), d["refresh_token"].(string)
}

// stillLive checks that each connection still receives the user's
// notifications, by posting one through userToken.
func (a *api) stillLive(userToken, title string, conns ...*wsConn) {
	a.t.Helper()
	a.post(userToken, title)
	for _, c := range conns {
		c.until(title)
	}
}

// TestRevokingACredentialClosesItsSockets revokes a credential in each way
// there is and checks that exactly the sockets it opened end, at once, with
// 1008, while the user's other sockets keep receiving.
func TestRevokingACredentialClosesItsSockets(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		revoke func(a *api, acc *account, tokenID, access, refresh string)
		ends   string // "signin": the second sign-in's socket; "signins": both sign-ins'; "token": the API token's
	}{
		{"logout", func(a *api, _ *account, _, _, refresh string) {
			expect(a.t, a.call("POST", "/api/v1/auth/logout", "", map[string]string{"refresh_token": refresh}), 204)
		}, "signin"},
		{"refresh token reused", func(a *api, _ *account, _, _, refresh string) {
			expect(a.t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": refresh}), 200)
			expect(a.t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": refresh}), 401)
		}, "signin"},
		{"password changed from another sign-in", func(a *api, acc *account, _, _, _ string) {
			expect(a.t, a.call("PATCH", "/api/v1/users/me", acc.Access, map[string]string{
				"current_password": goodPassword, "password": "a new password 2026"}), 200)
		}, "signin"},
		{"password reset", func(a *api, acc *account, _, _, _ string) {
			expect(a.t, a.call("POST", "/api/v1/auth/forgot-password", "", map[string]string{"email": acc.Email}), 202)
			token := a.mailedToken(acc.Email, "/reset-password")
			expect(a.t, a.call("POST", "/api/v1/auth/reset-password", "", map[string]string{"token": token, "password": "a new password 2026"}), 204)
		}, "signins"},
		{"API token deleted", func(a *api, acc *account, id, _, _ string) {
			expect(a.t, a.call("DELETE", "/api/v1/tokens/"+id, acc.Access, nil), 204)
		}, "token"},
		{"API token deactivated", func(a *api, acc *account, id, _, _ string) {
			expect(a.t, a.call("PATCH", "/api/v1/tokens/"+id, acc.Access, map[string]bool{"is_active": false}), 200)
		}, "token"},
	}
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				a := newAPI(t, s)
				ts := a.live()
				ada := a.register(fmt.Sprintf("Ada%d", i))
				tokenID := a.apiToken(ada, "script")
				access, refresh := a.signIn(ada)
				hook := a.webhookToken(ada, "user", "")

				first := dial(t, ts, ada.Access, "")
				second := dial(t, ts, access, "")
				script := dial(t, ts, ada.Token, "")
				for _, conn := range []*wsConn{first, second, script} {
					conn.ready()
				}
				c.revoke(a, ada, tokenID, access, refresh)

				ended, kept := []*wsConn{second}, []*wsConn{first, script}
				switch c.ends {
				case "signins":
					ended, kept = []*wsConn{first, second}, []*wsConn{script}
				case "token":
					ended, kept = []*wsConn{script}, []*wsConn{first, second}
				}
				for _, conn := range ended {
					if got := conn.closeStatus(); got != websocket.StatusPolicyViolation {
						t.Fatalf("the revoked credential's socket closed with %v, want %v", got, websocket.StatusPolicyViolation)
					}
				}
				a.stillLive(hook, "after the revocation", kept...)
				expect(t, a.call("GET", "/ws", map[bool]string{true: ada.Token, false: access}[c.ends == "token"], nil), 401)
			})
		}
	})
}

// TestRevocationReachesEveryInstance connects to one instance and revokes on
// another that shares the store and the fan-out.
func TestRevocationReachesEveryInstance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		shared := fanout.NewLocal()
		useShared := func(o *Options) { o.Fanout, o.Hub = shared, hub.New() }
		here := newAPI(t, s, useShared)
		there := newAPI(t, s, useShared)
		ts := here.live()
		ada := here.register("Ada")
		id := here.apiToken(ada, "script")
		conn := dial(t, ts, ada.Token, "")
		conn.ready()
		expect(t, there.call("DELETE", "/api/v1/tokens/"+id, ada.Access, nil), 204)
		if got := conn.closeStatus(); got != websocket.StatusPolicyViolation {
			t.Fatalf("closed with %v, want %v", got, websocket.StatusPolicyViolation)
		}
	})
}

// TestSocketEndsWhenItsAccessTokenExpires: a socket opened with a
// short-lived access token lasts no longer than the token; one opened with
// an API token is not bound to the clock.
func TestSocketEndsWhenItsAccessTokenExpires(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ts := a.live()
	ada := a.register("Ada")
	a.apiToken(ada, "script")
	hook := a.webhookToken(ada, "user", "")
	a.clock.Advance(perch.AccessTokenTTL - 300*time.Millisecond) // the token has 300 ms to live
	short := dial(t, ts, ada.Access, "")
	script := dial(t, ts, ada.Token, "")
	short.ready()
	script.ready()
	// The socket's timer looks at the server's clock when the token's last
	// 300 ms have passed; move the clock past the expiry.
	a.clock.Advance(time.Second)
	if got := short.closeStatus(); got != wsloop.StatusTokenExpired {
		t.Fatalf("closed with %v, want %v", got, wsloop.StatusTokenExpired)
	}
	a.stillLive(hook, "later", script)
}
