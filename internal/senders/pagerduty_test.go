package senders

import (
	"net/http"
	"testing"

	"github.com/perch-dev/perch"
)

const (
	checkoutURL = "https://acme.pagerduty.com/incidents/Q1CHK42"
	checkout    = "#42 Checkout API p99 latency above 2s"
	paymentsURL = "https://acme.pagerduty.com/incidents/Q2PAY51"
	payments    = "#51 Payment provider timeouts"
)

func TestPagerDuty(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      []byte
		webhookID string // X-Webhook-Id, when set
		want      Result
	}{
		// V3
		{name: "v3 triggered, high urgency", body: mustRead(t, "pagerduty/v3.incident.triggered.high.json"),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityError, Title: checkout + " triggered",
				Message: "Triggered on Checkout API\nAssigned to Ada Lovelace", URL: checkoutURL, DeliveryID: "01HRZ8M3J6K2D9Q4T7V1B5N0XA", Priority: perch.PriorityUrgent}))},
		{name: "v3 triggered, low urgency", body: mustRead(t, "pagerduty/v3.incident.triggered.low.json"),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityWarning, Title: "#43 Disk 80% full on db-2 triggered",
				Message: "Triggered on Checkout API\nAssigned to Grace Hopper", URL: "https://acme.pagerduty.com/incidents/Q1DSK43", DeliveryID: "01HRZ8M3J6K2D9Q4T7V1B5N0XB"}))},
		{name: "v3 X-Webhook-Id wins over the event id", body: mustRead(t, "pagerduty/v3.incident.triggered.high.json"), webhookID: "a1b2c3d4-webhook",
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityError, Title: checkout + " triggered",
				Message: "Triggered on Checkout API\nAssigned to Ada Lovelace", URL: checkoutURL, DeliveryID: "a1b2c3d4-webhook", Priority: perch.PriorityUrgent}))},
		{name: "v3 acknowledged", body: mustRead(t, "pagerduty/v3.incident.acknowledged.json"),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityWarning, Title: checkout + " acknowledged",
				Message: "Acknowledged by Ada Lovelace on Checkout API", URL: checkoutURL, DeliveryID: "01HRZ8P7A1C4E6G8J0L2N4Q6SC"}))},
		{name: "v3 unacknowledged", body: mustRead(t, "pagerduty/v3.incident.unacknowledged.json"),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: checkout + " unacknowledged",
				Message: "Unacknowledged on Checkout API\nAssigned to Ada Lovelace", URL: checkoutURL, DeliveryID: "01HRZ8P7A1C4E6G8J0L2N4Q6SD"}))},
		{name: "v3 escalated", body: mustRead(t, "pagerduty/v3.incident.escalated.json"),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityError, Title: checkout + " escalated",
				Message: "Escalated on Checkout API\nAssigned to Grace Hopper", URL: checkoutURL, DeliveryID: "01HRZ8R2B3D5F7H9K1M3P5R7TE"}))},
		{name: "v3 reassigned", body: mustRead(t, "pagerduty/v3.incident.reassigned.json"),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: checkout + " reassigned",
				Message: "Reassigned by Ada Lovelace on Checkout API\nAssigned to Grace Hopper, Linus Torvalds", URL: checkoutURL, DeliveryID: "01HRZ8R2B3D5F7H9K1M3P5R7TF"}))},
		{name: "v3 resolved", body: mustRead(t, "pagerduty/v3.incident.resolved.json"),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: checkout + " resolved",
				Message: "Resolved by Grace Hopper on Checkout API", URL: checkoutURL, DeliveryID: "01HRZ8T9C2E4G6J8L0N2Q4S6UG"}))},
		{name: "v3 reopened rates like a trigger", body: mustRead(t, "pagerduty/v3.incident.reopened.low.json"),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityWarning, Title: "#43 Disk 80% full on db-2 reopened",
				Message: "Reopened by Grace Hopper on Checkout API\nAssigned to Grace Hopper", URL: "https://acme.pagerduty.com/incidents/Q1DSK43", DeliveryID: "01HRZ8T9C2E4G6J8L0N2Q4S6UH"}))},
		{name: "v3 priority updated, incident without a number", body: mustRead(t, "pagerduty/v3.incident.priority_updated.no_number.json"),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: "Order queue backlog growing priority updated",
				Message: "Priority updated by Ada Lovelace on Checkout API\nPriority: P2", URL: "https://acme.pagerduty.com/incidents/Q1QUE44", DeliveryID: "5f0c2b9e-7d41-4c8a-9e3b-1a2d6f8c4e70"}))},
		{name: "v3 annotated: data is a note about the incident", body: mustRead(t, "pagerduty/v3.incident.annotated.json"),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: "[#42] Checkout API p99 latency above 2s annotated",
				Message: "Annotated by Ada Lovelace\nRolled back to v2.3.0; latency recovering.", URL: checkoutURL, DeliveryID: "01HRZ8W4D6F8H0K2M4P6R8T0WJ"}))},
		{name: "v3 responder added", body: mustRead(t, "pagerduty/v3.incident.responder.added.json"),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: "[#42] Checkout API p99 latency above 2s responder added",
				Message: "Responder added by Ada Lovelace\nResponder: Grace Hopper", URL: checkoutURL, DeliveryID: "01HRZ8Y1E3G5J7L9N1Q3S5U7YK"}))},
		{name: "v3 bare incident, no urgency", body: []byte(`{"event":{"id":"E1","event_type":"incident.triggered","data":{"id":"Q1","type":"incident","number":7,"title":"Minimal"}}}`),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityError, Title: "#7 Minimal triggered", Message: "Triggered", DeliveryID: "E1"}))},
		{name: "v3 null data", body: []byte(`{"event":{"event_type":"incident.resolved","data":null}}`),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: "Incident resolved", Message: "Resolved"}))},
		{name: "v3 incident event type Perch does not know yet", body: []byte(`{"event":{"id":"E2","event_type":"incident.workflow.completed","data":{"incident":{"id":"Q1","summary":"[#7] Minimal","html_url":"https://acme.pagerduty.com/incidents/Q1"}}}}`),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: "[#7] Minimal workflow completed", Message: "Workflow completed",
				URL: "https://acme.pagerduty.com/incidents/Q1", DeliveryID: "E2"}))},
		{name: "v3 incident event type with nothing to say", body: []byte(`{"event":{"event_type":"incident.\u0000","data":{"number":9,"title":"T"}}}`),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: "#9 T updated", Message: "Updated"}))},
		{name: "v3 link that is not a web page is dropped", body: []byte(`{"event":{"id":"E3","event_type":"incident.acknowledged","data":{"number":8,"title":"T","html_url":"javascript:alert(1)"}}}`),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityWarning, Title: "#8 T acknowledged", Message: "Acknowledged", DeliveryID: "E3"}))},
		{name: "v3 service event is ignored", body: mustRead(t, "pagerduty/v3.service.updated.json"),
			want: Result{Ignored: `pagerduty event "service.updated" is not about an incident`}},
		{name: "v3 ping is ignored", body: mustRead(t, "pagerduty/v3.pagey.ping.json"),
			want: Result{Ignored: `pagerduty event "pagey.ping" is not about an incident`}},

		// V2
		{name: "v2 trigger, low urgency", body: mustRead(t, "pagerduty/v2.incident.trigger.low.json"),
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityWarning, Title: payments + " triggered",
				Message: "Triggered through the API\nPayments Gateway · assigned to Ada Lovelace", URL: paymentsURL, DeliveryID: "7c1e2f30-e1a2-11f0-9c3b-0a58a9feac02"}))},
		{name: "v2 single message keeps the header id as it is", body: mustRead(t, "pagerduty/v2.incident.trigger.low.json"), webhookID: "hdr-1",
			want: events(incidentEvent(perch.Event{Severity: perch.SeverityWarning, Title: payments + " triggered",
				Message: "Triggered through the API\nPayments Gateway · assigned to Ada Lovelace", URL: paymentsURL, DeliveryID: "hdr-1"}))},
		{name: "v2 batch: one event per understood message, ids from the messages", body: mustRead(t, "pagerduty/v2.batch.json"),
			want: events(
				incidentEvent(perch.Event{Severity: perch.SeverityError, Title: payments + " triggered",
					Message: "Triggered through the API\nPayments Gateway · assigned to Ada Lovelace", URL: paymentsURL, DeliveryID: "8d2f3041-e1a2-11f0-9c3b-0a58a9feac02", Priority: perch.PriorityUrgent}),
				incidentEvent(perch.Event{Severity: perch.SeverityError, Title: payments + " escalated",
					Message: "Escalated to level 2 by Ada Lovelace\nPayments Gateway · assigned to Grace Hopper", URL: paymentsURL, DeliveryID: "8d2f3043-e1a2-11f0-9c3b-0a58a9feac02"}),
				incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: payments + " resolved",
					Message: "Resolved by Grace Hopper\nPayments Gateway", URL: paymentsURL, DeliveryID: "8d2f3044-e1a2-11f0-9c3b-0a58a9feac02"}),
			)},
		{name: "v2 batch with X-Webhook-Id: header id and message position", body: mustRead(t, "pagerduty/v2.batch.json"), webhookID: "hdr-2",
			want: events(
				incidentEvent(perch.Event{Severity: perch.SeverityError, Title: payments + " triggered",
					Message: "Triggered through the API\nPayments Gateway · assigned to Ada Lovelace", URL: paymentsURL, DeliveryID: "hdr-2:0", Priority: perch.PriorityUrgent}),
				incidentEvent(perch.Event{Severity: perch.SeverityError, Title: payments + " escalated",
					Message: "Escalated to level 2 by Ada Lovelace\nPayments Gateway · assigned to Grace Hopper", URL: paymentsURL, DeliveryID: "hdr-2:2"}),
				incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: payments + " resolved",
					Message: "Resolved by Grace Hopper\nPayments Gateway", URL: paymentsURL, DeliveryID: "hdr-2:3"}),
			)},
		{name: "v2 minimal messages", body: []byte(`{"messages":[
				{"event":"incident.assign","incident":{"incident_number":5,"title":"Queue stuck","urgency":"low"}},
				{"event":"incident.unacknowledge","incident":{"summary":"[#6] Cache cold","assignments":[{"assignee":{"summary":"Ada Lovelace"}}]}},
				{"event":"incident.delegate","incident":{"incident_number":7}},
				{"event":"incident.annotate","incident":{"title":"No number"}}]}`),
			want: events(
				incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: "#5 Queue stuck assigned", Message: "Assigned"}),
				incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: "[#6] Cache cold unacknowledged", Message: "Unacknowledged\nAssigned to Ada Lovelace"}),
				incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: "Incident #7 delegated", Message: "Delegated"}),
				incidentEvent(perch.Event{Severity: perch.SeverityInfo, Title: "No number annotated", Message: "Annotated"}),
			)},
		{name: "v2 with no understood message is ignored", body: mustRead(t, "pagerduty/v2.unknown_only.json"),
			want: Result{Ignored: `pagerduty messages "incident.custom" are not incident events Perch understands`}},
		{name: "v2 message without an incident is ignored", body: []byte(`{"messages":[{"event":"incident.trigger"}]}`),
			want: Result{Ignored: `pagerduty messages "incident.trigger" are not incident events Perch understands`}},
		{name: "v2 reason names at most five distinct events", body: []byte(`{"messages":[{"event":"a"},{"event":"a"},{"event":"b"},{"event":"c"},{"event":"d"},{"event":"e"},{"event":"f"}]}`),
			want: Result{Ignored: `pagerduty messages "a", "b", "c", "d", "e" are not incident events Perch understands`}},
		{name: "v2 with no messages is ignored", body: []byte(`{"messages":[]}`),
			want: Result{Ignored: "pagerduty delivery has no messages"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.webhookID != "" {
				h.Set("X-Webhook-Id", tt.webhookID)
			}
			got, err := PagerDuty(h, tt.body)
			checkResult(t, got, err, tt.want)
		})
	}
}

func TestPagerDutyBadRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, message string
	}{
		{"empty body", "", "The body is empty; a JSON object is required."},
		{"not JSON", "<xml/>", "The body is not valid JSON."},
		{"array", `[{"event": {}}]`, "The body must be a JSON object."},
		{"neither version", `{"incident": {"id": "Q1"}}`, `The body is not a PagerDuty webhook: expected "event" (V3) or "messages" (V2).`},
		{"null event", `{"event": null}`, `The body is not a PagerDuty webhook: expected "event" (V3) or "messages" (V2).`},
		{"v3 without event type", `{"event": {"id": "E1", "data": {}}}`, "event.event_type is required."},
		{"v3 event is a string", `{"event": "incident.triggered"}`, "event must be an object, not a string."},
		{"v3 data is an array", `{"event": {"event_type": "incident.triggered", "data": []}}`, "event.data must be an object, not an array."},
		{"v3 number is text", `{"event": {"event_type": "incident.triggered", "data": {"number": "9"}}}`, "event.data.number must be a whole number, not a string."},
		{"v3 number is a fraction", `{"event": {"event_type": "incident.triggered", "data": {"number": 9.5}}}`, "event.data.number must be a whole number, not 9.5."},
		{"v2 messages is an object", `{"messages": {"event": "incident.trigger"}}`, "messages must be an array, not an object."},
		{"v2 incident is a string", `{"messages": [{"event": "incident.trigger", "incident": "Q1"}]}`, "messages.incident must be an object, not a string."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := PagerDuty(http.Header{}, []byte(tt.body))
			checkBadRequest(t, err, tt.message)
			if len(res.Events) != 0 || res.Ignored != "" {
				t.Errorf("result = %#v, want none", res)
			}
		})
	}
}
