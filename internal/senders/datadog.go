package senders

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strings"

	"github.com/perch-dev/perch"
)

// ddText is a member of a Datadog payload. Users write the payload template
// themselves, and an unquoted $ID or $DATE arrives as a number, so any scalar
// is read as its text.
type ddText string

func (t *ddText) UnmarshalJSON(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = ddText(s)
	case 'n':
		*t = ""
	case '{':
		return &json.UnmarshalTypeError{Value: "object", Type: reflect.TypeFor[string]()}
	case '[':
		return &json.UnmarshalTypeError{Value: "array", Type: reflect.TypeFor[string]()}
	default: // a number or true/false; the literal keeps a large id exact
		*t = ddText(b)
	}
	return nil
}

// ddPayload lists the members of Datadog's default payload and the names
// commonly given to its variables in custom ones.
type ddPayload struct {
	Title           ddText `json:"title"`       // $EVENT_TITLE, "[Triggered on {host:a}] Name"
	AlertTitle      ddText `json:"alert_title"` // $ALERT_TITLE, the name alone
	Body            ddText `json:"body"`        // $EVENT_MSG, markdown between %%% markers
	AlertTransition ddText `json:"alert_transition"`
	AlertType       ddText `json:"alert_type"`
	AlertScope      ddText `json:"alert_scope"`
	Hostname        ddText `json:"hostname"`
	Link            ddText `json:"link"` // $LINK, the event page
	URL             ddText `json:"url"`
	EventURL        ddText `json:"event_url"`
	AlertURL        ddText `json:"alert_url"`
	Org             *struct {
		Name ddText `json:"name"`
	} `json:"org"`
}

// Datadog parses a Datadog webhook, from the default payload or a custom one
// that keeps the usual member names. Every delivery becomes a notification in
// the Monitoring tab; the severity comes from alert_transition and alert_type,
// or, when alert_transition is absent, from the "[Triggered]"-style prefix of
// the title, which is stripped for display. Datadog gives no delivery id, and
// the ids in a custom payload may name the monitor rather than the event, so
// none is set.
//
// Datadog sends no header that Perch reads; h is there to match the other
// parsers. It returns a perch.EBADREQUEST error when the body is not a JSON
// object or has no title.
func Datadog(h http.Header, body []byte) (Result, error) {
	var p ddPayload
	if err := perch.DecodeObject(body, &p); err != nil {
		return Result{}, err
	}
	raw := perch.FirstNonEmpty(string(p.Title), string(p.AlertTitle))
	if perch.OneLine(raw) == "" {
		return Result{}, badRequest("title is required.")
	}
	name, prefix := splitAlertTitle(raw)
	if name == "" {
		// A title that is nothing but a prefix still names something.
		name = perch.OneLine(raw)
	}

	transition := perch.OneLine(string(p.AlertTransition))
	alertType := strings.ToLower(perch.OneLine(string(p.AlertType)))
	severity, ok := transitionSeverity(transition, alertType)
	if !ok {
		// Without a transition Perch knows, the title prefix decides on its
		// own: "[Triggered]" is an error whatever alert_type says.
		transition = prefix.transition
		severity, ok = transitionSeverity(prefix.transition, "")
		if !ok {
			severity = alertTypeSeverity(alertType, perch.SeverityInfo)
		}
	}

	// "Triggered on host:web-1 · Acme": what happened, where, and whose.
	scope := perch.FirstNonEmpty(perch.OneLine(string(p.AlertScope)), prefix.scope, perch.OneLine(string(p.Hostname)))
	what := transition
	switch {
	case what != "" && scope != "":
		what += " on " + scope
	case what == "":
		what = scope
	}
	if p.Org != nil {
		what = strings.Join(nonEmpty(what, perch.OneLine(string(p.Org.Name))), " · ")
	}
	return Result{Events: []perch.Event{{
		Tab:      perch.TabMonitoring,
		Source:   perch.SourceMonitor,
		Severity: severity,
		Title:    title(name),
		Message:  message(what, perch.Clip(ddSummary(string(p.Body)), 300)),
		URL: webURL(perch.FirstNonEmpty(string(p.Link), string(p.URL), string(p.EventURL),
			string(p.AlertURL), monitorStatusLink(string(p.Body)))),
	}}}, nil
}

// transitionSeverity rates an alert_transition; ok is false when there is
// none or it is not one Perch knows.
func transitionSeverity(transition, alertType string) (severity string, ok bool) {
	switch strings.ToLower(transition) {
	case "triggered", "re-triggered", "renotify":
		return alertTypeSeverity(alertType, perch.SeverityError), true
	case "recovered":
		return perch.SeverityInfo, true
	case "no data", "re-no data", "warn", "re-warn", "warning":
		return perch.SeverityWarning, true
	}
	return "", false
}

// alertTypeSeverity maps Datadog's alert_type onto a severity, or otherwise
// when it is absent or unknown.
func alertTypeSeverity(alertType, otherwise string) string {
	switch alertType {
	case "error":
		return perch.SeverityError
	case "warning":
		return perch.SeverityWarning
	case "success", "info":
		return perch.SeverityInfo
	}
	return otherwise
}

// titlePrefix is what a Datadog event title says before the alert's name.
type titlePrefix struct {
	transition string // "Triggered", "Re-Triggered", "Recovered", "No Data", "Warn", ...
	scope      string // "host:web-1" from "[Triggered on {host:web-1}]"
}

// ddTransitions are the words a title prefix starts with, longest first so
// that "Re-Triggered" is not read as something else and "Warning" not as
// "Warn".
var ddTransitions = []string{"Re-Triggered", "Triggered", "Recovered", "Re-No Data", "No Data", "Re-Warn", "Warning", "Warn"}

// splitAlertTitle takes the transition prefix off a title such as
// "[P1] [Triggered on {host:web-1}] Disk full", leaving "[P1] Disk full":
// other bracketed tags (priority, [TEST]) are part of how the alert is known.
func splitAlertTitle(s string) (name string, prefix titlePrefix) {
	rest := perch.OneLine(s)
	var kept []string
	for strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			break
		}
		tag := rest[1:end]
		rest = strings.TrimSpace(rest[end+1:])
		if prefix.transition == "" {
			if t, scope, ok := transitionTag(tag); ok {
				prefix = titlePrefix{transition: t, scope: scope}
				continue
			}
		}
		kept = append(kept, "["+tag+"]")
	}
	return strings.TrimSpace(strings.Join(append(kept, rest), " ")), prefix
}

// transitionTag reads "Triggered on {host:web-1}" as ("Triggered", "host:web-1").
func transitionTag(tag string) (transition, scope string, ok bool) {
	for _, t := range ddTransitions {
		if len(tag) < len(t) || !strings.EqualFold(tag[:len(t)], t) {
			continue
		}
		after := tag[len(t):]
		if after == "" {
			return t, "", true
		}
		if on, found := strings.CutPrefix(after, " on "); found {
			return t, strings.Trim(strings.TrimSpace(on), "{}"), true
		}
	}
	return "", "", false
}

var (
	ddImage   = regexp.MustCompile(`!\[[^\]]*\]\([^)]*\)`)
	ddLink    = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	ddMention = regexp.MustCompile(`(^|\s)@\S+`)
	ddStatus  = regexp.MustCompile(`\[Monitor Status\]\((https?://[^)\s]+)\)`)
)

// ddSummary turns a Datadog event body into one line of plain text: the
// %%% markers, graph images, @-mentions that route the alert and the footer of
// links are noise in a notification.
func ddSummary(body string) string {
	body, _, _ = strings.Cut(body, "\n- - -")
	body = strings.ReplaceAll(body, "%%%", "")
	body = ddImage.ReplaceAllString(body, "")
	body = ddLink.ReplaceAllString(body, "$1")
	body = ddMention.ReplaceAllString(body, "$1")
	body = strings.ReplaceAll(body, "**", "")
	return perch.OneLine(body)
}

// monitorStatusLink finds the monitor's page in the footer of the default
// body, for payloads without a link member.
func monitorStatusLink(body string) string {
	if m := ddStatus.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return ""
}
