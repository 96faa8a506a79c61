package perch

import (
	"encoding/json"
	"fmt"
	"time"
)

// Workflow is an organisation's rule over its notifications (docs/DESIGN.md,
// Workflows and the marketplace): when Condition (CEL; empty is always)
// holds for a notification accepted for the organisation's audience, Steps
// run in order, before the notification is stored and pushed.
type Workflow struct {
	ID          string          `json:"id"`
	OrgID       string          `json:"-"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Enabled     bool            `json:"enabled"`
	Condition   string          `json:"condition"`
	Steps       []Step          `json:"steps"`
	Version     int             `json:"version"`   // bumped by every change of condition or steps, and by publishing
	Published   bool            `json:"published"` // listed in the marketplace
	Source      *WorkflowSource `json:"source"`    // the marketplace workflow this was installed from
	ForkedFrom  *string         `json:"forked_from"`
	Stats       WorkflowStats   `json:"stats"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// WorkflowSource links an installed workflow to its marketplace original.
type WorkflowSource struct {
	WorkflowID string `json:"workflow_id"`
	Version    int    `json:"version"`
}

// WorkflowStats counts a workflow's evaluations.
type WorkflowStats struct {
	Evaluated int64 `json:"evaluated"`
	Matched   int64 `json:"matched"`
	Failed    int64 `json:"failed"`
}

// Step is one step of a workflow: exactly one of its members is set.
type Step struct {
	Set      map[string]string `json:"set,omitempty"` // field (title, message, severity, tab, url, priority) → CEL string expression
	Route    *RouteStep        `json:"route,omitempty"`
	Drop     *DropStep         `json:"drop,omitempty"`
	Throttle *ThrottleStep     `json:"throttle,omitempty"`
	Digest   *DigestStep       `json:"digest,omitempty"`
	Forward  *ForwardStep      `json:"forward,omitempty"`
	Email    *EmailStep        `json:"email,omitempty"`
}

// Step types, as Step.Type names them.
const (
	StepSet      = "set"
	StepRoute    = "route"
	StepDrop     = "drop"
	StepThrottle = "throttle"
	StepDigest   = "digest"
	StepForward  = "forward"
	StepEmail    = "email"
)

// Type names the member that is set, "" when none is (or several are:
// Validate refuses both).
func (s Step) Type() string {
	var t string
	n := 0
	for name, set := range map[string]bool{StepSet: s.Set != nil, StepRoute: s.Route != nil, StepDrop: s.Drop != nil,
		StepThrottle: s.Throttle != nil, StepDigest: s.Digest != nil, StepForward: s.Forward != nil, StepEmail: s.Email != nil} {
		if set {
			t, n = name, n+1
		}
	}
	if n != 1 {
		return ""
	}
	return t
}

// RouteStep sends the notification to another audience of the same
// organisation.
type RouteStep struct {
	Scope string `json:"scope"` // user, team or org
	ID    string `json:"id,omitempty"`
}

// DropStep stops the notification.
type DropStep struct{}

// ThrottleStep lets at most Max notifications per key through per window.
type ThrottleStep struct {
	Key string   `json:"key"` // CEL string expression; "" is one key for the workflow
	Max int      `json:"max"`
	Per Duration `json:"per"`
}

// DigestStep holds matching notifications and delivers one summary per key
// when the window closes.
type DigestStep struct {
	Key    string   `json:"key"`
	Window Duration `json:"window"`
}

// ForwardStep POSTs the notification to URL, signed with Secret, after it
// is stored.
type ForwardStep struct {
	URL    string `json:"url"`
	Secret string `json:"secret,omitempty"`
}

// EmailStep mails the notification to owners, admins or a team's members.
type EmailStep struct {
	To string `json:"to"` // "owners", "admins" or a team id
}

// Workflow limits.
const (
	MaxWorkflowSteps       = 20
	MaxWorkflowNameLen     = 100
	MaxWorkflowDescLen     = 1000
	MaxWorkflowExprLen     = 2000 // bytes of one CEL expression
	MinThrottleWindow      = time.Second
	MaxThrottleWindow      = 24 * time.Hour
	MinDigestWindow        = time.Minute
	MaxDigestWindow        = 24 * time.Hour
	MaxThrottleMax         = 1_000_000
	WorkflowForwardTimeout = 5 * time.Second
	WorkflowRetryFor       = 24 * time.Hour // forward and email are retried with backoff this long
)

// Run statuses: what a workflow did with a notification.
const (
	RunDelivered = "delivered"
	RunDropped   = "dropped"
	RunThrottled = "throttled"
	RunDigested  = "digested"
	RunFailed    = "failed"
)

// WorkflowRun records one match or failure of a workflow.
type WorkflowRun struct {
	ID              string    `json:"id"`
	WorkflowID      string    `json:"workflow_id"`
	WorkflowVersion int       `json:"workflow_version"`
	NotificationID  string    `json:"notification_id"` // "" when none was stored (dropped, throttled, digested)
	Status          string    `json:"status"`
	Steps           []RunStep `json:"steps"`
	DurationUS      int64     `json:"duration_us"`
	CreatedAt       time.Time `json:"created_at"`
}

// RunStep is what one step did in a run.
type RunStep struct {
	Type string `json:"type"`
	// Status is ok, skipped or failed; a forward or e-mail step that queued
	// a delivery has its Delivery's state (queued, delivered, retrying,
	// refused, given_up) once read back with it.
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Job is what became of the delivery the step queued; only on the
	// runs read back (never stored with the run), and only when the
	// delivery is still kept.
	Job *Delivery `json:"job,omitempty"`
}

// Duration is a time.Duration written as Go writes durations ("10m") in
// JSON.
type Duration time.Duration

// MarshalJSON writes d as "10m0s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "10m", "1h30m" or "90s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"10m\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as \"10m\", not %q", s)
	}
	*d = Duration(v)
	return nil
}
