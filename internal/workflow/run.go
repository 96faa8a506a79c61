package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"github.com/perch-dev/perch"
)

// Input is what a workflow sees: the notification as accepted (before it is
// stored), the sender's JSON body as a map (nil when there is none), and the
// time. Ingest passes the body as Body instead, decoded only when an
// expression reads payload and then once for all the workflows it runs.
type Input struct {
	Notification perch.Notification
	Payload      map[string]any
	Body         *Payload // read when Payload is nil
	Now          time.Time
}

// Payload is a sender's JSON body, shared by the runs of every workflow on
// the notifications of one delivery: it is decoded the first time an
// expression reads `payload`, and not again. A body that is not a JSON
// object is an empty payload. It is not safe for concurrent use.
type Payload struct {
	body []byte
	val  ref.Val
}

// NewPayload wraps a sender's body.
func NewPayload(body []byte) *Payload { return &Payload{body: body} }

func (p *Payload) value() ref.Val {
	if p.val == nil {
		var m map[string]any
		if json.Unmarshal(p.body, &m) != nil || m == nil {
			m = emptyPayload
		}
		p.val = env.CELTypeAdapter().NativeToValue(m)
	}
	return p.val
}

// Hooks carry out the steps that need state shared by instances, so that
// the engine stays pure. Keys are prefixed by the workflow's id and the
// step's index ("wf_1/2/" + the key expression's value), so workflows and
// steps never share a counter.
type Hooks struct {
	// Throttle counts one against key in the current window of length per
	// and reports whether the count is within max.
	Throttle func(ctx context.Context, key string, max int, per time.Duration) (bool, error)
	// Digest holds n under key for a window (the first held starts the
	// window); the summary is the caller's job.
	Digest func(ctx context.Context, key string, window time.Duration, n perch.Notification) error
}

// Result is what a workflow did with one notification.
type Result struct {
	// Matched reports that the condition held. A run is worth recording when
	// Status is not "": a match, or a failure (even of the condition).
	Matched bool
	// Notification is the notification after set and route steps; the
	// input's, unchanged, when the run failed.
	Notification perch.Notification
	// Status is perch.RunDelivered, RunDropped, RunThrottled, RunDigested or
	// RunFailed; "" when the condition did not hold.
	Status string
	// Steps says what each step did, in order, for the run's record.
	Steps []perch.RunStep
	// Forwards and Emails are to be carried out after the notification is
	// stored; only a delivered run has any.
	Forwards []perch.ForwardStep
	Emails   []perch.EmailStep
}

// Step statuses, as perch.RunStep.Status records them.
const (
	stepOK      = "ok"
	stepFailed  = "failed"
	stepSkipped = "skipped"
	stepQueued  = "queued"
)

// stepCondition is the RunStep.Type of a condition that failed to evaluate.
const stepCondition = "condition"

// Run evaluates the condition and, when it holds, the steps in order: set
// changes fields (a severity other than info, warning or error, or a url
// perch.ValidURL refuses, fails the step), route changes the scope (the caller checks that the team or user
// belongs to the organisation), drop stops (RunDropped), throttle asks
// Hooks.Throttle and stops when over the limit (RunThrottled), digest hands
// the notification to Hooks.Digest and stops (RunDigested), forward and
// email are collected.
//
// Any error (a CEL runtime error, the cost limit, a hook's error, a bad
// value, a missing hook) gives Status RunFailed, the input's notification
// unchanged, no forwards or e-mails, and Steps saying which step failed and
// why: a failing workflow never loses or delays the notification. Run
// itself never fails.
func (p *Program) Run(ctx context.Context, in Input, h Hooks) Result {
	r := runPool.Get().(*run)
	*r = run{ctx: ctx, in: in}
	defer func() { *r = run{}; runPool.Put(r) }()
	r.vars.init(&r.in)
	if p.condition != nil {
		ok, err := r.evalBool(p.condition)
		if err != nil {
			return Result{Notification: in.Notification, Status: perch.RunFailed,
				Steps: []perch.RunStep{{Type: stepCondition, Status: stepFailed, Detail: err.Error()}}}
		}
		if !ok {
			return Result{Notification: in.Notification}
		}
	}

	res := Result{Matched: true, Notification: in.Notification, Status: perch.RunDelivered,
		Steps: make([]perch.RunStep, 0, len(p.steps))}
	n := &res.Notification
	for i := range p.steps {
		s := &p.steps[i]
		if res.Status != perch.RunDelivered {
			res.Steps = append(res.Steps, perch.RunStep{Type: s.typ, Status: stepSkipped})
			continue
		}
		rs, err := r.step(s, n, &res, h)
		if err != nil {
			res.Steps = append(res.Steps, perch.RunStep{Type: s.typ, Status: stepFailed, Detail: err.Error()})
			res.Status = perch.RunFailed
			continue
		}
		res.Steps = append(res.Steps, rs)
		// Later set steps see what earlier ones changed.
		r.vars.setEvent(n)
	}

	if res.Status == perch.RunFailed {
		res.Notification = in.Notification
	}
	if res.Status != perch.RunDelivered {
		res.Forwards, res.Emails = nil, nil
		for i := range res.Steps {
			if res.Steps[i].Status == stepQueued {
				res.Steps[i].Status, res.Steps[i].Detail = stepSkipped, "the notification was not delivered"
			}
		}
	}
	return res
}

// step carries out one step on n, setting res.Status when it stops the run.
func (r *run) step(s *step, n *perch.Notification, res *Result, h Hooks) (perch.RunStep, error) {
	rs := perch.RunStep{Type: s.typ, Status: stepOK}
	switch s.typ {
	case perch.StepSet:
		// Every field is evaluated before any is changed, so that a failure
		// leaves nothing half-set and each expression sees the same event.
		var vals [6]string // one per setFields
		for i, e := range s.set {
			v, err := r.evalString(e.prg)
			if err != nil {
				return rs, fmt.Errorf("%s: %w", e.field, err)
			}
			switch e.field {
			case fieldSeverity:
				if !perch.ValidSeverity(v) {
					return rs, fmt.Errorf("severity: %q is not info, warning or error", v)
				}
			case fieldPriority:
				p, ok := perch.ParsePriority(v)
				if !ok {
					return rs, fmt.Errorf("priority: %q is not 1 to 5 or min, low, default, high or urgent", v)
				}
				v = strconv.Itoa(p)
			case fieldURL:
				// The receivers refuse any other link, and a workflow's
				// author (or a sender feeding its payload) must not get
				// round them: perch.ValidURL is the one rule.
				if v = strings.TrimSpace(perch.CleanText(v, perch.SingleLine)); !perch.ValidURL(v) {
					return rs, fmt.Errorf("url: must be empty or an http:// or https:// address of at most %d bytes", perch.MaxURL)
				}
			}
			vals[i] = v
		}
		for i, e := range s.set {
			setField(n, e.field, vals[i])
		}
	case perch.StepRoute:
		n.Scope = perch.Scope{Type: s.src.Route.Scope, ID: s.src.Route.ID}
		if n.Scope.Type == perch.ScopeOrg {
			n.Scope.ID = ""
		}
		rs.Detail = "to " + n.Scope.Type
		if n.Scope.ID != "" {
			rs.Detail += " " + n.Scope.ID
		}
	case perch.StepDrop:
		res.Status = perch.RunDropped
	case perch.StepThrottle:
		if h.Throttle == nil {
			return rs, errors.New("throttling is not available")
		}
		key, err := r.key(s)
		if err != nil {
			return rs, fmt.Errorf("key: %w", err)
		}
		limit := s.src.Throttle.Max
		ok, err := h.Throttle(r.ctx, key, limit, s.per)
		if err != nil {
			return rs, err
		}
		if !ok {
			res.Status = perch.RunThrottled
			rs.Detail = fmt.Sprintf("over %d per %s", limit, shortDuration(s.per))
		}
	case perch.StepDigest:
		if h.Digest == nil {
			return rs, errors.New("digests are not available")
		}
		key, err := r.key(s)
		if err != nil {
			return rs, fmt.Errorf("key: %w", err)
		}
		if err := h.Digest(r.ctx, key, s.per, *n); err != nil {
			return rs, err
		}
		res.Status = perch.RunDigested
		rs.Detail = "held for " + shortDuration(s.per)
	case perch.StepForward:
		res.Forwards = append(res.Forwards, *s.src.Forward)
		rs.Status = stepQueued
	case perch.StepEmail:
		res.Emails = append(res.Emails, *s.src.Email)
		rs.Status, rs.Detail = stepQueued, "to "+s.src.Email.To
	}
	return rs, nil
}

// setField changes one field of n to v, cleaned as stored text must be and
// cut to maxEventText bytes (at a character's boundary), the size that the
// cost estimates of expressions reading event count on.
func setField(n *perch.Notification, field, v string) {
	switch field {
	case fieldTitle:
		n.Title = clip(perch.CleanText(v, perch.SingleLine))
	case fieldMessage:
		n.Message = clip(perch.CleanText(v, perch.MultiLine))
	case fieldSeverity:
		n.Severity = v
	case fieldTab:
		n.Tab = clip(perch.CleanText(v, perch.SingleLine))
	case fieldURL:
		n.URL = clip(perch.CleanText(v, perch.SingleLine))
	case fieldPriority:
		n.Priority, _ = perch.ParsePriority(v) // checked by the step
	}
}

// clip cuts s to at most maxEventText bytes without splitting a character.
func clip(s string) string {
	if len(s) <= maxEventText {
		return s
	}
	cut := maxEventText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// run is the state of one Run: its context, its variables and the CEL cost
// spent so far.
type run struct {
	ctx  context.Context
	in   Input
	vars vars
	cost uint64
}

// runPool keeps runs for reuse: ingest runs every enabled workflow of an
// organisation on every notification, and a run (its input, its variables)
// is a few hundred bytes that nothing keeps once Run returns.
var runPool = sync.Pool{New: func() any { return new(run) }}

// key evaluates a throttle or digest step's key, prefixed by the step's
// own.
func (r *run) key(s *step) (string, error) {
	if s.key == nil {
		return s.keyP, nil
	}
	v, err := r.evalString(s.key)
	if err != nil {
		return "", err
	}
	return s.keyP + v, nil
}

// eval evaluates prg and charges its cost to the run: its static bound, or
// what it counted as it ran.
func (r *run) eval(prg *expr) (ref.Val, error) {
	if r.cost += prg.max; r.cost > runCostLimit || (prg.max == 0 && r.cost >= runCostLimit) {
		return nil, errors.New("the workflow's cost limit is exceeded")
	}
	// The cost limit bounds one evaluation to well under a millisecond, so
	// the context is checked between expressions rather than inside them
	// (ContextEval costs a context and its goroutine-safe cancellation per
	// call).
	if err := r.ctx.Err(); err != nil {
		return nil, err
	}
	out, det, err := prg.Eval(&r.vars)
	if det != nil {
		if c := det.ActualCost(); c != nil {
			r.cost += *c
		}
	}
	if err != nil {
		return nil, err
	}
	if r.cost > runCostLimit {
		return nil, errors.New("the workflow's cost limit is exceeded")
	}
	return out, nil
}

// evalBool evaluates a condition, which must give true or false.
func (r *run) evalBool(prg *expr) (bool, error) {
	out, err := r.eval(prg)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("gave %s, not true or false", out.Type().TypeName())
	}
	return bool(b), nil
}

// evalString evaluates an expression that must give a string.
func (r *run) evalString(prg *expr) (string, error) {
	out, err := r.eval(prg)
	if err != nil {
		return "", err
	}
	s, ok := out.(types.String)
	if !ok {
		return "", fmt.Errorf("gave %s, not a string", out.Type().TypeName())
	}
	return string(s), nil
}

// vars is the activation CEL evaluates against: event, payload and now.
// Each is converted to a CEL value the first time an expression of the run
// asks for it, and not again: most conditions read only a field or two, and
// ingest runs every enabled workflow on every notification.
type vars struct {
	in      *Input
	ev      Event
	event   ref.Val
	payload ref.Val
	now     ref.Val
}

// emptyPayload is the payload of a notification that came without one.
var emptyPayload = map[string]any{}

func (v *vars) init(in *Input) {
	v.in = in
	v.setEvent(&in.Notification)
}

// setEvent makes `event` show n.
func (v *vars) setEvent(n *perch.Notification) {
	// The CEL value reads v.ev through its pointer, so it need not be
	// converted again.
	v.ev = Event{Title: n.Title, Message: n.Message, Severity: n.Severity, Tab: n.Tab, Source: n.Source, URL: n.URL,
		Scope: EventScope{Type: n.Scope.Type, ID: n.Scope.ID}, Priority: n.Priority, Tags: n.Tags}
	if v.ev.Priority == 0 {
		v.ev.Priority = perch.DefaultPriority(n.Severity) // what the store will give it
	}
	if v.ev.Tags == nil {
		v.ev.Tags = []string{}
	}
}

// ResolveName implements interpreter.Activation.
func (v *vars) ResolveName(name string) (any, bool) {
	switch name {
	case "event":
		if v.event == nil {
			v.event = env.CELTypeAdapter().NativeToValue(&v.ev)
		}
		return v.event, true
	case "payload":
		if v.payload == nil && v.in.Payload == nil && v.in.Body != nil {
			v.payload = v.in.Body.value()
		}
		if v.payload == nil {
			payload := v.in.Payload
			if payload == nil {
				payload = emptyPayload
			}
			v.payload = env.CELTypeAdapter().NativeToValue(payload)
		}
		return v.payload, true
	case "now":
		if v.now == nil {
			v.now = types.Timestamp{Time: v.in.Now}
		}
		return v.now, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (v *vars) Parent() interpreter.Activation { return nil }
