package senders

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
)

// TestInboundRich: the rich members come into the event as given,
// names and numbers both for priority, an http action keeping its method,
// headers and body for the server, and a view action only its link.
func TestInboundRich(t *testing.T) {
	t.Parallel()
	body := `{"title": "Disk full", "priority": "HIGH", "tags": ["warning", " db-1 "], "icon": "https://example.com/db.png",
		"markdown": true, "deliver_at": "2026-12-24T09:00:00+01:00",
		"actions": [
			{"type": "view", "label": "Open dashboard", "url": "https://grafana.example.com/d/1"},
			{"Type": "HTTP", "label": "Restart", "url": "https://ops.example.com/restart", "method": "put",
			 "headers": {"authorization": "Bearer s3cret"}, "body": "{\"host\":\"db-1\"}"},
			{"type": "http", "label": "Ping", "url": "https://ops.example.com/ping"}
		]}`
	res, err := Inbound([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	e := res.Events[0]
	want := perch.Event{Tab: perch.TabInbound, Title: "Disk full", Severity: perch.SeverityInfo, Source: perch.SourceInbound,
		Priority: perch.PriorityHigh, Tags: []string{"warning", "db-1"}, Icon: "https://example.com/db.png", Markdown: true,
		DeliverAt: time.Date(2026, 12, 24, 8, 0, 0, 0, time.UTC),
		Actions: []perch.NotificationAction{
			{ID: "a1", Type: "view", Label: "Open dashboard", URL: "https://grafana.example.com/d/1"},
			{ID: "a2", Type: "http", Label: "Restart", Request: &perch.ActionRequest{Method: "PUT", URL: "https://ops.example.com/restart",
				Headers: map[string]string{"Authorization": "Bearer s3cret"}, Body: `{"host":"db-1"}`}},
			{ID: "a3", Type: "http", Label: "Ping", Request: &perch.ActionRequest{Method: "POST", URL: "https://ops.example.com/ping"}},
		}}
	if !e.DeliverAt.Equal(want.DeliverAt) {
		t.Errorf("deliver_at %v, want %v", e.DeliverAt, want.DeliverAt)
	}
	e.DeliverAt = want.DeliverAt
	if !reflect.DeepEqual(e, want) {
		t.Errorf("event\n got %+v\nwant %+v", e, want)
	}
	for in, p := range map[string]int{`1`: 1, `5`: 5, `"3"`: 3, `"min"`: 1, `" urgent "`: 5, `"Default"`: 3} {
		res, err := Inbound([]byte(`{"title": "T", "priority": ` + in + `}`))
		if err != nil || res.Events[0].Priority != p {
			t.Errorf("priority %s: %+v, %v; want %d", in, res.Events, err, p)
		}
	}
	res, err = Inbound([]byte(`{"title": "T", "delay": "90m"}`))
	if err != nil || res.Events[0].Delay != 90*time.Minute {
		t.Errorf("delay 90m: %+v, %v", res.Events, err)
	}
	res, err = Inbound([]byte(`{"title": "T"}`))
	if err != nil || res.Events[0].Priority != 0 {
		t.Errorf("no priority: %+v, %v; want 0 (derived later)", res.Events, err)
	}
}

// TestInboundRichBadRequest: each bad rich member is named in the message
// and in fields, with every problem at once.
func TestInboundRichBadRequest(t *testing.T) {
	t.Parallel()
	view := func(url string) string { return `{"type": "view", "label": "Open", "url": "` + url + `"}` }
	tests := []struct{ name, members, field, what string }{
		{"unknown priority", `"priority": "critical"`, "priority", "must be 1 to 5 or min, low, default, high or urgent"},
		{"priority 0", `"priority": 0`, "priority", "must be 1 to 5 or min, low, default, high or urgent"},
		{"priority 6", `"priority": 6`, "priority", "must be 1 to 5 or min, low, default, high or urgent"},
		{"priority 2.5", `"priority": 2.5`, "priority", "must be 1 to 5 or min, low, default, high or urgent"},
		{"a 6th tag", `"tags": ["a", "b", "c", "d", "e", "f"]`, "tags", "must hold at most 5 tags"},
		{"tags as a string", `"tags": "a,b"`, "tags", "must be an array of strings"},
		{"a blank tag", `"tags": ["ok", " "]`, "tags[1]", "must not be blank"},
		{"a long tag", `"tags": ["` + strings.Repeat("t", 33) + `"]`, "tags[0]", "must be at most 32 characters"},
		{"a number tag", `"tags": [7]`, "tags[0]", "must be a string"},
		{"an http icon", `"icon": "http://example.com/i.png"`, "icon", "must be an https:// address"},
		{"a javascript icon", `"icon": "javascript:alert(1)"`, "icon", "must be an https:// address"},
		{"markdown as a string", `"markdown": "yes"`, "markdown", "must be true or false"},
		{"a 4th action", `"actions": [` + strings.Repeat(view("https://a.example")+",", 3) + view("https://a.example") + `]`, "actions", "must hold at most 3 actions"},
		{"an exec action", `"actions": [{"type": "exec", "label": "rm", "url": "https://a.example"}]`, "actions[0].type", "must be view or http"},
		{"no type", `"actions": [{"label": "x", "url": "https://a.example"}]`, "actions[0].type", "is required: view or http"},
		{"a javascript: URL", `"actions": [` + view("javascript:alert(document.cookie)") + `]`, "actions[0].url", "must be an http:// or https:// address"},
		{"no URL", `"actions": [{"type": "view", "label": "x"}]`, "actions[0].url", "is required"},
		{"no label", `"actions": [{"type": "view", "url": "https://a.example"}]`, "actions[0].label", "is required"},
		{"a long label", `"actions": [{"type": "view", "label": "` + strings.Repeat("l", 41) + `", "url": "https://a.example"}]`, "actions[0].label", "must be at most 40 characters"},
		{"a view with a body", `"actions": [{"type": "view", "label": "x", "url": "https://a.example", "body": "b"}]`, "actions[0].body", "is for http actions only"},
		{"a bad method", `"actions": [{"type": "http", "label": "x", "url": "https://a.example", "method": "TRACE"}]`, "actions[0].method", "must be GET, POST, PUT, PATCH or DELETE"},
		{"a reserved header", `"actions": [{"type": "http", "label": "x", "url": "https://a.example", "headers": {"host": "evil"}}]`, "actions[0].headers", "may not set Host: Perch sets it"},
		{"a header with a line break", `"actions": [{"type": "http", "label": "x", "url": "https://a.example", "headers": {"X-A": "a\r\nB: b"}}]`, "actions[0].headers.X-A", "must be one line of at most 1024 bytes"},
		{"a large body", `"actions": [{"type": "http", "label": "x", "url": "https://a.example", "body": "` + strings.Repeat("b", 4097) + `"}]`, "actions[0].body", "must be at most 4096 bytes"},
		{"an action that is no object", `"actions": ["open"]`, "actions[0]", "must be an object"},
		{"a bad time", `"deliver_at": "tomorrow"`, "deliver_at", "must be a time in RFC 3339, such as 2026-12-24T09:00:00Z"},
		{"both times", `"deliver_at": "2026-12-24T09:00:00Z", "delay": "1h"`, "deliver_at", "cannot be given with delay: give one"},
		{"a bad delay", `"delay": "soon"`, "delay", "must be a duration such as 30m or 2h45m"},
		{"a negative delay", `"delay": "-5m"`, "delay", "must be positive"},
		{"a delay of 8 days", `"delay": "192h"`, "delay", "must be at most 7 days (168h)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Inbound([]byte(`{"title": "T", ` + tt.members + `}`))
			e, ok := errors.AsType[*perch.Error](err)
			if !ok || e.Code != perch.EBADREQUEST {
				t.Fatalf("err = %v, want bad_request", err)
			}
			if got := e.Fields[tt.field]; got != tt.what {
				t.Errorf("fields = %v, want %s: %q", e.Fields, tt.field, tt.what)
			}
			if !strings.Contains(e.Message, tt.field+" "+tt.what+".") {
				t.Errorf("message %q does not say %s %s", e.Message, tt.field, tt.what)
			}
		})
	}
}
