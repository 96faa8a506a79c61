package server

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

var whTokenKeys = []string{"id", "label", "sender", "scope", "team_id", "token_prefix", "created_at", "last_used_at"}

func whKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestWebhookTokenCreateAndList(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		team := a.whTeam(ada, "Ops")
		wantKeys := slices.Sorted(slices.Values(whTokenKeys))
		var made []map[string]any // in creation order
		raws := map[string]string{}
		for _, sender := range []string{"incidents", "code-host", "monitoring", "inbound"} {
			for _, scope := range []string{"user", "team", "org"} {
				a.clock.Advance(time.Second)
				body := map[string]string{"label": sender + "/" + scope, "sender": sender, "scope": scope}
				if scope == "team" {
					body["team_id"] = team
				}
				d := expect(t, a.call("POST", "/api/v1/webhook-tokens", ada.Access, body), 201).Data()
				tok, _ := d["token"].(map[string]any)
				raw, _ := d["raw_token"].(string)
				if got := whKeys(tok); !slices.Equal(got, wantKeys) {
					t.Fatalf("token keys = %v, want %v", got, wantKeys)
				}
				var wantTeam any
				if scope == "team" {
					wantTeam = team
				}
				if tok["label"] != sender+"/"+scope || tok["sender"] != sender || tok["scope"] != scope || tok["team_id"] != wantTeam || tok["last_used_at"] != nil {
					t.Errorf("token = %v", tok)
				}
				if !strings.HasPrefix(raw, "whk_") || len(raw) < 24 {
					t.Errorf("raw_token = %q", raw)
				}
				if p, _ := tok["token_prefix"].(string); !strings.HasPrefix(p, "whk_") || !strings.HasPrefix(raw, p) || p == raw {
					t.Errorf("token_prefix %q does not abbreviate %q", p, raw)
				}
				if want := "http://perch.test/webhooks/" + sender + "?token=" + raw; d["url"] != want {
					t.Errorf("url = %v, want %s", d["url"], want)
				}
				created, err := time.Parse(time.RFC3339Nano, tok["created_at"].(string))
				if err != nil || !strings.HasSuffix(tok["created_at"].(string), "Z") || !created.Equal(a.clock.Now()) {
					t.Errorf("created_at = %v, want %v in UTC", tok["created_at"], a.clock.Now())
				}
				made = append(made, tok)
				raws[tok["id"].(string)] = raw
			}
		}

		res := expect(t, a.call("GET", "/api/v1/webhook-tokens", ada.Access, nil), 200)
		list := res.List()
		if len(list) != len(made) {
			t.Fatalf("listed %d tokens, want %d", len(list), len(made))
		}
		for i, tok := range list {
			want := made[len(made)-1-i] // newest first
			if tok["id"] != want["id"] || tok["label"] != want["label"] {
				t.Fatalf("list[%d] = %v, want %v", i, tok, want)
			}
			if got := whKeys(tok); !slices.Equal(got, wantKeys) {
				t.Fatalf("listed token keys = %v: no raw token may be shown again", got)
			}
			if strings.Contains(res.Raw, raws[tok["id"].(string)]) {
				t.Fatal("the list shows a raw token")
			}
		}
		// Another user sees none of them.
		bob := a.register("Bob")
		if n := len(expect(t, a.call("GET", "/api/v1/webhook-tokens", bob.Access, nil), 200).List()); n != 0 {
			t.Fatalf("Bob lists %d tokens", n)
		}
	})
}

func TestWebhookTokenDeleteStopsTheReceiverAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		eve := a.register("Eve")
		id, raw := a.whToken(ada, "inbound", "user", "")
		a.whOK("/webhooks/inbound", raw, `{"title":"before"}`)

		expect(t, a.call("DELETE", "/api/v1/webhook-tokens/"+id, eve.Access, nil), 404) // not Eve's
		a.whOK("/webhooks/inbound", raw, `{"title":"still works"}`)

		res := expect(t, a.call("DELETE", "/api/v1/webhook-tokens/"+id, ada.Access, nil), 204)
		if res.Raw != "" {
			t.Fatalf("204 with a body: %q", res.Raw)
		}
		expect(t, a.whDeliver("/webhooks/inbound", raw, `{"title":"after"}`), 401)
		expect(t, a.call("DELETE", "/api/v1/webhook-tokens/"+id, ada.Access, nil), 404)
		if n := len(expect(t, a.call("GET", "/api/v1/webhook-tokens", ada.Access, nil), 200).List()); n != 0 {
			t.Fatalf("%d tokens left", n)
		}
		if n := len(a.whHistory(ada, "")); n != 2 {
			t.Fatalf("%d notifications, want 2", n)
		}
	})
}

func TestWebhookTokenValidation(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		cases := []struct {
			name   string
			body   map[string]string
			status int
			field  string // in error.fields
		}{
			{"missing label", map[string]string{"sender": "inbound"}, 400, "label"},
			{"blank label", map[string]string{"label": "   ", "sender": "inbound"}, 400, "label"},
			{"label too long", map[string]string{"label": strings.Repeat("l", 101), "sender": "inbound"}, 400, "label"},
			{"label of 100", map[string]string{"label": strings.Repeat("é", 100), "sender": "inbound"}, 201, ""},
			{"missing sender", map[string]string{"label": "x"}, 422, "sender"},
			{"unknown sender", map[string]string{"label": "x", "sender": "slack"}, 422, "sender"},
			{"alias is not a sender", map[string]string{"label": "x", "sender": "github"}, 422, "sender"},
			{"unknown scope", map[string]string{"label": "x", "sender": "inbound", "scope": "world"}, 422, "scope"},
			{"team scope without team_id", map[string]string{"label": "x", "sender": "inbound", "scope": "team"}, 422, "team_id"},
			{"scope defaults to user", map[string]string{"label": "x", "sender": "inbound"}, 201, ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				res := expect(t, a.call("POST", "/api/v1/webhook-tokens", ada.Access, c.body), c.status)
				if c.field != "" {
					if _, ok := res.Fields()[c.field]; !ok {
						t.Fatalf("fields = %v, want %s", res.Fields(), c.field)
					}
				}
				if c.status == 201 && res.Data()["token"].(map[string]any)["scope"] != "user" {
					t.Fatalf("token = %v", res.Data()["token"])
				}
			})
		}
		expect(t, a.call("POST", "/api/v1/webhook-tokens", "", map[string]string{"label": "x", "sender": "inbound"}), 401)
	})
}

func TestWebhookTokenScopePermissions(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada") // owner
		bob := a.invite(ada, "Bob", "member")
		carol := a.invite(ada, "Carol", "admin")
		dan := a.invite(ada, "Dan", "member")
		eve := a.register("Eve") // another organisation
		ops := a.whTeam(ada, "Ops", dan)
		evesTeam := a.whTeam(eve, "Eve's team")
		cases := []struct {
			name          string
			by            *account
			scope, teamID string
			status        int
		}{
			{"org by a member", bob, "org", "", 403},
			{"org by an admin", carol, "org", "", 201},
			{"org by the owner", ada, "org", "", 201},
			{"team by a member not in it", bob, "team", ops, 403},
			{"team by a member of it", dan, "team", ops, 201},
			{"team by an admin not in it", carol, "team", ops, 201},
			{"team by the owner not in it", ada, "team", ops, 201},
			{"team of another organisation", ada, "team", evesTeam, 404},
			{"team of another organisation, by a member", bob, "team", evesTeam, 404},
			{"no such team", carol, "team", "nope", 404},
			{"user by a member", bob, "user", "", 201},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				body := map[string]string{"label": c.name, "sender": "inbound", "scope": c.scope}
				if c.teamID != "" {
					body["team_id"] = c.teamID
				}
				expect(t, a.call("POST", "/api/v1/webhook-tokens", c.by.Access, body), c.status)
			})
		}
	})
}

func TestWebhookTokenScopeDecidesWhoSeesTheNotification(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		dan := a.invite(ada, "Dan", "member")
		eve := a.register("Eve")
		ops := a.whTeam(ada, "Ops", dan)
		everyone := []*account{ada, bob, dan, eve}
		cases := []struct {
			scope, teamID string
			scopeID       string
			sees          []*account
		}{
			{"user", "", ada.ID, []*account{ada}},
			{"team", ops, ops, []*account{dan}},
			{"org", "", ada.OrgID, []*account{ada, bob, dan}},
		}
		for _, c := range cases {
			_, raw := a.whToken(ada, "inbound", c.scope, c.teamID)
			id := a.whOK("/webhooks/inbound", raw, `{"title":"for `+c.scope+`"}`).IDs[0]
			for _, acc := range everyone {
				var got *whNote
				for _, n := range a.whHistory(acc, "") {
					if n.ID == id {
						got = &n
					}
				}
				if want := slices.Contains(c.sees, acc); (got != nil) != want {
					t.Errorf("%s token: %s sees it = %v, want %v", c.scope, acc.Email, got != nil, want)
				}
				if got != nil && (got.Scope.Type != c.scope || got.Scope.ID != c.scopeID) {
					t.Errorf("%s token: scope = %+v, want %s/%s", c.scope, got.Scope, c.scope, c.scopeID)
				}
			}
		}
	})
}

func TestWebhookTokenLastUsedAt(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		used, raw := a.whToken(ada, "inbound", "user", "")
		idle, _ := a.whToken(ada, "inbound", "user", "")
		a.clock.Advance(10 * time.Minute) // within the access token's life
		a.whOK("/webhooks/inbound", raw, `{"title":"x"}`)
		a.srv.touches.wait() // uses are written in the background
		for _, tok := range expect(t, a.call("GET", "/api/v1/webhook-tokens", ada.Access, nil), 200).List() {
			switch tok["id"] {
			case idle:
				if tok["last_used_at"] != nil {
					t.Errorf("unused token has last_used_at %v", tok["last_used_at"])
				}
			case used:
				v, _ := tok["last_used_at"].(string)
				at, err := time.Parse(time.RFC3339Nano, v)
				if err != nil || !strings.HasSuffix(v, "Z") || !at.Equal(a.clock.Now()) {
					t.Errorf("last_used_at = %v, want %v", tok["last_used_at"], a.clock.Now())
				}
			}
		}
		// Use is recorded at most once a minute.
		lastUsed := func() string {
			a.srv.touches.wait()
			for _, tok := range expect(t, a.call("GET", "/api/v1/webhook-tokens", ada.Access, nil), 200).List() {
				if tok["id"] == used {
					v, _ := tok["last_used_at"].(string)
					return v
				}
			}
			t.Fatal("token not listed")
			return ""
		}
		first := lastUsed()
		a.clock.Advance(30 * time.Second)
		a.whOK("/webhooks/inbound", raw, `{"title":"y"}`)
		if got := lastUsed(); got != first {
			t.Errorf("last_used_at moved to %s within the minute", got)
		}
		a.clock.Advance(31 * time.Second)
		a.whOK("/webhooks/inbound", raw, `{"title":"z"}`)
		if got, want := lastUsed(), a.clock.Now().Format(time.RFC3339Nano); got != want {
			t.Errorf("last_used_at = %s after a minute, want %s", got, want)
		}
	})
}

// A team or organisation token works while its creator could still make it.
func TestWebhookTokenFollowsItsCreatorsGrants(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		carol := a.invite(ada, "Carol", "admin")
		dan := a.invite(ada, "Dan", "member")
		ops := a.whTeam(ada, "Ops", dan)
		gone := a.whTeam(ada, "Gone")
		_, dans := a.whToken(dan, "inbound", "team", ops)
		_, carols := a.whToken(carol, "inbound", "org", "")
		_, adas := a.whToken(ada, "inbound", "team", gone)
		_, dansOwn := a.whToken(dan, "inbound", "user", "")
		for _, raw := range []string{dans, carols, adas, dansOwn} {
			a.whOK("/webhooks/inbound", raw, `{"title":"before"}`)
		}

		expect(t, a.call("DELETE", "/api/v1/org/teams/"+ops+"/members/"+dan.ID, ada.Access, nil), 204)
		expect(t, a.whDeliver("/webhooks/inbound", dans, `{"title":"after leaving the team"}`), 401)
		a.whOK("/webhooks/inbound", dansOwn, `{"title":"a user token stays"}`)

		expect(t, a.call("PATCH", "/api/v1/org/members/"+carol.ID, ada.Access, map[string]string{"role": "member"}), 200)
		expect(t, a.whDeliver("/webhooks/inbound", carols, `{"title":"after demotion"}`), 401)

		expect(t, a.call("DELETE", "/api/v1/org/teams/"+gone, ada.Access, nil), 204)
		expect(t, a.whDeliver("/webhooks/inbound", adas, `{"title":"after the team was deleted"}`), 401)
		for _, tok := range expect(t, a.call("GET", "/api/v1/webhook-tokens", ada.Access, nil), 200).List() {
			if tok["team_id"] == gone {
				t.Errorf("a token of a deleted team is still listed: %v", tok)
			}
		}
	})
}
