package workflow

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/perch-dev/perch"
)

// alert is a realistic notification from an incident tool.
var alert = perch.Notification{
	Tab: perch.TabIncidents, Title: "db-1 is down", Message: "Connection refused on port 5432.", Severity: perch.SeverityError,
	Source: perch.SourceIncidents, URL: "https://incidents.example.com/i/42", Scope: perch.Scope{Type: perch.ScopeTeam, ID: "team_ops"},
}

// alertPayload is the body alert came from.
var alertPayload = map[string]any{
	"alert": map[string]any{"priority": "P1", "service": "db", "tags": []any{"prod", "eu"}},
	"count": 3.0,
}

// mustCompile compiles a workflow or fails the test.
func mustCompile(tb testing.TB, condition string, steps ...perch.Step) *Program {
	tb.Helper()
	p, err := Compile(mustWorkflow(condition, steps...))
	if err != nil {
		tb.Fatalf("Compile: %v", err)
	}
	return p
}

// input is alert with its payload, at a fixed time.
func input() Input {
	return Input{Notification: alert, Payload: alertPayload, Now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func TestRunCondition(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		condition string
		payload   map[string]any
		matched   bool
	}{
		{"", nil, true},
		{`event.severity == "error"`, nil, true},
		{`event.severity == "info"`, nil, false},
		{`event.scope.type == "team" && event.scope.id == "team_ops"`, nil, true},
		{`event.title.startsWith("db-")`, nil, true},
		{`has(payload.alert) && payload.alert.priority == "P1"`, alertPayload, true},
		{`has(payload.alert) && payload.alert.priority == "P1"`, nil, false},
		{`has(payload.alert) && payload.alert.priority == "P1"`, map[string]any{"alert": map[string]any{"priority": "P3"}}, false},
		{`"prod" in payload.alert.tags`, alertPayload, true},
		{`payload.count >= 3`, alertPayload, true},
		{`now.getFullYear() == 2026`, nil, true},
	} {
		t.Run(tt.condition, func(t *testing.T) {
			in := input()
			in.Payload = tt.payload
			r := mustCompile(t, tt.condition, perch.Step{Drop: &perch.DropStep{}}).Run(t.Context(), in, Hooks{})
			if r.Matched != tt.matched {
				t.Fatalf("Matched = %v, want %v (steps %v)", r.Matched, tt.matched, r.Steps)
			}
			wantStatus := ""
			if tt.matched {
				wantStatus = perch.RunDropped
			}
			if r.Status != wantStatus {
				t.Errorf("Status = %q, want %q", r.Status, wantStatus)
			}
		})
	}
}

func TestRunSet(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, "", perch.Step{Set: map[string]string{
		"title":    `event.title + " !"`,
		"severity": `payload.alert.priority == "P1" ? "error" : "warning"`,
		"message":  `"Service " + payload.alert.service + ": " + event.message`,
		"tab":      `"Ops"`,
		"url":      `event.url + "?from=perch"`,
	}}, perch.Step{Set: map[string]string{"title": `"[" + event.severity + "] " + event.title`}})
	r := p.Run(t.Context(), input(), Hooks{})
	want := alert
	want.Title = "[error] db-1 is down !"
	want.Message = "Service db: Connection refused on port 5432."
	want.Tab = "Ops"
	want.URL = "https://incidents.example.com/i/42?from=perch"
	if r.Status != perch.RunDelivered || !reflect.DeepEqual(r.Notification, want) {
		t.Errorf("Run = %s %+v, want delivered %+v (steps %v)", r.Status, r.Notification, want, r.Steps)
	}
	if len(r.Steps) != 2 || r.Steps[0] != (perch.RunStep{Type: "set", Status: "ok"}) {
		t.Errorf("Steps = %v", r.Steps)
	}
}

func TestRunRouteDropForwardEmail(t *testing.T) {
	t.Parallel()
	fwd := perch.ForwardStep{URL: "https://hooks.example.com/x", Secret: "k"}
	p := mustCompile(t, "",
		perch.Step{Route: &perch.RouteStep{Scope: "user", ID: "usr_7"}},
		perch.Step{Forward: &fwd},
		perch.Step{Email: &perch.EmailStep{To: "admins"}},
	)
	r := p.Run(t.Context(), input(), Hooks{})
	if r.Status != perch.RunDelivered || r.Notification.Scope != (perch.Scope{Type: "user", ID: "usr_7"}) {
		t.Errorf("Run = %s, scope %+v", r.Status, r.Notification.Scope)
	}
	if !reflect.DeepEqual(r.Forwards, []perch.ForwardStep{fwd}) || !reflect.DeepEqual(r.Emails, []perch.EmailStep{{To: "admins"}}) {
		t.Errorf("Forwards %v, Emails %v", r.Forwards, r.Emails)
	}
	wantSteps := []perch.RunStep{{Type: "route", Status: "ok", Detail: "to user usr_7"}, {Type: "forward", Status: "queued"}, {Type: "email", Status: "queued", Detail: "to admins"}}
	if !reflect.DeepEqual(r.Steps, wantSteps) {
		t.Errorf("Steps = %v, want %v", r.Steps, wantSteps)
	}

	// A drop after them: nothing is forwarded or mailed, and the steps after the drop are skipped.
	p = mustCompile(t, "", perch.Step{Forward: &fwd}, perch.Step{Drop: &perch.DropStep{}}, perch.Step{Email: &perch.EmailStep{To: "owners"}})
	r = p.Run(t.Context(), input(), Hooks{})
	if r.Status != perch.RunDropped || r.Forwards != nil || r.Emails != nil {
		t.Errorf("Run = %s, Forwards %v, Emails %v", r.Status, r.Forwards, r.Emails)
	}
	wantSteps = []perch.RunStep{{Type: "forward", Status: "skipped", Detail: "the notification was not delivered"}, {Type: "drop", Status: "ok"}, {Type: "email", Status: "skipped"}}
	if !reflect.DeepEqual(r.Steps, wantSteps) {
		t.Errorf("Steps = %v, want %v", r.Steps, wantSteps)
	}
}

// fakeThrottle allows max per key, counting in memory, and records the keys it saw.
type fakeThrottle struct {
	counts map[string]int
	err    error
}

func (f *fakeThrottle) Throttle(_ context.Context, key string, max int, per time.Duration) (bool, error) {
	if f.err != nil {
		return false, f.err
	}
	f.counts[key]++
	return f.counts[key] <= max, nil
}

func TestRunThrottle(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, "", perch.Step{Throttle: &perch.ThrottleStep{Key: "event.source", Max: 2, Per: minute}},
		perch.Step{Set: map[string]string{"title": `"throttled in"`}})
	f := &fakeThrottle{counts: map[string]int{}}
	for i, want := range []string{perch.RunDelivered, perch.RunDelivered, perch.RunThrottled} {
		r := p.Run(t.Context(), input(), Hooks{Throttle: f.Throttle})
		if r.Status != want {
			t.Errorf("run %d: Status = %q, want %q (steps %v)", i, r.Status, want, r.Steps)
		}
		if want == perch.RunThrottled {
			if !reflect.DeepEqual(r.Notification, alert) || r.Steps[0].Detail != "over 2 per 1m" || r.Steps[1].Status != "skipped" {
				t.Errorf("throttled run: %+v %v", r.Notification, r.Steps)
			}
		}
	}
	if f.counts["wf_1/0/incidents"] != 3 {
		t.Errorf("counts = %v, want 3 under wf_1/0/incidents", f.counts)
	}

	f.err = errors.New("redis is down")
	r := p.Run(t.Context(), input(), Hooks{Throttle: f.Throttle})
	if r.Status != perch.RunFailed || !reflect.DeepEqual(r.Notification, alert) || r.Steps[0].Detail != "redis is down" {
		t.Errorf("a failing hook: %s %+v %v", r.Status, r.Notification, r.Steps)
	}
	r = p.Run(t.Context(), input(), Hooks{})
	if r.Status != perch.RunFailed || !reflect.DeepEqual(r.Notification, alert) {
		t.Errorf("no hook: %s %v", r.Status, r.Steps)
	}
}

func TestRunDigest(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, "", perch.Step{Set: map[string]string{"tab": `"Digest"`}},
		perch.Step{Digest: &perch.DigestStep{Key: "event.scope.id", Window: 15 * minute}})
	var held []perch.Notification
	var keys []string
	h := Hooks{Digest: func(_ context.Context, key string, window time.Duration, n perch.Notification) error {
		if window != 15*time.Minute {
			t.Errorf("window = %s", window)
		}
		keys, held = append(keys, key), append(held, n)
		return nil
	}}
	r := p.Run(t.Context(), input(), h)
	if r.Status != perch.RunDigested || len(held) != 1 || held[0].Tab != "Digest" || keys[0] != "wf_1/1/team_ops" {
		t.Errorf("Run = %s, held %+v under %q", r.Status, held, keys)
	}
	if r.Steps[1] != (perch.RunStep{Type: "digest", Status: "ok", Detail: "held for 15m"}) {
		t.Errorf("Steps = %v", r.Steps)
	}
}

func TestRunFailsLeavingTheNotificationUnchanged(t *testing.T) {
	t.Parallel()
	set := func(field, expr string) perch.Step { return perch.Step{Set: map[string]string{field: expr}} }
	bigList := make([]any, 5000)
	for i := range bigList {
		bigList[i] = fmt.Sprint(i)
	}
	for _, tt := range []struct {
		name      string
		condition string
		steps     []perch.Step
		payload   map[string]any
		failed    string // the failed step's type
		detail    string
	}{
		{"a missing key in the condition", "payload.missing.x == 1", []perch.Step{set("title", `"x"`)}, alertPayload, "condition", "no such key: missing"},
		{"a condition of dyn type that is not bool", "payload.count", []perch.Step{set("title", `"x"`)}, alertPayload, "condition", "not true or false"},
		{"a missing key in a set", "", []perch.Step{set("title", `"changed"`), set("message", "payload.nothing")}, alertPayload, "set", "message: no such key: nothing"},
		{"a set of dyn type that is not a string", "", []perch.Step{set("title", "payload.count")}, alertPayload, "set", "not a string"},
		{"a bad severity", "", []perch.Step{set("title", `"changed"`), set("severity", `"critical"`)}, nil, "set", `"critical" is not info, warning or error`},
		{"a javascript: link", "", []perch.Step{set("title", `"changed"`), set("url", `"javascript:alert(document.cookie)"`)}, nil, "set", "url: must be empty or an http:// or https:// address"},
		{"a file: link from the payload", "", []perch.Step{set("url", "payload.link")}, map[string]any{"link": "file:///etc/passwd"}, "set", "url: must be"},
		{"a data: link", "", []perch.Step{set("url", `"data:text/html,<script>alert(1)</script>"`)}, nil, "set", "url: must be"},
		{"a relative link", "", []perch.Step{set("url", `"/org/billing"`)}, nil, "set", "url: must be"},
		{"a link too long", "", []perch.Step{set("url", `"https://example.com/" + payload.path`)}, map[string]any{"path": strings.Repeat("a", perch.MaxURL)}, "set", "url: must be"},
		{"a throttle key that fails", "", []perch.Step{{Throttle: &perch.ThrottleStep{Key: "payload.who", Max: 1, Per: minute}}}, nil, "throttle", "key: no such key: who"},
		{"the cost limit", `payload.items.map(a, payload.items.map(b, a + b)).size() > 0`, []perch.Step{set("title", `"x"`)}, map[string]any{"items": bigList}, "condition", "cost limit exceeded"},
		{"a string that grows fourfold per call", "", []perch.Step{set("title", `"aaaaaaaaaa"`+strings.Repeat(`.replace("a", "aaaa")`, 12))}, nil, "set", "cost limit exceeded"},
		// Each costs about 8,000, under the limit of one expression; seven are over the run's.
		{"the cost limit over several expressions", "", []perch.Step{
			set("title", `payload.items.filter(i, i.size() > 0).size() > 0 ? "a" : "b"`),
			set("title", `payload.items.filter(i, i.size() > 0).size() > 0 ? "a" : "b"`),
			set("title", `payload.items.filter(i, i.size() > 0).size() > 0 ? "a" : "b"`),
			set("title", `payload.items.filter(i, i.size() > 0).size() > 0 ? "a" : "b"`),
			set("title", `payload.items.filter(i, i.size() > 0).size() > 0 ? "a" : "b"`),
			set("title", `payload.items.filter(i, i.size() > 0).size() > 0 ? "a" : "b"`),
			set("title", `payload.items.filter(i, i.size() > 0).size() > 0 ? "a" : "b"`),
		}, map[string]any{"items": bigList[:500]}, "set", "cost limit is exceeded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := input()
			in.Payload = tt.payload
			allow := func(context.Context, string, int, time.Duration) (bool, error) { return true, nil }
			r := mustCompile(t, tt.condition, tt.steps...).Run(t.Context(), in, Hooks{Throttle: allow})
			if r.Status != perch.RunFailed || !reflect.DeepEqual(r.Notification, alert) || r.Forwards != nil {
				t.Fatalf("Run = %s %+v, want failed with the notification unchanged", r.Status, r.Notification)
			}
			var failed *perch.RunStep
			for i := range r.Steps {
				if r.Steps[i].Status == "failed" {
					failed = &r.Steps[i]
				}
			}
			if failed == nil || failed.Type != tt.failed || !strings.Contains(failed.Detail, tt.detail) {
				t.Errorf("Steps = %v, want a failed %s step saying %q", r.Steps, tt.failed, tt.detail)
			}
		})
	}
}

func TestRunStopsWhenTheContextIsCancelled(t *testing.T) {
	t.Parallel()
	big := make([]any, 2000)
	for i := range big {
		big[i] = 1.0
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p := mustCompile(t, "payload.items.exists(i, i == 2.0)", perch.Step{Drop: &perch.DropStep{}})
	r := p.Run(ctx, Input{Notification: alert, Payload: map[string]any{"items": big}}, Hooks{})
	if r.Status != perch.RunFailed {
		t.Errorf("Status = %q, steps %v", r.Status, r.Steps)
	}
}

// TestRunPayloadFromBody: ingest hands the sender's body undecoded; it is
// read as the payload map, and a body that is not a JSON object is an empty
// payload rather than a failure.
func TestRunPayloadFromBody(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, `has(payload.alert) && payload.alert.priority == "P1" && payload.count >= 3`, perch.Step{Drop: &perch.DropStep{}})
	body := NewPayload([]byte(`{"alert": {"priority": "P1"}, "count": 3}`))
	for i := range 2 { // the second run reads what the first decoded
		if r := p.Run(t.Context(), Input{Notification: alert, Body: body}, Hooks{}); r.Status != perch.RunDropped {
			t.Fatalf("run %d: Status = %q, want dropped (steps %+v)", i, r.Status, r.Steps)
		}
	}
	for _, raw := range []string{`[1, 2]`, `not json`, `null`, ``} {
		if r := p.Run(t.Context(), Input{Notification: alert, Body: NewPayload([]byte(raw))}, Hooks{}); r.Matched || r.Status != "" {
			t.Errorf("body %q: Matched = %v, Status = %q, want no match", raw, r.Matched, r.Status)
		}
	}
}

// A set step writes at most maxEventText bytes into a field, cut at a
// character's boundary: the cost bounds of expressions count on it.
func TestRunSetClipsLongText(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, "", perch.Step{Set: map[string]string{"message": `string(payload.body)`, "title": `string(payload.title)`}})
	long := strings.Repeat("é", maxEventText) // two bytes each
	r := p.Run(t.Context(), Input{Notification: alert, Payload: map[string]any{"body": long, "title": "short"}}, Hooks{})
	if r.Status != perch.RunDelivered || len(r.Notification.Message) != maxEventText || !utf8.ValidString(r.Notification.Message) || r.Notification.Title != "short" {
		t.Fatalf("status %q, message of %d bytes (valid %v), title %q", r.Status, len(r.Notification.Message), utf8.ValidString(r.Notification.Message), r.Notification.Title)
	}
}

// TestRunPriorityAndTags: a condition reads event.priority (the severity's
// when the sender gave none) and event.tags, and a set step changes the
// priority by number or name; anything else fails the run.
func TestRunPriorityAndTags(t *testing.T) {
	t.Parallel()
	in := input()
	in.Notification.Tags = []string{"db", "prod"}
	p := mustCompile(t, `event.priority == 4 && "prod" in event.tags`, perch.Step{Set: map[string]string{"priority": `"urgent"`}})
	r := p.Run(t.Context(), in, Hooks{}) // an error without a priority is high
	if !r.Matched || r.Status != perch.RunDelivered || r.Notification.Priority != perch.PriorityUrgent {
		t.Fatalf("Run = matched %v, %s, priority %d; want urgent (steps %v)", r.Matched, r.Status, r.Notification.Priority, r.Steps)
	}
	in.Notification.Tags = nil
	if r := p.Run(t.Context(), in, Hooks{}); r.Matched {
		t.Errorf("matched without the tag")
	}
	r = mustCompile(t, "", perch.Step{Set: map[string]string{"priority": `string(event.priority - 2)`}}).Run(t.Context(), input(), Hooks{})
	if r.Notification.Priority != perch.PriorityLow {
		t.Errorf("priority %d, want 2 (from a number)", r.Notification.Priority)
	}
	r = mustCompile(t, "", perch.Step{Set: map[string]string{"priority": `"loud"`}}).Run(t.Context(), input(), Hooks{})
	if r.Status != perch.RunFailed || r.Notification.Priority != 0 {
		t.Errorf("a bad priority: %s, priority %d; want the run failed, the notification unchanged", r.Status, r.Notification.Priority)
	}
}
