package server

import (
	"crypto/rand"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// controls are the characters every field of text a person enters refuses:
// NUL (which PostgreSQL cannot store), a C0 control, DEL and a C1 control.
var controls = []string{"\u0000", "\u0007", "\u007f", "\u0085"}

// TestControlCharactersInFieldsAreRefused posts each control character in
// each field of text a person enters, on both databases: the answer is 422
// (400 where the spec says so) in the error shape naming that field alone,
// never a 500, and nothing changes.
func TestControlCharactersInFieldsAreRefused(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.register("Root") // a platform admin, once verified
		a.verifyEmail(root)
		ada := a.register("Ada")
		tokenID := a.apiToken(ada, "cli")
		_, inbound := a.whToken(ada, "inbound", "user", "")
		team := expect(t, a.call("POST", "/api/v1/org/teams", ada.Access, map[string]string{"name": "Ops"}), 201).Data()["id"].(string)
		note := expect(t, a.call("POST", "/api/v1/admin/announcements", root.Access, map[string]string{"title": "Hi", "body": "Hello."}), 201).Data()["id"].(string)

		for _, c := range controls {
			bad := "ab" + c + "cd"
			mail := "ab" + c + "cd@example.com"
			pw := "correct" + c + "horse battery"
			cases := []struct {
				name, method, path, token string
				body                      map[string]string
				status                    int
				field                     string
			}{
				{"register: name", "POST", "/api/v1/auth/register", "", map[string]string{"name": bad, "email": "new@example.com", "password": goodPassword}, 422, "name"},
				{"register: email", "POST", "/api/v1/auth/register", "", map[string]string{"name": "New", "email": mail, "password": goodPassword}, 422, "email"},
				{"register: password", "POST", "/api/v1/auth/register", "", map[string]string{"name": "New", "email": "new@example.com", "password": pw}, 422, "password"},
				{"login: email", "POST", "/api/v1/auth/login", "", map[string]string{"email": mail, "password": goodPassword}, 422, "email"},
				{"login: password", "POST", "/api/v1/auth/login", "", map[string]string{"email": ada.Email, "password": pw}, 422, "password"},
				{"forgot password: email", "POST", "/api/v1/auth/forgot-password", "", map[string]string{"email": mail}, 422, "email"},
				{"reset password: password", "POST", "/api/v1/auth/reset-password", "", map[string]string{"token": "pem_x", "password": pw}, 422, "password"},
				{"me: name", "PATCH", "/api/v1/users/me", ada.Access, map[string]string{"name": bad}, 422, "name"},
				{"me: email", "PATCH", "/api/v1/users/me", ada.Access, map[string]string{"email": mail, "current_password": goodPassword}, 422, "email"},
				{"me: password", "PATCH", "/api/v1/users/me", ada.Access, map[string]string{"password": pw, "current_password": goodPassword}, 422, "password"},
				{"org: name", "PATCH", "/api/v1/org", ada.Access, map[string]string{"name": bad}, 422, "name"},
				{"new team: name", "POST", "/api/v1/org/teams", ada.Access, map[string]string{"name": bad}, 422, "name"},
				{"new team: description", "POST", "/api/v1/org/teams", ada.Access, map[string]string{"name": "Dev", "description": bad}, 422, "description"},
				{"team: name", "PATCH", "/api/v1/org/teams/" + team, ada.Access, map[string]string{"name": bad}, 422, "name"},
				{"team: description", "PATCH", "/api/v1/org/teams/" + team, ada.Access, map[string]string{"description": "line\n" + bad}, 422, "description"},
				{"invitation: email", "POST", "/api/v1/org/invitations", ada.Access, map[string]string{"email": mail}, 422, "email"},
				{"new API token: label", "POST", "/api/v1/tokens", ada.Access, map[string]string{"label": bad}, 400, "label"},
				{"API token: label", "PATCH", "/api/v1/tokens/" + tokenID, ada.Access, map[string]string{"label": bad}, 400, "label"},
				{"webhook token: label", "POST", "/api/v1/webhook-tokens", ada.Access, map[string]string{"label": bad, "sender": "inbound"}, 400, "label"},
				{"new announcement: title", "POST", "/api/v1/admin/announcements", root.Access, map[string]string{"title": bad, "body": "b"}, 422, "title"},
				{"new announcement: body", "POST", "/api/v1/admin/announcements", root.Access, map[string]string{"title": "t", "body": "line\n" + bad}, 422, "body"},
				{"announcement: title", "PATCH", "/api/v1/admin/announcements/" + note, root.Access, map[string]string{"title": bad}, 422, "title"},
				{"announcement: body", "PATCH", "/api/v1/admin/announcements/" + note, root.Access, map[string]string{"body": bad}, 422, "body"},
				{"inbound: title", "POST", "/webhooks/inbound?token=" + url.QueryEscape(inbound), "", map[string]string{"title": bad}, 400, "title"},
				{"inbound: message", "POST", "/webhooks/inbound?token=" + url.QueryEscape(inbound), "", map[string]string{"title": "T", "message": "line\n" + bad}, 400, "message"},
				{"inbound: tab", "POST", "/webhooks/inbound?token=" + url.QueryEscape(inbound), "", map[string]string{"title": "T", "tab": bad}, 400, "tab"},
			}
			for _, tc := range cases {
				t.Run(fmt.Sprintf("%s %U", tc.name, []rune(c)[0]), func(t *testing.T) {
					res := expect(t, a.call(tc.method, tc.path, tc.token, tc.body), tc.status)
					if f := res.Fields(); len(f) != 1 || f[tc.field] == nil {
						t.Fatalf("fields = %v, want %s alone", f, tc.field)
					}
				})
			}
		}

		// Nothing changed, and nothing was stored.
		if me := expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200).Data(); me["name"] != "Ada" || me["email"] != ada.Email {
			t.Errorf("me = %v", me)
		}
		if teams := expect(t, a.call("GET", "/api/v1/org/teams", ada.Access, nil), 200).List(); len(teams) != 1 || teams[0]["name"] != "Ops" {
			t.Errorf("teams = %v", teams)
		}
		if tokens := expect(t, a.call("GET", "/api/v1/tokens", ada.Access, nil), 200).List(); len(tokens) != 1 || tokens[0]["label"] != "cli" {
			t.Errorf("tokens = %v", tokens)
		}
		if list := expect(t, a.call("GET", "/api/v1/announcements", ada.Access, nil), 200).List(); len(list) != 1 || list[0]["title"] != "Hi" {
			t.Errorf("announcements = %v", list)
		}
		if n := len(a.whHistory(ada, "")); n != 0 {
			t.Errorf("%d notifications stored from refused deliveries", n)
		}
	})
}

// TestNULInAnIDIsNotAnInternalError: an id in a URL path or a body is not
// validated as text, so on PostgreSQL the store's mapping of SQLSTATE 22021
// answers it (400, or 404 where the store reads any failure to find a row as
// not found); SQLite finds nothing (404).
func TestNULInAnIDIsNotAnInternalError(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.register("Root")
		a.verifyEmail(root)
		ada := a.register("Ada")
		for _, c := range []struct {
			method, path, token string
			body                any
		}{
			{"GET", "/api/v1/org/teams/%00", ada.Access, nil},
			{"PATCH", "/api/v1/org/teams/a%00b", ada.Access, map[string]string{"name": "x"}},
			{"PUT", "/api/v1/org/teams/%00/members/%00", ada.Access, nil},
			{"PATCH", "/api/v1/org/members/%00", ada.Access, map[string]string{"role": "admin"}},
			{"DELETE", "/api/v1/org/invitations/%00", ada.Access, nil},
			{"PATCH", "/api/v1/tokens/%00", ada.Access, map[string]string{"label": "x"}},
			{"DELETE", "/api/v1/webhook-tokens/%00", ada.Access, nil},
			{"PATCH", "/api/v1/admin/announcements/%00", root.Access, map[string]string{"title": "x"}},
			{"POST", "/api/v1/webhook-tokens", ada.Access, map[string]string{"label": "x", "sender": "inbound", "scope": "team", "team_id": "\x00"}},
		} {
			t.Run(c.method+" "+c.path, func(t *testing.T) {
				res := a.call(c.method, c.path, c.token, c.body)
				switch {
				case strings.Contains(c.path, "%00"):
					expect(t, res, 404) // no path with a control character exists, on any database
				case s.Dialect() == store.SQLite || res.Status != 400:
					expect(t, res, 404)
				default:
					expect(t, res, 400)
				}
			})
		}
	})
}

// TestControlCharactersInDeliveries posts third-party payloads with control
// characters in their titles, beside clean deliveries at the same moment,
// on both databases: each is stored with the characters taken out (the
// sender cannot be asked to fix them), the clean ones are unaffected, and an
// inbound delivery with a NUL is refused on its own. A random Idempotency-Key
// too long for PostgreSQL's index is stored too, and still recognised.
func TestControlCharactersInDeliveries(t *testing.T) {
	t.Parallel()
	const poison = `\u0000\u0007\u0085\u202e`
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		_, incidents := a.whToken(ada, "incidents", "user", "")
		_, codeHost := a.whToken(ada, "code-host", "user", "")
		_, monitoring := a.whToken(ada, "monitoring", "user", "")
		_, inbound := a.whToken(ada, "inbound", "user", "")
		var key strings.Builder
		for key.Len() < 3000 {
			key.WriteString(rand.Text())
		}
		poisoned := func(file, title string) string {
			body := whRead(t, file)
			if !strings.Contains(body, title) {
				t.Fatalf("%s has no %q", file, title)
			}
			return strings.Replace(body, title, strings.Replace(title, " ", poison+" ", 2), 1)
		}
		type delivery struct {
			path, token, body string
			headers           []string
			status            int
		}
		deliveries := []delivery{
			{"/webhooks/pagerduty", incidents, poisoned("pagerduty/v3.incident.triggered.high.json", "Checkout API p99 latency above 2s"), nil, 200},
			{"/webhooks/github", codeHost, poisoned("github/pull_request.opened.json", "Add retries to the webhook client"), []string{"X-GitHub-Event", "pull_request"}, 200},
			{"/webhooks/datadog", monitoring, poisoned("datadog/custom.triggered.json", "CPU above 90% on web hosts"), nil, 200},
			{"/webhooks/inbound", inbound, `{"title": "a` + poison + `b"}`, nil, 400},
			{"/webhooks/inbound", inbound, `{"title": "long key"}`, []string{"Idempotency-Key", key.String()}, 200},
		}
		for i := range 8 {
			deliveries = append(deliveries, delivery{"/webhooks/inbound", inbound, `{"title": "clean ` + string(rune('a'+i)) + `"}`, nil, 200})
		}
		answers := make([]*response, len(deliveries))
		var wg sync.WaitGroup
		for i, d := range deliveries {
			wg.Go(func() { answers[i] = a.whDeliver(d.path, d.token, d.body, d.headers...) })
		}
		wg.Wait()
		for i, res := range answers {
			expect(t, res, deliveries[i].status)
		}
		if f := answers[3].Fields(); f["title"] == nil {
			t.Errorf("inbound fields = %v, want title", f)
		}

		hist := a.whHistory(ada, "")
		if len(hist) != len(deliveries)-1 {
			t.Fatalf("%d notifications stored, want %d", len(hist), len(deliveries)-1)
		}
		titles := map[string]bool{}
		for _, n := range hist {
			titles[n.Title] = true
			if p := perch.TextProblem(n.Title, perch.SingleLine) + perch.TextProblem(n.Tab, perch.SingleLine) + perch.TextProblem(n.Message, perch.MultiLine); p != "" {
				t.Errorf("stored %+v: %s", n, p)
			}
		}
		for _, want := range []string{
			"#42 Checkout API p99 latency above 2s triggered",
			"acme/widgets #101 opened: Add retries to the webhook client",
			"CPU above 90% on web hosts",
			"long key", "clean a", "clean h",
		} {
			if !titles[want] {
				t.Errorf("no notification titled %q among %v", want, titles)
			}
		}

		again := whAnswerOf(t, expect(t, a.whDeliver("/webhooks/inbound", inbound, `{"title": "long key"}`, "Idempotency-Key", key.String()), 200))
		if !again.Duplicate {
			t.Errorf("redelivery with the long key = %+v, want a duplicate", again)
		}
	})
}
