package perch

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Priorities, 1 to 5, as ntfy numbers them. Severity says what kind of news
// a notification is; priority says how loudly to tell it: min never raises
// a desktop notification, urgent breaks through pause, snooze and quiet
// hours.
const (
	PriorityMin     = 1
	PriorityLow     = 2
	PriorityDefault = 3
	PriorityHigh    = 4
	PriorityUrgent  = 5
)

var priorityNames = [...]string{"", "min", "low", "default", "high", "urgent"}

// PriorityName is the name of priority p ("" when p is no priority).
func PriorityName(p int) string {
	if p < PriorityMin || p > PriorityUrgent {
		return ""
	}
	return priorityNames[p]
}

// ParsePriority reads a priority given as a number (1–5, in a JSON number
// or a string) or a name (min, low, default, high, urgent; case and stray
// spaces forgiven). ok is false for anything else.
func ParsePriority(s string) (p int, ok bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	for i := PriorityMin; i <= PriorityUrgent; i++ {
		if s == priorityNames[i] {
			return i, true
		}
	}
	if n, err := strconv.Atoi(s); err == nil && n >= PriorityMin && n <= PriorityUrgent {
		return n, true
	}
	return 0, false
}

// PriorityProblem is what is wrong with a priority as it came in a JSON
// value (nil: absent, so derived), or "".
func PriorityProblem(v any) (int, string) {
	const what = "must be 1 to 5 or min, low, default, high or urgent"
	switch v := v.(type) {
	case nil:
		return 0, ""
	case float64:
		if n := int(v); float64(n) == v && n >= PriorityMin && n <= PriorityUrgent {
			return n, ""
		}
	case string:
		if p, ok := ParsePriority(v); ok {
			return p, ""
		}
	}
	return 0, what
}

// DefaultPriority is the priority of a notification whose sender gave none:
// high for an error, default for the rest. (A PagerDuty high-urgency trigger
// is urgent; its parser says so.)
func DefaultPriority(severity string) int {
	if severity == SeverityError {
		return PriorityHigh
	}
	return PriorityDefault
}

// Limits on a notification's tags and actions.
const (
	MaxTags        = 5
	MaxTag         = 32 // characters
	MaxActions     = 3
	MaxActionLabel = 40 // characters
	// MaxActionBody is the largest body an http action may carry, in bytes.
	MaxActionBody = 4096
	// MaxActionHeaders is how many headers an http action may carry.
	MaxActionHeaders = 10
	// MaxDeliveryDelay is how far ahead a notification may be scheduled.
	MaxDeliveryDelay = 7 * 24 * time.Hour
)

// Action types.
const (
	ActionView = "view" // the client opens URL
	ActionHTTP = "http" // the server makes a request: run with POST /api/v1/notifications/{id}/actions/{action_id}
)

// NotificationAction is a button on a notification. Clients see ID, Type, Label and,
// for a view action, URL; what an http action sends, and to where, stays on
// the server (it may hold the sender's credentials).
type NotificationAction struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Label string `json:"label"`
	URL   string `json:"url,omitempty"` // view actions only

	// Request is what an http action sends, as the sender gave it; never
	// encoded for clients. The server seals it into Sealed before storing.
	Request *ActionRequest `json:"-"`
	// Sealed is Request sealed with the server's key, as the store keeps it.
	Sealed string `json:"-"`
	// Native, when set, names an action Perch carries out itself with the
	// organisation's stored credentials ("pagerduty.acknowledge",
	// "pagerduty.resolve"), on the source system's object Ref.
	Native string `json:"-"`
	Ref    string `json:"-"`
}

// ActionRequest is the request an http action makes.
type ActionRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// Native actions Perch knows.
const (
	NativePagerDutyAcknowledge = "pagerduty.acknowledge"
	NativePagerDutyResolve     = "pagerduty.resolve"
)

// TagProblem is what is wrong with a tag, or "".
func TagProblem(tag string) string {
	switch {
	case strings.TrimSpace(tag) == "":
		return "must not be blank"
	case utf8.RuneCountInString(tag) > MaxTag:
		return fmt.Sprintf("must be at most %d characters", MaxTag)
	}
	return TextProblem(tag, SingleLine)
}

// ActionResult is the answer to running an action: the status the target
// answered with and whether it counts as success (2xx).
type ActionResult struct {
	Status int  `json:"status"`
	OK     bool `json:"ok"`
}
