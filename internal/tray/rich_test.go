package tray

import (
	"cmp"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
)

// rich is a notification with the fields of issue 43.
func rich(id string, priority int, silent bool) step {
	return func(m *Model) Change {
		return m.Receive(&perch.Notification{
			ID: id, Tab: "Incidents", Title: "API down " + id, Message: "**5xx** on [api-1](https://grafana.example.com)",
			Markdown: true, Severity: perch.SeverityError, Priority: priority, Tags: []string{"rotating_light", "prod"},
			Actions: []perch.NotificationAction{
				{ID: "a1", Type: perch.ActionView, Label: "Runbook", URL: "https://runbooks.example.com/api"},
				{ID: "a2", Type: perch.ActionHTTP, Label: "Restart"},
				{ID: "a3", Type: "exec", Label: "Unknown kind"},
			},
		}, silent)
	}
}

func TestRichPopups(t *testing.T) {
	t.Parallel()
	const urgent, min = perch.PriorityUrgent, perch.PriorityMin
	// ids names each popup by its notification's id, a summary by its text.
	ids := func(ps []Popup) string {
		var s []string
		for _, p := range ps {
			s = append(s, cmp.Or(p.ID, p.Summary))
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		name  string
		steps []step
		want  string
	}{
		{"default priority pops up", []step{rich("1", 3, false)}, "1"},
		{"min never pops up", []step{rich("1", min, false)}, ""},
		{"silent never pops up", []step{rich("1", urgent, true)}, ""},
		{"urgent breaks through pause", []step{pause, rich("1", 4, false), rich("2", urgent, false)}, "2"},
		{"a paused replay raises its urgent ones", []step{connects, pause, rich("1", 3, false), rich("2", urgent, false), replayDone}, "2"},
		{"a replay leaves out min and silent", []step{connects, rich("1", min, false), rich("2", 3, true), rich("3", 3, false), replayDone}, "3"},
		{"a paused replay of many urgent ones is one summary", []step{connects, pause,
			rich("1", urgent, false), rich("2", urgent, false), rich("3", urgent, false), rich("4", urgent, false), rich("5", 3, false), replayDone},
			"4 new notifications"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := play(New(server, DefaultLimits), tt.steps...)
			if ids(got) != tt.want {
				t.Errorf("popups %q, want %q", ids(got), tt.want)
			}
		})
	}
}

func TestRichItem(t *testing.T) {
	t.Parallel()
	m := New(server, DefaultLimits)
	_, popups := play(m, rich("7", 0, false))
	if len(popups) != 1 {
		t.Fatalf("popups %+v", popups)
	}
	p := popups[0]
	// A server from before priorities: derived from the severity.
	if p.Priority != perch.PriorityHigh || p.Summary != "🚨 API down 7" || p.Body != "5xx on api-1\nIncidents · prod" {
		t.Errorf("popup %+v", p)
	}
	if fmt.Sprint(p.Actions) != "[{a1 view Runbook https://runbooks.example.com/api} {a2 http Restart }]" {
		t.Errorf("actions %v: the unknown kind is left out", p.Actions)
	}
	it := m.View().Tabs[0].Items[0]
	if it.Text() != "🚨 API down 7" || len(it.Actions) != 2 {
		t.Errorf("item %+v", it)
	}
	labels := func() string {
		var l []string
		for _, a := range m.View().Tabs[0].Items[0].Actions {
			l = append(l, strings.TrimSpace(a.Label()))
		}
		return strings.Join(l, " | ")
	}
	if got := labels(); got != "↗ Runbook | ▶ Restart" {
		t.Errorf("labels %q", got)
	}
	for _, tt := range []struct {
		o    Outcome
		want string
	}{
		{Outcome{Running: true}, "… Restart"},
		{Outcome{Status: 200, OK: true}, "✓ Restart: done (200)"},
		{Outcome{Status: 502}, "✗ Restart: failed (502)"},
		{Outcome{Err: "not allowed"}, "✗ Restart: not allowed"},
	} {
		if !m.SetOutcome("7", "a2", tt.o) {
			t.Fatal("SetOutcome of a kept notification: false")
		}
		if got := labels(); got != "↗ Runbook | "+tt.want {
			t.Errorf("with %+v: %q", tt.o, got)
		}
	}
	if m.SetOutcome("8", "a2", Outcome{}) {
		t.Error("SetOutcome of an unknown notification: true")
	}
	if a, ok := m.Action("7", "a1"); !ok || a.URL != "https://runbooks.example.com/api" {
		t.Errorf("Action a1: %+v, %v", a, ok)
	}
	if _, ok := m.Action("7", "a3"); ok {
		t.Error("Action a3, of an unknown kind: found")
	}
	if it, _ := m.Item("7"); it.Message != "5xx on api-1" {
		t.Errorf("kept message %q: want it as plain text", it.Message)
	}
}

func TestSnooze(t *testing.T) {
	t.Parallel()
	m := New(server, DefaultLimits)
	play(m, connects, replayDone)
	until := time.Date(time.Now().Year()+1, 12, 3, 8, 0, 0, 0, time.Local)
	if !m.SetSnooze(until) || m.SetSnooze(until) {
		t.Error("SetSnooze: want a change the first time only")
	}
	if tip := m.View().Tooltip(); !strings.Contains(tip, "snoozed until "+until.Format("Mon")+" 08:00") {
		t.Errorf("tooltip %q", tip)
	}
	if !m.SetSnooze(time.Time{}) || strings.Contains(m.View().Tooltip(), "snoozed") {
		t.Errorf("snooze off: %q", m.View().Tooltip())
	}
	m.SetSnooze(time.Now().Add(-time.Minute))
	if v := m.View(); !v.Snoozed.IsZero() {
		t.Errorf("a snooze that is over shows: %v", v.Snoozed)
	}
}
