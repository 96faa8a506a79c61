package server

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/workflow"
)

// "Try it": POST /org/workflows/{id}/test runs a workflow, or a draft of
// its condition and steps, on a sample event and says what it would do. It
// changes nothing: no run is recorded, no stats counted, no throttle or
// digest state kept, nothing forwarded or mailed.

// tryInput is the body of a try; every member is optional.
type tryInput struct {
	Event          *tryEvent      `json:"event"`
	Payload        map[string]any `json:"payload"`
	NotificationID string         `json:"notification_id"`
	Condition      *string        `json:"condition"`
	Steps          *[]perch.Step  `json:"steps"`
}

// tryEvent is a sample event; empty fields take the defaults.
type tryEvent struct {
	Title    string `json:"title"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
	Tab      string `json:"tab"`
	Source   string `json:"source"`
	URL      string `json:"url"`
}

// tryNotification is the notification a try ends with.
type tryNotification struct {
	Title    string      `json:"title"`
	Message  string      `json:"message"`
	Severity string      `json:"severity"`
	Tab      string      `json:"tab"`
	Source   string      `json:"source"`
	URL      string      `json:"url"`
	Scope    perch.Scope `json:"scope"`
}

// tryResult is what a try answers.
type tryResult struct {
	Matched      bool            `json:"matched"`
	Status       string          `json:"status"` // a run's status, or not_matched
	Notification tryNotification `json:"notification"`
	Steps        []perch.RunStep `json:"steps"`
	Forwards     int             `json:"forwards"`
	Emails       int             `json:"emails"`
	// Payload is the payload the try ran on, and PayloadSource where it
	// came from: "request" (the try's payload), "kept" (the one kept with
	// the stored notification) or "none" (an empty one).
	Payload       map[string]any `json:"payload"`
	PayloadSource string         `json:"payload_source"`
	// Missing are the payload paths the workflow reads that the payload
	// lacks: a condition over one of them is not matched for want of data.
	Missing []string `json:"missing"`
}

// Where a try's payload came from.
const (
	payloadFromRequest = "request"
	payloadKept        = "kept"
	payloadNone        = "none"
)

// statusNotMatched is a try's status when the condition did not hold.
const statusNotMatched = "not_matched"

// tryHooks let throttles through and take digests without keeping any
// state.
var tryHooks = workflow.Hooks{
	Throttle: func(context.Context, string, int, time.Duration) (bool, error) { return true, nil },
	Digest:   func(context.Context, string, time.Duration, perch.Notification) error { return nil },
}

func (s *Server) tryWorkflow(w http.ResponseWriter, r *http.Request) error {
	var in tryInput
	if err := decodeStrictBody(w, r, &in, true); err != nil {
		return err
	}
	u := principal(r).User
	wf, err := s.workflowDB.Workflow(r.Context(), u.OrgID, r.PathValue("id"))
	if err != nil {
		return err
	}
	if in.Condition != nil {
		wf.Condition = *in.Condition
	}
	if in.Steps != nil {
		wf.Steps = *in.Steps
	}
	// A try always compiles in full: a blank forward URL cannot run.
	wf.Enabled = true
	if err := s.checkWorkflow(r.Context(), u.OrgID, wf, in.Steps != nil); err != nil {
		return err
	}
	prog, err := compileWorkflow(wf)
	if err != nil {
		return err
	}
	n, err := s.tryNotification(r.Context(), u, in)
	if err != nil {
		return err
	}
	payload, source, err := s.tryPayload(r.Context(), n, in)
	if err != nil {
		return err
	}
	res := prog.Run(r.Context(), workflow.Input{Notification: *n, Payload: payload, Now: s.now()}, tryHooks)
	out := tryResult{Matched: res.Matched, Status: cmp.Or(res.Status, statusNotMatched), Steps: res.Steps,
		Forwards: len(res.Forwards), Emails: len(res.Emails), Payload: payload, PayloadSource: source,
		Missing: prog.Missing(payload)}
	if out.Steps == nil {
		out.Steps = []perch.RunStep{}
	}
	if out.Missing == nil {
		out.Missing = []string{}
	}
	m := res.Notification
	out.Notification = tryNotification{Title: m.Title, Message: m.Message, Severity: m.Severity, Tab: m.Tab,
		Source: m.Source, URL: m.URL, Scope: m.Scope}
	return respond(w, http.StatusOK, out)
}

// tryPayload is the payload a try runs on, and where it came from: the
// try's own; else, on a stored notification, the one kept with it; else
// an empty one.
func (s *Server) tryPayload(ctx context.Context, n *perch.Notification, in tryInput) (map[string]any, string, error) {
	if in.Payload != nil {
		return in.Payload, payloadFromRequest, nil
	}
	if in.NotificationID != "" {
		body, err := s.workflowDB.NotificationPayload(ctx, n.ID)
		switch {
		case err == nil:
			var m map[string]any
			if json.Unmarshal(body, &m) == nil && m != nil {
				return m, payloadKept, nil
			}
			// A body that is not a JSON object: the live run saw an empty
			// payload too.
		case perch.ErrorCode(err) != perch.ENOTFOUND:
			return nil, "", err
		}
	}
	return map[string]any{}, payloadNone, nil
}

// tryNotification is the event a try runs on: a stored notification the
// caller can see (notification_id), else the sample event over the
// defaults, for the caller's organisation.
func (s *Server) tryNotification(ctx context.Context, u *perch.User, in tryInput) (*perch.Notification, error) {
	if in.NotificationID != "" {
		return s.visibleNotification(ctx, u, in.NotificationID)
	}
	e := in.Event
	if e == nil {
		e = &tryEvent{}
	}
	n := &perch.Notification{Title: cmp.Or(e.Title, "Test event"), Message: e.Message, Severity: cmp.Or(e.Severity, perch.SeverityInfo),
		Tab: cmp.Or(e.Tab, perch.SenderInbound), Source: cmp.Or(e.Source, perch.SenderInbound), URL: e.URL,
		Scope: perch.Scope{Type: perch.ScopeOrg, ID: u.OrgID}, CreatedAt: s.now()}
	p := perch.Problems{}
	if !perch.ValidSeverity(n.Severity) {
		p.Add("event.severity", "must be info, warning or error")
	}
	for field, v := range map[string]string{"event.title": n.Title, "event.tab": n.Tab, "event.source": n.Source, "event.url": n.URL} {
		perch.CheckText(p, field, v, perch.SingleLine)
	}
	perch.CheckText(p, "event.message", n.Message, perch.MultiLine)
	if !perch.ValidURL(n.URL) {
		// A sample's link keeps to the rule of every notification's.
		p.Add("event.url", "must be an http:// or https:// address")
	}
	return n, p.Err()
}

// visibleNotification is the stored notification id, when u may see it
// (their own, their teams', their organisation's, or a broadcast since
// they joined); else ENOTFOUND, as for any other organisation's.
func (s *Server) visibleNotification(ctx context.Context, u *perch.User, id string) (*perch.Notification, error) {
	notFound := perch.Errorf(perch.ENOTFOUND, "No such notification.")
	n, err := store.ParseNotificationID(id)
	if err != nil || n < 1 {
		return nil, notFound
	}
	aud, err := s.workflowDB.Audience(ctx, u)
	if err != nil {
		return nil, err
	}
	// The first notification the user can see after id-1 is id itself,
	// when they can see it.
	list, err := s.workflowDB.Notifications(ctx, aud, strconv.FormatInt(n-1, 10), 1)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 || list[0].ID != id {
		return nil, notFound
	}
	return list[0], nil
}
