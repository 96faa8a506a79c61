package server

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestAPITokenLimitsAreAnswered: expires_at and scopes are kept as made and
// answered in the token object of create, list and patch; a token made
// without them answers null for both. A scope brings the ones below it.
func TestAPITokenLimitsAreAnswered(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root")
		ada := a.register("Ada")
		ends := a.clock.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
		res := expect(t, a.call("POST", "/api/v1/tokens", ada.Access, map[string]any{
			"label": "CI", "expires_at": ends.In(time.FixedZone("CET", 3600)).Format(time.RFC3339), "scopes": []string{"send"}}), 201)
		made := res.Data()["token"].(map[string]any)
		want := map[string]any{"expires_at": ends.UTC().Format(time.RFC3339), "scopes": []any{"read", "send"}}
		for f, v := range want {
			if !reflect.DeepEqual(made[f], v) {
				t.Errorf("made: %s = %#v, want %#v", f, made[f], v)
			}
		}
		plain := expect(t, a.call("POST", "/api/v1/tokens", ada.Access, map[string]any{"label": "laptop", "expires_at": nil, "scopes": nil}), 201).Data()["token"].(map[string]any)
		for _, f := range []string{"expires_at", "scopes"} {
			if v, ok := plain[f]; !ok || v != nil {
				t.Errorf("a token without limits: %s = %#v (present %v), want null", f, v, ok)
			}
		}
		list := expect(t, a.call("GET", "/api/v1/tokens", ada.Access, nil), 200).List()
		for _, item := range list {
			if item["id"] == made["id"] {
				for f, v := range want {
					if !reflect.DeepEqual(item[f], v) {
						t.Errorf("listed: %s = %#v, want %#v", f, item[f], v)
					}
				}
			}
		}
		renamed := expect(t, a.call("PATCH", "/api/v1/tokens/"+made["id"].(string), ada.Access, map[string]string{"label": "CI 2"}), 200).Data()
		for f, v := range want {
			if !reflect.DeepEqual(renamed[f], v) {
				t.Errorf("patched: %s = %#v, want %#v", f, renamed[f], v)
			}
		}
		e := findAudit(t, a.auditEntries(root), perch.AuditAPITokenCreated, made["id"].(string))
		changes := e["changes"].(map[string]any)
		if changes["expires_at"] != want["expires_at"] || !reflect.DeepEqual(changes["scopes"], want["scopes"]) {
			t.Errorf("audited changes %v, want the expiry and scopes", changes)
		}
	})
}

// TestAPITokenLimitsValidation: expires_at must be RFC 3339 and in the
// future, scopes known, once each, and at least one; every problem is in
// fields at once (422). The label stays 400, as the spec has it.
func TestAPITokenLimitsValidation(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		past := a.clock.Now().Add(-time.Minute).Format(time.RFC3339)
		for _, c := range []struct {
			body   map[string]any
			status int
			fields []string
		}{
			{map[string]any{"label": "x", "expires_at": past}, 422, []string{"expires_at"}},
			{map[string]any{"label": "x", "expires_at": a.clock.Now().Format(time.RFC3339)}, 422, []string{"expires_at"}},
			{map[string]any{"label": "x", "expires_at": "next week"}, 422, []string{"expires_at"}},
			{map[string]any{"label": "x", "expires_at": "2027-01-01"}, 422, []string{"expires_at"}},
			{map[string]any{"label": "x", "expires_at": 1798761600}, 400, []string{"expires_at"}},
			{map[string]any{"label": "x", "scopes": []string{"write"}}, 422, []string{"scopes"}},
			{map[string]any{"label": "x", "scopes": []string{"read", "read"}}, 422, []string{"scopes"}},
			{map[string]any{"label": "x", "scopes": []string{}}, 422, []string{"scopes"}},
			{map[string]any{"label": "x", "scopes": "read"}, 400, []string{"scopes"}},
			{map[string]any{"label": "x", "expires_at": past, "scopes": []string{"admin"}}, 422, []string{"expires_at", "scopes"}},
			{map[string]any{"label": "", "scopes": []string{"read"}}, 400, []string{"label"}},
		} {
			res := expect(t, a.call("POST", "/api/v1/tokens", ada.Access, c.body), c.status)
			fields := res.Fields()
			for _, f := range c.fields {
				if _, ok := fields[f]; !ok {
					t.Errorf("%v: fields %v lack %s", c.body, fields, f)
				}
			}
			if len(fields) != len(c.fields) {
				t.Errorf("%v: fields %v, want %v", c.body, fields, c.fields)
			}
		}
		if n := len(expect(t, a.call("GET", "/api/v1/tokens", ada.Access, nil), 200).List()); n != 0 {
			t.Errorf("%d tokens made by refused requests", n)
		}
	})
}

// TestExpiredAPITokenIsRefused: a token works until its expires_at and is
// 401 from then on, on the API and at the WebSocket's handshake, with a
// message that says it expired; reactivating it changes nothing.
func TestExpiredAPITokenIsRefused(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		res := expect(t, a.call("POST", "/api/v1/tokens", ada.Access, map[string]any{
			"label": "CI", "expires_at": a.clock.Now().Add(time.Hour).Format(time.RFC3339)}), 201)
		raw, id := res.Data()["raw_token"].(string), res.Data()["token"].(map[string]any)["id"].(string)
		expect(t, a.call("GET", "/api/v1/users/me", raw, nil), 200)
		a.clock.Advance(time.Hour)
		for _, path := range []string{"/api/v1/users/me", "/api/v1/notifications", "/ws"} {
			got := expect(t, a.call("GET", path, raw, nil), 401)
			if msg := got.ErrorMessage(); !strings.Contains(msg, "expired") {
				t.Errorf("GET %s: %q does not say the token expired", path, msg)
			}
		}
		access, _ := a.signIn(ada) // the first sign-in's access token has expired too
		expect(t, a.call("PATCH", "/api/v1/tokens/"+id, access, map[string]bool{"is_active": true}), 200)
		expect(t, a.call("GET", "/api/v1/users/me", raw, nil), 401)
		if _, res, err := websocket.Dial(t.Context(), "ws"+ts.URL[len("http"):]+"/ws", &websocket.DialOptions{
			HTTPHeader: map[string][]string{"Authorization": {"Bearer " + raw}}}); err == nil || res == nil || res.StatusCode != 401 {
			t.Errorf("handshake with an expired token: %v, %v; want 401", res, err)
		}
	})
}

// TestSocketEndsWhenItsAPITokenExpires: a socket opened with an API token
// that expires ends at its expiry with 1008 (nothing renews an API token),
// while one opened with a token without expiry stays.
func TestSocketEndsWhenItsAPITokenExpires(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ts := a.live()
	ada := a.register("Ada")
	a.apiToken(ada, "script")
	hook := a.webhookToken(ada, "user", "")
	ends := a.clock.Now().Add(300 * time.Millisecond) // the token has 300 ms to live
	short := expect(t, a.call("POST", "/api/v1/tokens", ada.Access, map[string]any{
		"label": "short", "expires_at": ends.Format(time.RFC3339Nano), "scopes": []string{"read"}}), 201).Data()["raw_token"].(string)
	brief := dial(t, ts, short, "")
	script := dial(t, ts, ada.Token, "")
	brief.ready()
	script.ready()
	// The socket's timer looks at the server's clock when the token's last
	// 300 ms have passed; move the clock past the expiry.
	a.clock.Advance(time.Second)
	if got := brief.closeStatus(); got != websocket.StatusPolicyViolation {
		t.Fatalf("closed with %v, want %v", got, websocket.StatusPolicyViolation)
	}
	a.stillLive(hook, "later", script)
}

// TestScopedTokenRefusalNamesTheScope: a read token reads, may open the
// live feed and mark notifications read, and is refused a change with a
// 403 that names the scope needed; a manage token makes the change; no
// token makes credentials, whatever its scopes.
func TestScopedTokenRefusalNamesTheScope(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		token := func(scopes ...string) string {
			return expect(t, a.call("POST", "/api/v1/tokens", ada.Access, map[string]any{"label": "t", "scopes": scopes}), 201).Data()["raw_token"].(string)
		}
		read, manage := token("read"), token("manage")
		expect(t, a.call("GET", "/api/v1/org", read, nil), 200)
		expect(t, a.call("POST", "/api/v1/notifications/read", read, map[string]bool{"all": true}), 200)
		dial(t, ts, read, "").ready()
		res := expect(t, a.call("PATCH", "/api/v1/org", read, map[string]string{"name": "Renamed"}), 403)
		if want := "This API token's scopes (read) do not allow this; it needs manage."; res.ErrorMessage() != want {
			t.Errorf("refusal %q, want %q", res.ErrorMessage(), want)
		}
		expect(t, a.call("PATCH", "/api/v1/org", manage, map[string]string{"name": "Renamed"}), 200)
		res = expect(t, a.call("POST", "/api/v1/tokens", manage, map[string]string{"label": "more"}), 403)
		if !strings.Contains(res.ErrorMessage(), "cannot create API tokens") {
			t.Errorf("a manage token making a token: %q", res.ErrorMessage())
		}
	})
}
