package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// whNote is a notification as GET /api/v1/notifications shows it.
type whNote struct {
	ID        string `json:"id"`
	Tab       string `json:"tab"`
	Title     string `json:"title"`
	Message   string `json:"message"`
	Severity  string `json:"severity"`
	Source    string `json:"source"`
	URL       string `json:"url"`
	CreatedAt string `json:"created_at"`
	Scope     struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	} `json:"scope"`
	Priority int  `json:"priority"`
	Read     bool `json:"read"`
}

// whAnswer is a receiver's answer.
type whAnswer struct {
	Received  bool     `json:"received"`
	IDs       []string `json:"ids"`
	Ignored   string   `json:"ignored"`
	Duplicate bool     `json:"duplicate"`
}

func whAnswerOf(tb testing.TB, res *response) whAnswer {
	tb.Helper()
	var ans whAnswer
	if err := json.Unmarshal([]byte(res.Raw), &ans); err != nil {
		tb.Fatalf("receiver answer: %v\n%s", err, res.Raw)
	}
	if !ans.Received {
		tb.Fatalf("answer lacks received: true: %s", res.Raw)
	}
	return ans
}

// whRead returns one of the senders package's own test payloads.
func whRead(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "senders", "testdata", filepath.FromSlash(name)))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// whToken makes a webhook token for acc and returns its id and raw value.
func (a *api) whToken(acc *account, sender, scope, teamID string) (id, raw string) {
	a.t.Helper()
	body := map[string]string{"label": sender + " " + scope, "sender": sender, "scope": scope}
	if teamID != "" {
		body["team_id"] = teamID
	}
	d := expect(a.t, a.call("POST", "/api/v1/webhook-tokens", acc.Access, body), 201).Data()
	return d["token"].(map[string]any)["id"].(string), d["raw_token"].(string)
}

// whDeliver posts body to a receiver path with the raw token, if any.
func (a *api) whDeliver(path, raw, body string, headers ...string) *response {
	a.t.Helper()
	if raw != "" {
		path += "?token=" + url.QueryEscape(raw)
	}
	return a.call("POST", path, "", body, headers...)
}

// whOK delivers, expects 200 with stored notifications, and returns their ids.
func (a *api) whOK(path, raw, body string, headers ...string) whAnswer {
	a.t.Helper()
	ans := whAnswerOf(a.t, expect(a.t, a.whDeliver(path, raw, body, headers...), 200))
	if ans.Ignored != "" || len(ans.IDs) == 0 {
		a.t.Fatalf("%s: want stored notifications, got %+v", path, ans)
	}
	return ans
}

// whSend posts body with a Content-Type of one's choosing, which call does
// not allow.
func (a *api) whSend(path, contentType, body string, headers ...string) *response {
	a.t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	a.srv.ServeHTTP(rec, req)
	res := &response{Status: rec.Code, Header: rec.Header(), Raw: rec.Body.String()}
	if err := json.Unmarshal(rec.Body.Bytes(), &res.Body); err != nil {
		a.t.Fatalf("body is not JSON: %v\n%s", err, rec.Body)
	}
	return res
}

// whHistory returns acc's notifications for query ("" or "?since=…").
func (a *api) whHistory(acc *account, query string) []whNote {
	a.t.Helper()
	res := expect(a.t, a.call("GET", "/api/v1/notifications"+query, acc.Access, nil), 200)
	var out struct {
		Data []whNote `json:"data"`
	}
	if err := json.Unmarshal([]byte(res.Raw), &out); err != nil {
		a.t.Fatal(err)
	}
	if out.Data == nil {
		a.t.Fatalf("history data is not a list: %s", res.Raw)
	}
	return out.Data
}

func whIDs(notes []whNote) []string {
	ids := make([]string, len(notes))
	for i, n := range notes {
		ids[i] = n.ID
	}
	return ids
}

// whTeam creates a team in by's organisation with the given members.
func (a *api) whTeam(by *account, name string, members ...*account) string {
	a.t.Helper()
	id := expect(a.t, a.call("POST", "/api/v1/org/teams", by.Access, map[string]string{"name": name}), 201).Data()["id"].(string)
	for _, m := range members {
		expect(a.t, a.call("PUT", "/api/v1/org/teams/"+id+"/members/"+m.ID, by.Access, nil), 204)
	}
	return id
}

func whSign(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return hex.EncodeToString(mac.Sum(nil))
}

func TestReceiversCreateNotifications(t *testing.T) {
	t.Parallel()
	const checkout = "#42 Checkout API p99 latency above 2s"
	cases := []struct {
		path, sender, file string
		headers            []string
		want               whNote // tab, severity, title, message, source, url
	}{
		{"/webhooks/incidents", "incidents", "pagerduty/v3.incident.triggered.high.json", nil, whNote{Tab: "Incidents", Severity: "error",
			Title: checkout + " triggered", Message: "Triggered on Checkout API\nAssigned to Ada Lovelace", Source: "incidents", URL: "https://acme.pagerduty.com/incidents/Q1CHK42"}},
		{"/webhooks/pagerduty", "incidents", "pagerduty/v3.incident.acknowledged.json", nil, whNote{Tab: "Incidents", Severity: "warning",
			Title: checkout + " acknowledged", Message: "Acknowledged by Ada Lovelace on Checkout API", Source: "incidents", URL: "https://acme.pagerduty.com/incidents/Q1CHK42"}},
		{"/webhooks/code-host", "code-host", "github/pull_request.opened.json", []string{"X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "d-1"}, whNote{Tab: "Code", Severity: "info",
			Title: "acme/widgets #101 opened: Add retries to the webhook client", Message: "mona opened this pull request\nretry-client → main · by mona", Source: "code-host", URL: "https://github.com/acme/widgets/pull/101"}},
		{"/webhooks/github", "code-host", "github/check_run.completed.failure.json", []string{"X-GitHub-Event", "check_run"}, whNote{Tab: "Code", Severity: "error",
			Title: "acme/widgets: lint failure", Message: "GitHub Actions reported failure on retry-client at 3f9a1c2\n3 errors", Source: "code-host", URL: "https://github.com/acme/widgets/actions/runs/8300113377/job/24500113377"}},
		{"/webhooks/monitoring", "monitoring", "datadog/custom.triggered.json", nil, whNote{Tab: "Monitoring", Severity: "error",
			Title: "CPU above 90% on web hosts", Source: "monitoring", URL: "https://app.datadoghq.com/event/event?id=7720014455660011001"}},
		{"/webhooks/datadog", "monitoring", "datadog/custom.recovered.json", nil, whNote{Tab: "Monitoring", Severity: "info",
			Title: "CPU above 90% on web hosts", Source: "monitoring", URL: "https://app.datadoghq.com/event/event?id=7720014455660011004"}},
		{"/webhooks/inbound", "inbound", "inbound/full.json", nil, whNote{Tab: "Deploys", Severity: "warning",
			Title: "Deploy of api v2.3.1 finished", Message: "Rolled out to 12 hosts in eu-west-1 by the release pipeline.", Source: "inbound"}},
	}
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		for _, c := range cases {
			t.Run(strings.TrimPrefix(c.path, "/webhooks/"), func(t *testing.T) {
				_, raw := a.whToken(ada, c.sender, "user", "")
				ans := a.whOK(c.path, raw, whRead(t, c.file), c.headers...)
				if len(ans.IDs) != 1 || ans.Duplicate {
					t.Fatalf("answer = %+v", ans)
				}
				hist := a.whHistory(ada, "")
				got := hist[len(hist)-1]
				if got.ID != ans.IDs[0] {
					t.Fatalf("newest notification is %s, answer said %s", got.ID, ans.IDs[0])
				}
				if got.Tab != c.want.Tab || got.Severity != c.want.Severity || got.Title != c.want.Title || got.Source != c.want.Source || got.URL != c.want.URL || got.Read {
					t.Errorf("notification = %+v\nwant %+v", got, c.want)
				}
				if c.want.Message != "" && got.Message != c.want.Message {
					t.Errorf("message = %q, want %q", got.Message, c.want.Message)
				}
				if got.Scope.Type != "user" || got.Scope.ID != ada.ID {
					t.Errorf("scope = %+v, want user %s", got.Scope, ada.ID)
				}
				if ts, err := time.Parse(time.RFC3339Nano, got.CreatedAt); err != nil || !strings.HasSuffix(got.CreatedAt, "Z") || !ts.Equal(a.clock.Now()) {
					t.Errorf("created_at = %q", got.CreatedAt)
				}
				if slices.Contains(whIDs(a.whHistory(bob, "")), got.ID) {
					t.Error("a user-scoped notification reached a colleague")
				}
			})
		}
	})
}

func TestReceiverGitHubFormEncoded(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		_, raw := a.whToken(ada, "code-host", "user", "")
		form := url.Values{"payload": {whRead(t, "github/pull_request.opened.json")}}.Encode()
		res := expect(t, a.whSend("/webhooks/code-host?token="+raw, "application/x-www-form-urlencoded", form, "X-GitHub-Event", "pull_request"), 200)
		ans := whAnswerOf(t, res)
		hist := a.whHistory(ada, "")
		if len(ans.IDs) != 1 || len(hist) != 1 || hist[0].ID != ans.IDs[0] {
			t.Fatalf("answer %+v, history %+v", ans, hist)
		}
		if n := hist[0]; n.Title != "acme/widgets #101 opened: Add retries to the webhook client" || n.Tab != "Code" || n.URL != "https://github.com/acme/widgets/pull/101" {
			t.Fatalf("notification = %+v", n)
		}
		// A form without its payload field is a bad request.
		expect(t, a.whSend("/webhooks/github?token="+raw, "application/x-www-form-urlencoded", "other=1", "X-GitHub-Event", "ping"), 400)
	})
}

func TestReceiverPagerDutyV2ManyMessages(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		_, raw := a.whToken(ada, "incidents", "user", "")
		ans := a.whOK("/webhooks/incidents", raw, whRead(t, "pagerduty/v2.batch.json"))
		hist := a.whHistory(ada, "")
		if len(ans.IDs) != 3 || !slices.Equal(whIDs(hist), ans.IDs) {
			t.Fatalf("answer ids %v, history %v", ans.IDs, whIDs(hist))
		}
		const payments = "#51 Payment provider timeouts"
		want := []struct{ title, severity string }{{payments + " triggered", "error"}, {payments + " escalated", "error"}, {payments + " resolved", "info"}}
		for i, w := range want {
			if n := hist[i]; n.Title != w.title || n.Severity != w.severity || n.Tab != "Incidents" || n.Source != "incidents" {
				t.Errorf("notification %d = %+v, want %+v", i, n, w)
			}
		}
	})
}

func TestInboundValidationAndDefaults(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		_, raw := a.whToken(ada, "inbound", "user", "")
		for _, c := range []struct{ name, body, field string }{
			{"invalid JSON", `{"title": "x"`, ""},
			{"empty body", ``, ""},
			{"not an object", `["x"]`, ""},
			{"missing title", `{"message": "no title"}`, "title"},
			{"blank title", `{"title": "  "}`, "title"},
			{"bad severity", `{"title": "x", "severity": "critical"}`, "severity"},
			{"title not a string", `{"title": 42}`, "title"},
			{"title too long", `{"title": "` + strings.Repeat("t", 201) + `"}`, "title"},
			{"a link that is not the web", `{"title": "x", "url": "javascript:alert(1)"}`, "url"},
		} {
			t.Run(c.name, func(t *testing.T) {
				res := expect(t, a.whDeliver("/webhooks/inbound", raw, c.body), 400)
				// Problems with a member are named in fields, as everywhere.
				if c.field != "" && (len(res.Fields()) != 1 || res.Fields()[c.field] == nil) {
					t.Fatalf("fields = %v, want one problem with %s", res.Fields(), c.field)
				}
			})
		}
		if n := len(a.whHistory(ada, "")); n != 0 {
			t.Fatalf("bad deliveries stored %d notifications", n)
		}
		id := a.whOK("/webhooks/inbound", raw, whRead(t, "inbound/minimal.json")).IDs[0]
		n := a.whHistory(ada, "")[0]
		if n.ID != id || n.Tab != "Inbound" || n.Severity != "info" || n.Title != "Nightly backup completed" || n.Source != "inbound" || n.URL != "" {
			t.Fatalf("notification = %+v", n)
		}
	})
}

func TestReceiverRejectsWrongTokens(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		a.apiToken(ada, "cli")
		_, inbound := a.whToken(ada, "inbound", "user", "")
		_, codeHost := a.whToken(ada, "code-host", "user", "")
		_, incidents := a.whToken(ada, "incidents", "user", "")
		pr := whRead(t, "github/pull_request.opened.json")
		cases := []struct {
			name, path, token, body string
			status                  int
		}{
			{"inbound token at code-host", "/webhooks/code-host", inbound, pr, 403},
			{"inbound token at the github alias", "/webhooks/github", inbound, pr, 403},
			{"code-host token at inbound", "/webhooks/inbound", codeHost, `{"title":"x"}`, 403},
			{"incidents token at monitoring", "/webhooks/datadog", incidents, whRead(t, "datadog/custom.triggered.json"), 403},
			{"code-host token at incidents", "/webhooks/pagerduty", codeHost, whRead(t, "pagerduty/v3.incident.resolved.json"), 403},
			{"unknown whk token", "/webhooks/inbound", "whk_" + strings.Repeat("a", 52), `{"title":"x"}`, 401},
			{"a token with one character changed", "/webhooks/inbound", inbound[:len(inbound)-1] + "x", `{"title":"x"}`, 401},
			{"an API token", "/webhooks/inbound", ada.Token, `{"title":"x"}`, 401},
			{"an access token", "/webhooks/inbound", ada.Access, `{"title":"x"}`, 401},
			{"garbage", "/webhooks/inbound", "hello", `{"title":"x"}`, 401},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				expect(t, a.whDeliver(c.path, c.token, c.body, "X-GitHub-Event", "pull_request"), c.status)
			})
		}
		if n := len(a.whHistory(ada, "")); n != 0 {
			t.Fatalf("%d notifications stored from refused deliveries", n)
		}
	})
}

func TestReceiverIgnoredEvents(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		_, codeHost := a.whToken(ada, "code-host", "user", "")
		_, incidents := a.whToken(ada, "incidents", "user", "")
		cases := []struct {
			path, token, file, event, reason string
		}{
			{"/webhooks/code-host", codeHost, "github/star.created.json", "star", `github event "star" is not subscribed`},
			{"/webhooks/github", codeHost, "github/pull_request.labeled.json", "pull_request", `github pull_request action "labeled" is not subscribed`},
			{"/webhooks/code-host", codeHost, "github/check_run.created.json", "check_run", `github check_run action "created" is not subscribed`},
			{"/webhooks/incidents", incidents, "pagerduty/v3.service.updated.json", "", `pagerduty event "service.updated" is not about an incident`},
			{"/webhooks/pagerduty", incidents, "pagerduty/v3.pagey.ping.json", "", `pagerduty event "pagey.ping" is not about an incident`},
		}
		for _, c := range cases {
			t.Run(c.file, func(t *testing.T) {
				res := expect(t, a.whDeliver(c.path, c.token, whRead(t, c.file), "X-GitHub-Event", c.event), 200)
				if ans := whAnswerOf(t, res); ans.Ignored != c.reason || ans.IDs != nil {
					t.Fatalf("answer = %+v, want ignored %q and no ids", ans, c.reason)
				}
			})
		}
		if n := len(a.whHistory(ada, "")); n != 0 {
			t.Fatalf("ignored events stored %d notifications", n)
		}
		res := expect(t, a.whDeliver("/webhooks/code-host", codeHost, whRead(t, "github/push.branch.json")), 400)
		if !strings.Contains(res.Body["error"].(map[string]any)["message"].(string), "X-GitHub-Event") {
			t.Fatalf("message does not name the header: %s", res.Raw)
		}
	})
}

func TestWebhookRedelivery(t *testing.T) {
	t.Parallel()
	pr := whRead(t, "github/pull_request.opened.json")
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		_, codeHost := a.whToken(ada, "code-host", "user", "")
		_, codeHost2 := a.whToken(ada, "code-host", "user", "")
		_, incidents := a.whToken(ada, "incidents", "user", "")
		_, inbound := a.whToken(ada, "inbound", "user", "")

		// twice delivers the same thing twice and checks the second answer.
		twice := func(path, raw, body string, headers ...string) string {
			t.Helper()
			first := a.whOK(path, raw, body, headers...)
			if first.Duplicate {
				t.Fatalf("first delivery marked duplicate: %+v", first)
			}
			second := a.whOK(path, raw, body, headers...)
			if !second.Duplicate || !slices.Equal(second.IDs, first.IDs) {
				t.Fatalf("redelivery answer = %+v, want duplicate with ids %v", second, first.IDs)
			}
			return first.IDs[0]
		}
		count := func(want int) {
			t.Helper()
			if n := len(a.whHistory(ada, "")); n != want {
				t.Fatalf("%d notifications, want %d", n, want)
			}
		}

		twice("/webhooks/code-host", codeHost, pr, "X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "gh-1")
		count(1)
		// The alias is the same receiver: the same delivery there is a redelivery too.
		a.whOK("/webhooks/github", codeHost, pr, "X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "gh-1")
		count(1)
		twice("/webhooks/incidents", incidents, whRead(t, "pagerduty/v3.incident.triggered.high.json"), "X-Webhook-Id", "pd-1")
		count(2)
		twice("/webhooks/inbound", inbound, `{"title":"deploy"}`, "Idempotency-Key", "k-1")
		count(3)
		a.whOK("/webhooks/inbound", inbound, `{"title":"deploy"}`, "Idempotency-Key", "k-2")
		count(4)
		// Without any key, each delivery is a new notification.
		a.whOK("/webhooks/inbound", inbound, `{"title":"deploy"}`)
		a.whOK("/webhooks/inbound", inbound, `{"title":"deploy"}`)
		count(6)
		// Keys are per token.
		other := a.whOK("/webhooks/code-host", codeHost2, pr, "X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "gh-1")
		if other.Duplicate {
			t.Fatalf("another token's delivery marked duplicate: %+v", other)
		}
		count(7)
		// A V2 batch redelivered creates none of its messages again.
		batch := whRead(t, "pagerduty/v2.batch.json")
		first := a.whOK("/webhooks/pagerduty", incidents, batch, "X-Webhook-Id", "pd-batch")
		again := a.whOK("/webhooks/pagerduty", incidents, batch, "X-Webhook-Id", "pd-batch")
		if len(first.IDs) != 3 || !again.Duplicate || !slices.Equal(first.IDs, again.IDs) {
			t.Fatalf("batch answers %+v then %+v", first, again)
		}
		count(10)
	})
}

func TestWebhookSignatures(t *testing.T) {
	t.Parallel()
	const secret = "It's a Secret to Everybody"
	pr := whRead(t, "github/pull_request.opened.json")
	pd := whRead(t, "pagerduty/v3.incident.resolved.json")
	wrong := whSign("another secret", pr)
	cases := []struct {
		name, path, sender, body, header, value string
		status                                  int
	}{
		{"github unsigned", "/webhooks/code-host", "code-host", pr, "", "", 401},
		{"github wrong", "/webhooks/code-host", "code-host", pr, "X-Hub-Signature-256", "sha256=" + wrong, 401},
		{"github signature of another body", "/webhooks/github", "code-host", pr, "X-Hub-Signature-256", "sha256=" + whSign(secret, pd), 401},
		{"github without the sha256= prefix", "/webhooks/code-host", "code-host", pr, "X-Hub-Signature-256", whSign(secret, pr), 401},
		{"github right", "/webhooks/code-host", "code-host", pr, "X-Hub-Signature-256", "sha256=" + whSign(secret, pr), 200},
		{"github right at the alias", "/webhooks/github", "code-host", pr, "X-Hub-Signature-256", "sha256=" + whSign(secret, pr), 200},
		{"pagerduty unsigned", "/webhooks/incidents", "incidents", pd, "", "", 401},
		{"pagerduty wrong", "/webhooks/incidents", "incidents", pd, "X-PagerDuty-Signature", "v1=" + whSign("another secret", pd), 401},
		{"pagerduty right", "/webhooks/incidents", "incidents", pd, "X-PagerDuty-Signature", "v1=" + whSign(secret, pd), 200},
		{"pagerduty two values, the second right", "/webhooks/pagerduty", "incidents", pd, "X-PagerDuty-Signature", "v1=" + whSign("old secret", pd) + ",v1=" + whSign(secret, pd), 200},
		{"pagerduty two values, the first right", "/webhooks/incidents", "incidents", pd, "X-PagerDuty-Signature", "v1=" + whSign(secret, pd) + ", v1=" + whSign("new secret", pd), 200},
		{"pagerduty two values, neither right", "/webhooks/incidents", "incidents", pd, "X-PagerDuty-Signature", "v1=" + whSign("a", pd) + ",v1=" + whSign("b", pd), 401},
	}
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, func(o *Options) { o.Webhooks.GitHubSecret, o.Webhooks.PagerDutySecret = secret, secret })
		ada := a.register("Ada")
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				_, raw := a.whToken(ada, c.sender, "user", "")
				before := len(a.whHistory(ada, ""))
				headers := []string{"X-GitHub-Event", "pull_request"}
				if c.header != "" {
					headers = append(headers, c.header, c.value)
				}
				expect(t, a.whDeliver(c.path, raw, c.body, headers...), c.status)
				want := 0
				if c.status == 200 {
					want = 1
				}
				if stored := len(a.whHistory(ada, "")) - before; stored != want {
					t.Fatalf("%d notifications stored, want %d", stored, want)
				}
			})
		}
		// Senders without a secret of their own are not asked for one.
		_, raw := a.whToken(ada, "inbound", "user", "")
		a.whOK("/webhooks/inbound", raw, `{"title":"unsigned"}`)
	})
}

func TestAnonymousBroadcast(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		eve := a.register("Eve") // another organisation
		id := a.whOK("/webhooks/inbound", "", `{"title":"Maintenance at noon"}`).IDs[0]
		a.whOK("/webhooks/monitoring", "", whRead(t, "datadog/default.triggered.json"))
		for _, acc := range []*account{ada, eve} {
			hist := a.whHistory(acc, "")
			if len(hist) != 2 || hist[0].ID != id || hist[0].Title != "Maintenance at noon" || hist[0].Scope.Type != "all" || hist[0].Scope.ID != "" {
				t.Fatalf("%s sees %+v", acc.Email, hist)
			}
			if hist[1].Scope.Type != "all" || hist[1].Source != "monitoring" {
				t.Fatalf("%s sees %+v", acc.Email, hist[1])
			}
		}
		// Someone who signs up later does not find them: they were for the
		// accounts there at the time (TestBroadcastsAreForTheAccountsOfTheirTime).
		if hist := a.whHistory(a.register("Zed"), ""); len(hist) != 0 {
			t.Fatalf("a later user sees %d notifications", len(hist))
		}
	})
}

func TestAnonymousBroadcastDisabled(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, func(o *Options) { o.Webhooks.AnonymousBroadcast = false })
		ada := a.register("Ada")
		expect(t, a.whDeliver("/webhooks/inbound", "", `{"title":"x"}`), 401)
		expect(t, a.whDeliver("/webhooks/code-host", "", whRead(t, "github/push.branch.json"), "X-GitHub-Event", "push"), 401)
		if n := len(a.whHistory(ada, "")); n != 0 {
			t.Fatalf("%d notifications", n)
		}
		_, raw := a.whToken(ada, "inbound", "user", "")
		a.whOK("/webhooks/inbound", raw, `{"title":"with a token"}`)
	})
}

func TestAnonymousBroadcastLimitedPerIP(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, func(o *Options) { o.Webhooks.BroadcastLimit = perch.Limit{Count: 2, Period: time.Minute} })
		ada := a.register("Ada")
		const ip = "RemoteAddr"
		for i := range 2 {
			res := expect(t, a.whDeliver("/webhooks/inbound", "", `{"title":"x"}`, ip, "203.0.113.7:4000"), 200)
			if got := res.Header.Get("X-RateLimit-Remaining"); got != fmt.Sprint(1-i) {
				t.Fatalf("X-RateLimit-Remaining = %q after %d", got, i+1)
			}
		}
		res := expect(t, a.whDeliver("/webhooks/inbound", "", `{"title":"x"}`, ip, "203.0.113.7:4001"), 429)
		if retry, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || retry < 1 || retry > 60 ||
			res.Header.Get("X-RateLimit-Limit") != "2" || res.Header.Get("X-RateLimit-Remaining") != "0" {
			t.Fatalf("429 headers = %v", res.Header)
		}
		// X-Forwarded-For from an untrusted peer buys no new allowance.
		expect(t, a.whDeliver("/webhooks/inbound", "", `{"title":"x"}`, ip, "203.0.113.7:4001", "X-Forwarded-For", "192.0.2.55"), 429)
		if n := len(a.whHistory(ada, "")); n != 2 {
			t.Fatalf("%d broadcasts stored, want 2", n)
		}
		// Another address has its own allowance; a token is not limited by it.
		expect(t, a.whDeliver("/webhooks/inbound", "", `{"title":"x"}`, ip, "198.51.100.9:4000"), 200)
		_, raw := a.whToken(ada, "inbound", "user", "")
		a.whOK("/webhooks/inbound", raw, `{"title":"with a token"}`, ip, "203.0.113.7:4002")
	})
}

// whBigPush is a valid push payload of at least size bytes, and its commit count.
func whBigPush(size int) (string, int) {
	var b strings.Builder
	b.WriteString(`{"ref":"refs/heads/main","compare":"https://github.com/acme/big/compare/a1...b2",` +
		`"repository":{"full_name":"acme/big","html_url":"https://github.com/acme/big"},"pusher":{"name":"mona"},"commits":[`)
	msg := strings.Repeat("m", 1000)
	n := 0
	for b.Len() < size {
		if n > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"%040d","message":"commit %d %s"}`, n, n, msg)
		n++
	}
	b.WriteString(`],"head_commit":{"message":"Vendor everything"}}`)
	return b.String(), n
}

func TestReceiverBodyLimits(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		_, inbound := a.whToken(ada, "inbound", "user", "")
		_, codeHost := a.whToken(ada, "code-host", "user", "")
		_, monitoring := a.whToken(ada, "monitoring", "user", "")

		big := `{"title":"big","message":"` + strings.Repeat("x", 1<<20) + `"}`
		expect(t, a.whDeliver("/webhooks/inbound", inbound, big), 413)
		expect(t, a.whDeliver("/webhooks/monitoring", monitoring, big), 413)
		expect(t, a.whDeliver("/webhooks/inbound", "", big), 413)
		// Without a Content-Length, the limit holds while reading.
		req := httptest.NewRequest("POST", "/webhooks/inbound?token="+inbound, strings.NewReader(big))
		req.ContentLength = -1
		rec := httptest.NewRecorder()
		a.srv.ServeHTTP(rec, req)
		if rec.Code != 413 {
			t.Fatalf("streamed body over the limit: status %d", rec.Code)
		}

		push, commits := whBigPush(3 << 20)
		for _, path := range []string{"/webhooks/code-host", "/webhooks/github"} {
			id := a.whOK(path, codeHost, push, "X-GitHub-Event", "push").IDs[0]
			hist := a.whHistory(ada, "")
			if n := hist[len(hist)-1]; n.ID != id || n.Title != fmt.Sprintf("acme/big: %d commits pushed to main", commits) {
				t.Fatalf("%s: notification = %+v", path, n)
			}
		}
		huge, _ := whBigPush(5<<20 + 1)
		expect(t, a.whDeliver("/webhooks/code-host", codeHost, huge, "X-GitHub-Event", "push"), 413)
		if n := len(a.whHistory(ada, "")); n != 2 {
			t.Fatalf("%d notifications, want 2", n)
		}
	})
}

func TestWebhookRedeliveryConcurrent(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		_, raw := a.whToken(ada, "code-host", "user", "")
		body := whRead(t, "github/pull_request.opened.json")
		recs := make([]*httptest.ResponseRecorder, 8)
		var wg sync.WaitGroup
		for i := range recs {
			recs[i] = httptest.NewRecorder()
			req := httptest.NewRequest("POST", "/webhooks/code-host?token="+raw, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "pull_request")
			req.Header.Set("X-GitHub-Delivery", "gh-race")
			wg.Go(func() { a.srv.ServeHTTP(recs[i], req) })
		}
		wg.Wait()
		ids, fresh := map[string]bool{}, 0
		for _, rec := range recs {
			var ans whAnswer
			if err := json.Unmarshal(rec.Body.Bytes(), &ans); rec.Code != 200 || err != nil || len(ans.IDs) != 1 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			ids[ans.IDs[0]] = true
			if !ans.Duplicate {
				fresh++
			}
		}
		if len(ids) != 1 || fresh != 1 {
			t.Fatalf("simultaneous redeliveries: ids %v, %d answers not marked duplicate; want one id, one first delivery", ids, fresh)
		}
		if n := len(a.whHistory(ada, "")); n != 1 {
			t.Fatalf("%d notifications, want 1", n)
		}
	})
}

// queryValue must read a receiver's ?token= exactly as url.Values would.
func TestQueryValueAgreesWithURLValues(t *testing.T) {
	t.Parallel()
	for _, q := range []string{
		"", "token=whk_abc", "a=1&token=whk_abc&b=2", "token=first&token=second", "token", "token=",
		"tokens=x&token=y", "xtoken=x", "&&token=a&&", "token=a%62c", "tok%65n=abc", "token=a+b", "a=1;token=x&token=y",
		"=v&token=w", "token==x",
	} {
		u := &url.URL{RawQuery: q}
		if got, want := queryValue(u, "token"), u.Query().Get("token"); got != want {
			t.Errorf("query %q: %q, want %q", q, got, want)
		}
	}
}

func FuzzQueryValue(f *testing.F) {
	for _, q := range []string{"token=whk_abc", "a=1&token=x%20y", "token=a;b", "token=a&token=b"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		u := &url.URL{RawQuery: q}
		if got, want := queryValue(u, "token"), u.Query().Get("token"); got != want {
			t.Fatalf("query %q: %q, want %q", q, got, want)
		}
	})
}
