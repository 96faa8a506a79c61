package senders

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/perch-dev/perch"
)

// pdRef is PagerDuty's reference to another object: a user, service, team or,
// inside notes and responder requests, the incident itself.
type pdRef struct {
	ID      string `json:"id"`
	Summary string `json:"summary"`
	HTMLURL string `json:"html_url"`
}

// pdIncident holds the fields of a PagerDuty incident that both webhook
// versions carry, under either version's name for them.
type pdIncident struct {
	ID             string  `json:"id"`
	Number         int64   `json:"number"`          // V3
	IncidentNumber int64   `json:"incident_number"` // V2
	Title          string  `json:"title"`
	Summary        string  `json:"summary"`
	HTMLURL        string  `json:"html_url"`
	Urgency        string  `json:"urgency"`
	Service        *pdRef  `json:"service"`
	Priority       *pdRef  `json:"priority"`
	Assignees      []pdRef `json:"assignees"` // V3
	Assignments    []struct {
		Assignee pdRef `json:"assignee"`
	} `json:"assignments"` // V2

	// V3 events about something attached to an incident (incident.annotated,
	// incident.responder.added, ...) carry that thing as data, with the
	// incident as a reference and, for notes, the text.
	Incident *pdRef `json:"incident"`
	Content  string `json:"content"` // incident.annotated
	Message  string `json:"message"` // incident.status_update_published
	User     *pdRef `json:"user"`    // incident.responder.*
}

type pdV3Event struct {
	ID        string          `json:"id"`
	EventType string          `json:"event_type"`
	Agent     *pdRef          `json:"agent"`
	Data      json.RawMessage `json:"data"`
}

type pdV2Message struct {
	ID         string      `json:"id"`
	Event      string      `json:"event"`
	Incident   *pdIncident `json:"incident"`
	LogEntries []struct {
		Summary string `json:"summary"`
	} `json:"log_entries"`
}

// PagerDuty parses a PagerDuty webhook: a V3 delivery {"event": {...}} or an
// older V2 delivery {"messages": [...]}, which may carry several messages and
// so yield several events.
//
// Incident events become notifications in the Incidents tab; every other
// event (service.updated, pagey.ping, ...) is Ignored, as is a V2 delivery of
// which no message is understood. The delivery id is the X-Webhook-Id header,
// else the V3 event id or the V2 message id. It returns a perch.EBADREQUEST
// error when the body is not JSON or matches neither version.
func PagerDuty(h http.Header, body []byte) (Result, error) {
	var p struct {
		Event    *pdV3Event    `json:"event"`
		Messages []pdV2Message `json:"messages"`
	}
	if err := perch.DecodeObject(body, &p); err != nil {
		return Result{}, err
	}
	webhookID := deliveryID(h.Get("X-Webhook-Id"))
	switch {
	case p.Event != nil:
		return pagerDutyV3(webhookID, p.Event)
	case p.Messages != nil:
		return pagerDutyV2(webhookID, p.Messages)
	}
	return Result{}, badRequest(`The body is not a PagerDuty webhook: expected "event" (V3) or "messages" (V2).`)
}

// pdAction is how Perch shows one kind of incident event.
type pdAction struct {
	verb     string // finishes the title: "#9 Disk full triggered"
	severity string // "" when it depends on the urgency, as for a new incident
	// assignees says whether the message names who the incident is with,
	// which matters when someone now has to act on it.
	assignees bool
}

// pdV3Actions maps a V3 incident event type, less its "incident." prefix, to
// how it is shown.
var pdV3Actions = map[string]pdAction{
	"triggered":                   {"triggered", "", true},
	"reopened":                    {"reopened", "", true},
	"acknowledged":                {"acknowledged", perch.SeverityWarning, false},
	"escalated":                   {"escalated", perch.SeverityError, true},
	"resolved":                    {"resolved", perch.SeverityInfo, false},
	"reassigned":                  {"reassigned", perch.SeverityInfo, true},
	"unacknowledged":              {"unacknowledged", perch.SeverityInfo, true},
	"delegated":                   {"delegated", perch.SeverityInfo, true},
	"annotated":                   {"annotated", perch.SeverityInfo, false},
	"priority_updated":            {"priority updated", perch.SeverityInfo, false},
	"responder.added":             {"responder added", perch.SeverityInfo, false},
	"responder.replied":           {"responder replied", perch.SeverityInfo, false},
	"status_update_published":     {"status update published", perch.SeverityInfo, false},
	"service_updated":             {"moved to another service", perch.SeverityInfo, false},
	"incident_type.changed":       {"incident type changed", perch.SeverityInfo, false},
	"conference_bridge.updated":   {"conference bridge updated", perch.SeverityInfo, false},
	"custom_field_values.updated": {"custom fields updated", perch.SeverityInfo, false},
}

func pagerDutyV3(webhookID string, e *pdV3Event) (Result, error) {
	kind, ok := strings.CutPrefix(e.EventType, "incident.")
	if !ok || kind == "" {
		if e.EventType == "" {
			return Result{}, badRequest("event.event_type is required.")
		}
		return ignored("pagerduty event %q is not about an incident", perch.Clip(perch.OneLine(e.EventType), 60)), nil
	}
	var inc pdIncident
	if len(e.Data) > 0 && string(e.Data) != "null" {
		if err := json.Unmarshal(e.Data, &inc); err != nil {
			return Result{}, perch.ShapeError(err, "event.data")
		}
	}
	action, known := pdV3Actions[kind]
	if !known {
		// PagerDuty adds incident event types over time; show them rather
		// than drop them, worded from the type itself.
		action.verb = perch.Clip(perch.OneLine(strings.NewReplacer(".", " ", "_", " ").Replace(kind)), 60)
		action.severity = perch.SeverityInfo
		if action.verb == "" {
			action.verb = "updated"
		}
	}
	if action.severity == "" {
		action.severity = urgencySeverity(inc.Urgency)
	}

	var detail string
	switch kind {
	case "priority_updated":
		if inc.Priority != nil && perch.OneLine(inc.Priority.Summary) != "" {
			detail = "Priority: " + perch.OneLine(inc.Priority.Summary)
		}
	case "annotated":
		detail = perch.OneLine(inc.Content)
	case "status_update_published":
		detail = perch.OneLine(inc.Message)
	case "responder.added", "responder.replied":
		if inc.User != nil && perch.OneLine(inc.User.Summary) != "" {
			detail = "Responder: " + perch.OneLine(inc.User.Summary)
		}
	default:
		if !action.assignees {
			break
		}
		var assignees []string
		for _, a := range inc.Assignees {
			assignees = append(assignees, a.Summary)
		}
		detail = listed("Assigned to ", assignees)
	}

	ref := inc.Incident // set when data is a note or request about the incident
	if ref == nil {
		ref = &pdRef{ID: inc.ID, Summary: inc.Summary, HTMLURL: inc.HTMLURL}
	}
	return Result{Events: []perch.Event{{
		Tab:        perch.TabIncidents,
		Source:     perch.SourceIncidents,
		Severity:   action.severity,
		Priority:   incidentPriority(kind == "triggered" || kind == "reopened", inc.Urgency),
		Title:      title(incidentName(inc.Number, inc.Title, ref) + " " + action.verb),
		Message:    message(byLine(action.verb, e.Agent, inc.Service), detail),
		URL:        webURL(perch.FirstNonEmpty(inc.HTMLURL, ref.HTMLURL)),
		DeliveryID: deliveryID(perch.FirstNonEmpty(webhookID, e.ID)),
	}}}, nil
}

// incidentPriority is urgent for a new (or reopened) high-urgency
// incident, the one PagerDuty itself would page for; else 0, so that the
// severity decides (perch.DefaultPriority), as for every sender.
func incidentPriority(opened bool, urgency string) int {
	if opened && strings.EqualFold(urgency, "high") {
		return perch.PriorityUrgent
	}
	return 0
}

// pdV2Actions maps a V2 message's event, less its "incident." prefix, to how
// it is shown. The log entry of assign and delegate already names the new
// assignee.
var pdV2Actions = map[string]pdAction{
	"trigger":       {"triggered", "", true},
	"acknowledge":   {"acknowledged", perch.SeverityWarning, false},
	"unacknowledge": {"unacknowledged", perch.SeverityInfo, true},
	"resolve":       {"resolved", perch.SeverityInfo, false},
	"assign":        {"assigned", perch.SeverityInfo, false},
	"escalate":      {"escalated", perch.SeverityError, true},
	"delegate":      {"delegated", perch.SeverityInfo, false},
	"annotate":      {"annotated", perch.SeverityInfo, false},
}

func pagerDutyV2(webhookID string, msgs []pdV2Message) (Result, error) {
	var events []perch.Event
	var skipped []string // distinct event names, for the reason to ignore
	for i, m := range msgs {
		kind, _ := strings.CutPrefix(m.Event, "incident.")
		action, ok := pdV2Actions[kind]
		if !ok || m.Incident == nil {
			if name := fmt.Sprintf("%q", perch.Clip(perch.OneLine(m.Event), 60)); len(skipped) < 5 && !slices.Contains(skipped, name) {
				skipped = append(skipped, name)
			}
			continue
		}
		inc := m.Incident
		if action.severity == "" {
			action.severity = urgencySeverity(inc.Urgency)
		}

		// The first log entry is PagerDuty's own sentence for what happened
		// ("Acknowledged by Laura Haley"); without it, build one.
		what := ""
		if len(m.LogEntries) > 0 {
			what = perch.OneLine(m.LogEntries[0].Summary)
		}
		if what == "" {
			what = byLine(action.verb, nil, nil)
		}
		var assignees []string
		if action.assignees {
			for _, a := range inc.Assignments {
				assignees = append(assignees, a.Assignee.Summary)
			}
		}
		var service string
		if inc.Service != nil {
			service = perch.OneLine(inc.Service.Summary)
		}
		context := strings.Join(nonEmpty(service, listed("assigned to ", assignees)), " · ")

		// A redelivery repeats the header id for the whole batch, so the
		// message's position keeps ids of one batch apart yet stable.
		id := deliveryID(m.ID)
		if webhookID != "" {
			id = webhookID
			if len(msgs) > 1 {
				id = fmt.Sprintf("%s:%d", webhookID, i)
			}
		}
		events = append(events, perch.Event{
			Tab:        perch.TabIncidents,
			Source:     perch.SourceIncidents,
			Severity:   action.severity,
			Priority:   incidentPriority(kind == "trigger", inc.Urgency),
			Title:      title(incidentName(inc.IncidentNumber, inc.Title, &pdRef{ID: inc.ID, Summary: inc.Summary}) + " " + action.verb),
			Message:    message(what, capitalize(context)),
			URL:        webURL(inc.HTMLURL),
			DeliveryID: id,
		})
	}
	if len(events) == 0 {
		if len(skipped) == 0 {
			return ignored("pagerduty delivery has no messages"), nil
		}
		return ignored("pagerduty messages %s are not incident events Perch understands", strings.Join(skipped, ", ")), nil
	}
	return Result{Events: events}, nil
}

// urgencySeverity rates a new incident: high urgency pages someone, low
// urgency waits. An unknown urgency errs on the side of being noticed.
func urgencySeverity(urgency string) string {
	if strings.EqualFold(strings.TrimSpace(urgency), "low") {
		return perch.SeverityWarning
	}
	return perch.SeverityError
}

// incidentName names an incident as PagerDuty does, "#9 Disk full", falling
// back on whatever the payload has when the number or title is missing.
func incidentName(number int64, incTitle string, ref *pdRef) string {
	t := perch.OneLine(incTitle)
	if number > 0 && t != "" {
		return fmt.Sprintf("#%d %s", number, perch.Clip(t, maxTitle-30))
	}
	// A summary reads "[#9] Disk full", which already holds both.
	if s := perch.OneLine(ref.Summary); s != "" {
		return perch.Clip(s, maxTitle-30)
	}
	switch {
	case t != "":
		return perch.Clip(t, maxTitle-30)
	case number > 0:
		return fmt.Sprintf("Incident #%d", number)
	case perch.OneLine(ref.ID) != "":
		return "Incident " + perch.Clip(perch.OneLine(ref.ID), 40)
	}
	return "Incident"
}

// byLine says what happened and who did it: "Acknowledged by Jane Doe on
// Checkout API".
func byLine(verb string, agent, service *pdRef) string {
	var who, where string
	if agent != nil {
		who = perch.OneLine(agent.Summary)
	}
	if service != nil {
		where = perch.OneLine(service.Summary)
	}
	s := capitalize(verb)
	// When a service acts on its own incident, "by" would repeat "on".
	if who != "" && who != where {
		s += " by " + who
	}
	if where != "" {
		s += " on " + where
	}
	return s
}

// listed renders names as "prefix a, b" or "" when there are none.
func listed(prefix string, names []string) string {
	var kept []string
	for _, n := range names {
		if n = perch.OneLine(n); n != "" {
			kept = append(kept, n)
		}
	}
	if len(kept) == 0 {
		return ""
	}
	return prefix + strings.Join(kept, ", ")
}
