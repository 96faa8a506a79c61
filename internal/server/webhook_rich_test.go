package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/worker"
)

// richInbound is an inbound delivery with every rich member, an http
// action among them whose header and body hold what no client may see.
const richInbound = `{"title": "Disk full on db-1", "message": "**92%** used; see [the runbook](https://wiki.example.com/disk)",
	"severity": "warning", "priority": "urgent", "tags": ["warning", "db-1"], "icon": "https://example.com/db.png", "markdown": true,
	"actions": [
		{"type": "view", "label": "Open dashboard", "url": "https://grafana.example.com/d/db"},
		{"type": "http", "label": "Restart", "url": "https://ops.example.com/restart-hook", "method": "PUT",
		 "headers": {"Authorization": "Bearer hunter2-secret"}, "body": "{\"host\":\"db-1\",\"pin\":\"body-secret\"}"}
	]}`

// TestRichNotificationRoundTrip: what an inbound delivery says of
// priority, tags, icon, Markdown and actions reaches the history and the
// live frame as it was sent, while an http action's method, target,
// headers and body stay on the server: they are in none of the answers.
func TestRichNotificationRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		_, raw := a.whToken(ada, "inbound", "user", "")
		ts := a.live()
		ws := dial(t, ts, ada.Access, "")
		ws.ready()

		id := a.whOK("/webhooks/inbound", raw, richInbound).IDs[0]
		want := perch.Notification{ID: id, Tab: perch.TabInbound, Title: "Disk full on db-1",
			Message: "**92%** used; see [the runbook](https://wiki.example.com/disk)", Severity: perch.SeverityWarning,
			Source: perch.SourceInbound, Scope: perch.Scope{Type: perch.ScopeUser, ID: ada.ID},
			Priority: perch.PriorityUrgent, Tags: []string{"warning", "db-1"}, Icon: "https://example.com/db.png", Markdown: true,
			Actions: []perch.NotificationAction{
				{ID: "a1", Type: perch.ActionView, Label: "Open dashboard", URL: "https://grafana.example.com/d/db"},
				{ID: "a2", Type: perch.ActionHTTP, Label: "Restart"},
			}}
		check := func(where string, rawJSON []byte) {
			t.Helper()
			var n perch.Notification
			if err := json.Unmarshal(rawJSON, &n); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			n.CreatedAt = time.Time{}
			if !reflect.DeepEqual(n, want) {
				t.Errorf("%s:\n got %+v\nwant %+v", where, n, want)
			}
			for _, secret := range []string{"hunter2-secret", "body-secret", "restart-hook", "PUT", "sealed", "Authorization"} {
				if strings.Contains(string(rawJSON), secret) {
					t.Errorf("%s holds %q: %s", where, secret, rawJSON)
				}
			}
		}
		f := ws.next()
		if f.Type != "notification" {
			t.Fatalf("frame %s %s, want the notification", f.Type, f.Data)
		}
		check("the frame", f.Data)
		res := expect(t, a.call("GET", "/api/v1/notifications", ada.Access, nil), 200)
		var hist struct{ Data []json.RawMessage }
		if err := json.Unmarshal([]byte(res.Raw), &hist); err != nil || len(hist.Data) != 1 {
			t.Fatalf("history %s: %v", res.Raw, err)
		}
		check("the history", hist.Data[0])
		// A replay reads the same notification back from the store.
		replay := dial(t, ts, ada.Access, "0")
		check("the replay", replay.next().Data)
		// The Go client decodes every field.
		list, err := client.New(ts.URL, client.WithAccessToken(ada.Access, "")).Notifications(t.Context(), "", 0)
		if err != nil || len(list) != 1 {
			t.Fatalf("client: %v, %d notifications", err, len(list))
		}
		list[0].CreatedAt = time.Time{}
		if !reflect.DeepEqual(*list[0], want) {
			t.Errorf("the client:\n got %+v\nwant %+v", *list[0], want)
		}
	})
}

// TestPriorityIsDerivedWhenAbsent: a notification without a priority has
// its severity's (an error is high, so a Datadog alert is), and a
// PagerDuty high-urgency trigger is urgent.
func TestPriorityIsDerivedWhenAbsent(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		_, inbound := a.whToken(ada, "inbound", "user", "")
		_, incidents := a.whToken(ada, "incidents", "user", "")
		a.whOK("/webhooks/inbound", inbound, `{"title": "fyi"}`)
		a.whOK("/webhooks/inbound", inbound, `{"title": "broken", "severity": "error"}`)
		a.whOK("/webhooks/inbound", inbound, `{"title": "quiet", "severity": "error", "priority": 1}`)
		a.whOK("/webhooks/pagerduty", incidents, whRead(t, "pagerduty/v3.incident.triggered.high.json"))
		a.whOK("/webhooks/pagerduty", incidents, whRead(t, "pagerduty/v3.incident.triggered.low.json"))
		_, monitoring := a.whToken(ada, "monitoring", "user", "")
		a.whOK("/webhooks/datadog", monitoring, whRead(t, "datadog/custom.triggered.json"))
		a.whOK("/webhooks/datadog", monitoring, whRead(t, "datadog/custom.recovered.json"))
		var got []int
		for _, n := range a.whHistory(ada, "") {
			got = append(got, n.Priority)
		}
		if want := []int{3, 4, 1, 5, 3, 4, 3}; !reflect.DeepEqual(got, want) {
			t.Errorf("priorities %v, want %v", got, want)
		}
	})
}

// TestRichInboundBadRequest: a bad rich member is a 400 naming the field,
// nothing is stored; an http action aimed at this machine or a private
// network is refused unless private targets are allowed (the workflows'
// setting), when it is stored.
func TestRichInboundBadRequest(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		_, raw := a.whToken(ada, "inbound", "user", "")
		http := func(url string) string {
			return `{"title": "T", "actions": [{"type": "http", "label": "Go", "url": "` + url + `"}]}`
		}
		for _, tc := range []struct{ body, field string }{
			{`{"title": "T", "priority": "critical"}`, "priority"},
			{`{"title": "T", "tags": ["a", "b", "c", "d", "e", "f"]}`, "tags"},
			{`{"title": "T", "actions": [{"type": "exec", "label": "rm", "url": "https://a.example"}]}`, "actions[0].type"},
			{`{"title": "T", "actions": [{"type": "view", "label": "x", "url": "javascript:alert(1)"}]}`, "actions[0].url"},
			{`{"title": "T", "actions": [{"type":"view","label":"1","url":"https://a.example"},{"type":"view","label":"2","url":"https://a.example"},
				{"type":"view","label":"3","url":"https://a.example"},{"type":"view","label":"4","url":"https://a.example"}]}`, "actions"},
			{http("http://127.0.0.1:8080/hook"), "actions[0].url"},
			{http("http://[::1]/hook"), "actions[0].url"},
			{http("https://10.1.2.3/hook"), "actions[0].url"},
			{http("http://169.254.169.254/latest/meta-data"), "actions[0].url"},
			{http("http://localhost:9000/"), "actions[0].url"},
		} {
			res := expect(t, a.whDeliver("/webhooks/inbound", raw, tc.body), 400)
			if _, ok := res.Fields()[tc.field]; !ok {
				t.Errorf("%s: fields %v, want %s", tc.body, res.Fields(), tc.field)
			}
		}
		if n := len(a.whHistory(ada, "")); n != 0 {
			t.Fatalf("%d notifications stored from bad deliveries", n)
		}
		a.setWorker(func(o *worker.Options) { o.AllowPrivate = true })
		a.whOK("/webhooks/inbound", raw, http("http://127.0.0.1:8080/hook"))
	})
}
