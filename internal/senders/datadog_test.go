package senders

import (
	"net/http"
	"testing"

	"github.com/perch-dev/perch"
)

const cpuSummary = "CPU has been above 90% for 10 minutes. Check the runbook. " +
	"system.cpu.user over host:web-1 was > 90.0 on average during the last 10m."

func TestDatadog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body []byte
		want perch.Event
	}{
		// Custom payloads carry alert_transition; alert_type rates a trigger.
		{"triggered, alert_type error", mustRead(t, "datadog/custom.triggered.json"), perch.Event{Severity: perch.SeverityError,
			Title: "CPU above 90% on web hosts", Message: "Triggered on host:web-1 · Acme\n" + cpuSummary,
			URL: "https://app.datadoghq.com/event/event?id=7720014455660011001"}},
		{"triggered, alert_type warning", mustRead(t, "datadog/custom.triggered.warning.json"), perch.Event{Severity: perch.SeverityWarning,
			Title: "CPU above 90% on web hosts", Message: "Triggered on host:web-1 · Acme\n" + cpuSummary,
			URL: "https://app.datadoghq.com/event/event?id=7720014455660011002"}},
		{"re-triggered without alert_type", mustRead(t, "datadog/custom.retriggered.no_type.json"), perch.Event{Severity: perch.SeverityError,
			Title: "CPU above 90% on web hosts", Message: "Re-Triggered on host:web-1 · Acme\n" + cpuSummary,
			URL: "https://app.datadoghq.com/event/event?id=7720014455660011003"}},
		{"recovered", mustRead(t, "datadog/custom.recovered.json"), perch.Event{Severity: perch.SeverityInfo,
			Title: "CPU above 90% on web hosts", Message: "Recovered on host:web-1 · Acme\n" + cpuSummary,
			URL: "https://app.datadoghq.com/event/event?id=7720014455660011004"}},
		{"no data outranks alert_type", mustRead(t, "datadog/custom.no_data.json"), perch.Event{Severity: perch.SeverityWarning,
			Title: "CPU above 90% on web hosts", Message: "No Data on host:web-1 · Acme\n" + cpuSummary,
			URL: "https://app.datadoghq.com/event/event?id=7720014455660011005"}},
		{"numbers where strings were meant, url member, priority kept", mustRead(t, "datadog/custom.numbers.json"), perch.Event{Severity: perch.SeverityWarning,
			Title: "[P2] Checkout error rate elevated", Message: "Warn on service:checkout,env:prod\nError rate above 2% for 5 minutes.",
			URL: "https://app.datadoghq.eu/monitors/5512"}},
		{"event without transition, rated by alert_type", mustRead(t, "datadog/custom.event.info.json"), perch.Event{Severity: perch.SeverityInfo,
			Title: "Deployment of checkout v4.2.0 finished", Message: "deploy-runner-3\nDeployed by the release pipeline.",
			URL: "https://app.datadoghq.com/event/explorer?event=AQAAAYdeploy"}},
		{"nothing to rate by is info", mustRead(t, "datadog/custom.no_prefix.json"), perch.Event{Severity: perch.SeverityInfo,
			Title: "Weekly SLO report ready", Message: "All SLOs met."}},

		// The default payload has no alert_transition: the title prefix rates it.
		{"default payload triggered, link from the body", mustRead(t, "datadog/default.triggered.json"), perch.Event{Severity: perch.SeverityError,
			Title:   "[P1] Database health check failing",
			Message: "Triggered on db:primary · Acme\nChecks the primary database answers within 500 ms. The monitor was last triggered at Sat Mar 14 2026 09:10:00 UTC.",
			URL:     "https://app.datadoghq.com/monitors/6613?"}},
		{"default payload warn", mustRead(t, "datadog/default.warn.json"), perch.Event{Severity: perch.SeverityWarning,
			Title: "Replication lag", Message: "Warn on host:db-2 · Acme\nReplication lag above 30s."}},
		{"default payload recovered", mustRead(t, "datadog/default.recovered.json"), perch.Event{Severity: perch.SeverityInfo,
			Title: "Replication lag", Message: "Recovered · Acme\nReplication lag back under 30s."}},
		{"default payload no data", mustRead(t, "datadog/default.no_data.json"), perch.Event{Severity: perch.SeverityWarning,
			Title: "Replication lag", Message: "No Data on host:db-2 · Acme\nNo data from the agent on db-2."}},

		{"prefix trigger outranks a mild alert_type", []byte(`{"title":"[Triggered] Queue depth","alert_type":"info"}`),
			perch.Event{Severity: perch.SeverityError, Title: "Queue depth", Message: "Triggered"}},
		{"re-triggered prefix", []byte(`{"title":"[Re-Triggered on {queue:orders}] Queue depth"}`),
			perch.Event{Severity: perch.SeverityError, Title: "Queue depth", Message: "Re-Triggered on queue:orders"}},
		{"warning prefix", []byte(`{"title":"[Warning] Queue depth"}`),
			perch.Event{Severity: perch.SeverityWarning, Title: "Queue depth", Message: "Warning"}},
		{"prefix in another case", []byte(`{"title":"[recovered] Queue depth"}`),
			perch.Event{Severity: perch.SeverityInfo, Title: "Queue depth", Message: "Recovered"}},
		{"triggered with alert_type success", []byte(`{"title":"Synthetic check","alert_transition":"Triggered","alert_type":"success"}`),
			perch.Event{Severity: perch.SeverityInfo, Title: "Synthetic check", Message: "Triggered"}},
		{"unknown transition falls back on the prefix", []byte(`{"title":"[No Data] Heartbeat","alert_transition":"$ALERT_TRANSITION"}`),
			perch.Event{Severity: perch.SeverityWarning, Title: "Heartbeat", Message: "No Data"}},
		{"a bracketed word that is not a transition stays", []byte(`{"title":"[Triggered] [TEST] [staging] Host down"}`),
			perch.Event{Severity: perch.SeverityError, Title: "[TEST] [staging] Host down", Message: "Triggered"}},
		{"a lookalike word is not a transition", []byte(`{"title":"[Triggers] Host down","alert_type":"warning"}`),
			perch.Event{Severity: perch.SeverityWarning, Title: "[Triggers] Host down"}},
		{"title that is only a prefix", []byte(`{"title":"[Triggered]"}`),
			perch.Event{Severity: perch.SeverityError, Title: "[Triggered]", Message: "Triggered"}},
		{"alert_title when title is absent", []byte(`{"alert_title":"Disk full","alert_transition":"Recovered","event_url":"https://app.datadoghq.com/event/1"}`),
			perch.Event{Severity: perch.SeverityInfo, Title: "Disk full", Message: "Recovered", URL: "https://app.datadoghq.com/event/1"}},
		{"link that is not a web page is dropped", []byte(`{"title":"[Triggered] X","link":"javascript:alert(1)"}`),
			perch.Event{Severity: perch.SeverityError, Title: "X", Message: "Triggered"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Datadog(http.Header{}, tt.body)
			checkResult(t, got, err, events(monitorEvent(tt.want)))
		})
	}
}

func TestDatadogBadRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, message string
	}{
		{"empty body", "", "The body is empty; a JSON object is required."},
		{"not JSON", "[Triggered] Disk full", "The body is not valid JSON."},
		{"array", `[{"title":"Disk full"}]`, "The body must be a JSON object."},
		{"no title", `{"alert_transition":"Triggered","body":"Disk full"}`, "title is required."},
		{"blank title", `{"title":"  "}`, "title is required."},
		{"null title", `{"title":null}`, "title is required."},
		{"title is an object", `{"title":{"text":"Disk full"}}`, "title must be a string, not an object."},
		{"link is an array", `{"title":"Disk full","link":["https://a"]}`, "link must be a string, not an array."},
		{"org is a string", `{"title":"Disk full","org":"Acme"}`, "org must be an object, not a string."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Datadog(http.Header{}, []byte(tt.body))
			checkBadRequest(t, err, tt.message)
			if len(res.Events) != 0 {
				t.Errorf("events = %#v, want none", res.Events)
			}
		})
	}
}
