package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/senders"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/workflow"
)

// placeholderForwardURL stands in for the URL the installer of "Forward
// errors" enters.
const placeholderForwardURL = "https://hooks.example.com/perch"

// compiledStarter compiles the starter id as an installer would leave it:
// its blanks (a forward step's URL) filled in.
func compiledStarter(tb testing.TB, id string) *workflow.Program {
	tb.Helper()
	for _, w := range starterWorkflows() {
		if w.ID != id {
			continue
		}
		for i := range w.Steps {
			if f := w.Steps[i].Forward; f != nil && f.URL == "" {
				f.URL = placeholderForwardURL
			}
		}
		p, err := workflow.Compile(w)
		if err != nil {
			tb.Fatalf("the starter %s does not compile: %v", id, err)
		}
		return p
	}
	tb.Fatalf("no starter %s", id)
	return nil
}

// delivery is a sender's delivery, read from the senders' test payloads:
// the notification its receiver makes of it and its body as a workflow's
// payload.
type delivery struct {
	n       perch.Notification
	payload map[string]any
}

// deliveryOf parses the senders' test payload file (under
// internal/senders/testdata) as sender does, after edit (which may be nil)
// changes its text.
func deliveryOf(tb testing.TB, sender, file string, h http.Header, edit func(string) string) delivery {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "senders", "testdata", filepath.FromSlash(file)))
	if err != nil {
		tb.Fatal(err)
	}
	body := string(b)
	if edit != nil {
		if body = edit(body); body == string(b) {
			tb.Fatalf("the edit of %s changed nothing", file)
		}
	}
	parse := map[string]func(http.Header, []byte) (senders.Result, error){
		"incidents": senders.PagerDuty, "code-host": senders.GitHub, "monitoring": senders.Datadog,
	}[sender]
	res, err := parse(h, []byte(body))
	if err != nil || len(res.Events) != 1 {
		tb.Fatalf("%s: %d events, %v", file, len(res.Events), err)
	}
	e := res.Events[0]
	d := delivery{n: perch.Notification{Tab: e.Tab, Title: e.Title, Message: e.Message, Severity: e.Severity, Source: e.Source,
		URL: e.URL, Scope: perch.Scope{Type: perch.ScopeTeam, ID: "team_ops"}}}
	if err := json.Unmarshal([]byte(body), &d.payload); err != nil {
		tb.Fatal(err)
	}
	return d
}

func ghEvent(event string) http.Header { return http.Header{"X-Github-Event": {event}} }

// hooked records what a run asked of its hooks.
type hooked struct {
	throttled []string // keys
	digested  []string // keys
	over      bool     // Throttle answers "over the limit"
}

func (h *hooked) hooks() workflow.Hooks {
	return workflow.Hooks{
		Throttle: func(_ context.Context, key string, max int, per time.Duration) (bool, error) {
			h.throttled = append(h.throttled, fmt.Sprintf("%s %s max %d", key, per, max))
			return !h.over, nil
		},
		Digest: func(_ context.Context, key string, window time.Duration, _ perch.Notification) error {
			h.digested = append(h.digested, key+" "+window.String())
			return nil
		},
	}
}

func TestStarterWorkflowsDoWhatTheySay(t *testing.T) {
	t.Parallel()
	night := time.Date(2026, 3, 14, 23, 30, 0, 0, time.UTC)
	noon := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	urgency := func(from, to string) func(string) string {
		return func(s string) string { return strings.ReplaceAll(s, `"urgency": "`+from+`"`, `"urgency": "`+to+`"`) }
	}
	retitled := func(s string) string { return strings.Replace(s, "[Triggered on", "[Re-Triggered on", 1) }

	pdV2Low := deliveryOf(t, "incidents", "pagerduty/v2.incident.trigger.low.json", nil, nil)
	pdV2High := deliveryOf(t, "incidents", "pagerduty/v2.incident.trigger.low.json", nil, urgency("low", "high"))
	pdV3High := deliveryOf(t, "incidents", "pagerduty/v3.incident.acknowledged.json", nil, nil)
	pdV3Low := deliveryOf(t, "incidents", "pagerduty/v3.incident.acknowledged.json", nil, urgency("high", "low"))
	push := deliveryOf(t, "code-host", "github/push.branch.json", ghEvent("push"), nil)
	pr := deliveryOf(t, "code-host", "github/pull_request.opened.json", ghEvent("pull_request"), nil)
	ddTriggered := deliveryOf(t, "monitoring", "datadog/custom.triggered.json", nil, nil)
	ddRetriggered := deliveryOf(t, "monitoring", "datadog/custom.retriggered.no_type.json", nil, nil)
	ddDefaultRetriggered := deliveryOf(t, "monitoring", "datadog/default.triggered.json", nil, retitled)

	for _, c := range []struct {
		name     string
		starter  string
		in       delivery
		at       time.Time
		over     bool // the throttle is over its limit
		status   string
		severity string // after the run; "" when unchanged
		title    string // after the run; "" when unchanged
		hook     string // the throttle or digest key and window the run asked for
	}{
		{name: "a low-urgency V2 incident is dropped", starter: starterPagerDutyHigh, in: pdV2Low, status: perch.RunDropped},
		{name: "a low-urgency V3 incident is dropped", starter: starterPagerDutyHigh, in: pdV3Low, status: perch.RunDropped},
		{name: "a high-urgency V2 incident comes through", starter: starterPagerDutyHigh, in: pdV2High},
		{name: "a high-urgency V3 incident comes through", starter: starterPagerDutyHigh, in: pdV3High},
		{name: "urgency is only read from incidents", starter: starterPagerDutyHigh, in: push},

		{name: "a push is digested per repository", starter: starterGitHubPushes, in: push, status: perch.RunDigested,
			hook: starterGitHubPushes + "/0/acme/widgets 15m0s"},
		{name: "a pull request comes through", starter: starterGitHubPushes, in: pr},

		{name: "a re-triggered alert is escalated", starter: starterDatadogEscalate, in: ddRetriggered, status: perch.RunDelivered,
			severity: perch.SeverityError, title: "Still triggered: CPU above 90% on web hosts",
			hook: starterDatadogEscalate + "/0/4411 10m0s max 1"},
		{name: "a re-triggered alert is held back past one per monitor", starter: starterDatadogEscalate, in: ddRetriggered, over: true,
			status: perch.RunThrottled, hook: starterDatadogEscalate + "/0/4411 10m0s max 1"},
		{name: "the default payload is escalated by its title", starter: starterDatadogEscalate, in: ddDefaultRetriggered,
			status: perch.RunDelivered, severity: perch.SeverityError, title: "Still triggered: [P1] Database health check failing",
			hook: starterDatadogEscalate + "/0/[P1] Database health check failing 10m0s max 1"},
		{name: "a first trigger is left alone", starter: starterDatadogEscalate, in: ddTriggered},

		{name: "an error is forwarded", starter: starterForwardErrors, in: ddTriggered, status: perch.RunDelivered},
		{name: "info is not forwarded", starter: starterForwardErrors, in: push},

		{name: "info at night is digested per tab", starter: starterQuietHours, in: push, at: night, status: perch.RunDigested,
			hook: starterQuietHours + "/0/Code 1h0m0s"},
		{name: "info from 22:00 is digested", starter: starterQuietHours, in: push, at: night.Add(-90 * time.Minute), status: perch.RunDigested,
			hook: starterQuietHours + "/0/Code 1h0m0s"},
		{name: "info until 06:59 is digested", starter: starterQuietHours, in: push, at: night.Add(7*time.Hour + 29*time.Minute),
			status: perch.RunDigested, hook: starterQuietHours + "/0/Code 1h0m0s"},
		{name: "info from 07:00 comes through", starter: starterQuietHours, in: push, at: night.Add(7*time.Hour + 30*time.Minute)},
		{name: "info by day comes through", starter: starterQuietHours, in: push, at: noon},
		{name: "an error at night comes through", starter: starterQuietHours, in: ddTriggered, at: night},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &hooked{over: c.over}
			at := c.at
			if at.IsZero() {
				at = noon
			}
			r := compiledStarter(t, c.starter).Run(t.Context(), workflow.Input{Notification: c.in.n, Payload: c.in.payload, Now: at}, h.hooks())
			if r.Status != c.status {
				t.Fatalf("status %q (steps %+v), want %q", r.Status, r.Steps, c.status)
			}
			want := c.in.n
			if c.severity != "" {
				want.Severity = c.severity
			}
			if c.title != "" {
				want.Title = c.title
			}
			if !reflect.DeepEqual(r.Notification, want) {
				t.Errorf("notification\n%+v\nwant\n%+v", r.Notification, want)
			}
			var asked []string
			asked = append(append(asked, h.throttled...), h.digested...)
			if got := strings.Join(asked, ", "); got != c.hook {
				t.Errorf("asked the hooks for %q, want %q", got, c.hook)
			}
			wantForward := c.starter == starterForwardErrors && c.status == perch.RunDelivered
			if got := len(r.Forwards) == 1 && r.Forwards[0].URL == placeholderForwardURL; got != wantForward || len(r.Forwards) > 1 {
				t.Errorf("forwards %+v, want one to the placeholder: %v", r.Forwards, wantForward)
			}
		})
	}
}

// TestStarterWorkflowsAreFitForTheMarketplace checks what every starter
// must be: compilable once its blanks are filled, and carrying nothing the
// marketplace may not show (a forward URL or secret, an e-mail target).
func TestStarterWorkflowsAreFitForTheMarketplace(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, w := range starterWorkflows() {
		if seen[w.ID] || seen[w.Name] {
			t.Errorf("%s (%q) is there twice", w.ID, w.Name)
		}
		seen[w.ID], seen[w.Name] = true, true
		compiledStarter(t, w.ID)
		if _, err := workflow.Compile(w); err != nil && !strings.Contains(err.Error(), "forward") {
			t.Errorf("%s fails to compile for something other than its forward URL: %v", w.ID, err)
		}
		for i, s := range w.Steps {
			if s.Forward != nil && (s.Forward.URL != "" || s.Forward.Secret != "") || s.Email != nil {
				t.Errorf("%s: step %d carries a target the marketplace never shows: %+v", w.ID, i, s)
			}
		}
	}
}

func TestSeedStartersListsThemOnceByPerch(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ctx := context.Background()
		for range 2 {
			if err := a.srv.SeedStarters(ctx); err != nil {
				t.Fatalf("SeedStarters: %v", err)
			}
		}
		listed := listings(t, s)
		for _, w := range starterWorkflows() {
			l := listed[w.ID]
			if l == nil {
				t.Fatalf("%s is not listed", w.ID)
			}
			if l.OrgName != "Perch" || l.Workflow.Version != 1 || l.Workflow.Name != w.Name || l.Workflow.Condition != w.Condition {
				t.Errorf("%s listed as %+v by %q, want %+v by Perch at version 1", w.ID, l.Workflow, l.OrgName, w)
			}
		}
		if len(listed) != len(starterWorkflows()) {
			t.Errorf("%d listings, want %d", len(listed), len(starterWorkflows()))
		}

		// A later release changes a starter: it is republished as a new
		// version, and the others stay as they were.
		a.clock.Advance(time.Hour)
		next := starterWorkflows()
		next[0].Steps = append(next[0].Steps, perch.Step{Set: map[string]string{"tab": `"Incidents"`}})
		next[0].Steps[0], next[0].Steps[1] = next[0].Steps[1], next[0].Steps[0]
		if err := a.srv.seedStarters(ctx, next); err != nil {
			t.Fatal(err)
		}
		after := listings(t, s)
		for _, w := range next {
			l, want := after[w.ID], listed[w.ID]
			if w.ID == next[0].ID {
				if l.Workflow.Version != 2 || len(l.Workflow.Steps) != 2 || !l.PublishedAt.After(want.PublishedAt) {
					t.Errorf("the changed %s is listed at version %d with %d steps, published %v: want version 2, 2 steps, later than %v",
						w.ID, l.Workflow.Version, len(l.Workflow.Steps), l.PublishedAt, want.PublishedAt)
				}
				continue
			}
			if l.Workflow.Version != 1 || !l.PublishedAt.Equal(want.PublishedAt) {
				t.Errorf("the unchanged %s is listed at version %d, published %v: want as before", w.ID, l.Workflow.Version, l.PublishedAt)
			}
		}
	})
}

// listings answers the whole marketplace by workflow id, failing when a
// workflow is listed twice.
func listings(tb testing.TB, s *store.Store) map[string]*store.Listing {
	tb.Helper()
	out := map[string]*store.Listing{}
	page := perch.Page{Limit: 2} // pages of two: the cursors must take the starters' ids
	for {
		ls, next, err := s.Marketplace(context.Background(), "", store.SortPopular, page)
		if err != nil {
			tb.Fatalf("Marketplace: %v", err)
		}
		for _, l := range ls {
			if out[l.Workflow.ID] != nil {
				tb.Fatalf("%s is listed twice", l.Workflow.ID)
			}
			out[l.Workflow.ID] = l
		}
		if next == "" {
			return out
		}
		page.Cursor = next
	}
}
