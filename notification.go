package perch

import (
	"net/url"
	"time"
)

// Severities, from least to most urgent.
const (
	SeverityInfo    = "info"
	SeverityWarning = "warning"
	SeverityError   = "error"
)

// ValidSeverity reports whether s is one of the three severities.
func ValidSeverity(s string) bool {
	return s == SeverityInfo || s == SeverityWarning || s == SeverityError
}

// MaxURL is the longest link a notification keeps, in bytes.
const MaxURL = 4096

// ValidURL reports whether s may be a notification's url: "" (no link), or
// an absolute http:// or https:// URL with a host, of at most MaxURL bytes.
// It is the one rule for every way a notification gets a link (the
// receivers, a workflow's set step, the "try it" sample, and the ingest
// writer, which drops any other link as the last guard): the menu bar, the
// dashboard and `perch listen` open the link on a click, so a javascript:,
// file: or data: link must never be stored.
func ValidURL(s string) bool {
	if s == "" {
		return true
	}
	if len(s) > MaxURL {
		return false
	}
	u, err := url.Parse(s) // lower-cases the scheme; refuses control characters
	return err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https")
}

// Sources: the receiver an event came through. (The payment receivers,
// Perch itself and workflows add theirs as they arrive.)
const (
	SourceInbound   = "inbound"
	SourceIncidents = "incidents"
	SourceCodeHost  = "code-host"
	SourceMonitor   = "monitoring"
)

// SourceTitle is how pages name a source or a webhook token's sender: the
// real system behind the contract's stand-in ("code-host" is GitHub), or the
// id itself for one it does not know. The dashboard's script keeps the same
// names for the feed (assets/app.js, sourceNames).
func SourceTitle(source string) string {
	switch source {
	case SourceInbound:
		return "Inbound"
	case SourceIncidents:
		return "PagerDuty"
	case SourceCodeHost:
		return "GitHub"
	case SourceMonitor:
		return "Datadog"
	case SourcePaymentsA:
		return "Stripe"
	case SourcePaymentsB:
		return "Paddle"
	}
	return source
}

// Default tabs: each sender's notifications go to its own; inbound uses the
// tab the delivery names, or Inbound.
const (
	TabIncidents  = "Incidents"
	TabCode       = "Code"
	TabMonitoring = "Monitoring"
	TabInbound    = "Inbound"
)

// Scope types: who a notification is for.
const (
	ScopeUser = "user"
	ScopeTeam = "team"
	ScopeOrg  = "org"
	ScopeAll  = "all" // a token-less broadcast
)

// Scope names the audience of a notification.
type Scope struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`
}

// Notification is what the menu bar shows.
type Notification struct {
	ID        string    `json:"id"`
	Tab       string    `json:"tab"`
	Title     string    `json:"title"`
	Message   string    `json:"message"`
	Severity  string    `json:"severity"`
	Source    string    `json:"source"`
	URL       string    `json:"url"`
	CreatedAt time.Time `json:"created_at"`
	Scope     Scope     `json:"scope"`
	Read      bool      `json:"read"`

	// Priority is 1 (min) to 5 (urgent); see rich.go. The other fields
	// below are left out of the JSON when empty: most notifications have
	// none of them.
	Priority int                  `json:"priority"`
	Tags     []string             `json:"tags,omitempty"`
	Icon     string               `json:"icon,omitempty"`     // an https URL
	Markdown bool                 `json:"markdown,omitempty"` // Message is Markdown
	Actions  []NotificationAction `json:"actions,omitempty"`
	// DeliverAt is when a scheduled notification was due (its CreatedAt is
	// when it was delivered, in the log's order).
	DeliverAt *time.Time `json:"deliver_at,omitempty"`
}

// Event is what a sender's parser makes of one delivery before it is stored:
// a notification without identity, time or audience, plus the sender's own
// delivery id when it has one (for de-duplication).
type Event struct {
	Tab        string
	Title      string
	Message    string
	Severity   string
	Source     string
	URL        string
	DeliveryID string

	Priority int // 0: derived from Severity (DefaultPriority)
	Tags     []string
	Icon     string
	Markdown bool
	Actions  []NotificationAction
	// DeliverAt or Delay (at most MaxDeliveryDelay) schedule the event
	// for later; the receiver checks both against its clock.
	DeliverAt time.Time
	Delay     time.Duration
}
