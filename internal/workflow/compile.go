// Package workflow compiles and runs organisations' workflows
// (docs/DESIGN.md, Workflows and the marketplace): a CEL condition over a
// notification, then steps that change, route, drop, throttle, digest,
// forward or mail it. The engine is pure: the state
// that instances share (throttle counters, digests) lives behind Hooks, and
// forwards and e-mails are handed back to the caller to carry out.
package workflow

import (
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/ext"

	"github.com/perch-dev/perch"
)

// Cost limits. A step's CEL expression may cost at most exprCostLimit, and
// all the expressions of one run together at most runCostLimit. CEL counts
// about one unit per operation and more for work proportional to a string's
// or a list's size; a realistic condition such as
// `event.severity == "error" && payload.alert.priority == "P1"` costs under
// 20, and a comprehension over a 1,000-item payload list a few thousand. The
// limits leave room for those and stop a workflow from spending more than a
// few milliseconds of CPU on one notification, which ingest cannot afford.
const (
	exprCostLimit = 10_000
	runCostLimit  = 50_000
)

// maxSecretLen bounds a forward step's signing secret, in bytes.
const maxSecretLen = 256

// Fields that a set step may change.
const (
	fieldTitle    = "title"
	fieldMessage  = "message"
	fieldSeverity = "severity"
	fieldTab      = "tab"
	fieldURL      = "url"
	fieldPriority = "priority" // a string expression: 1–5 or a name (perch.ParsePriority)
)

// setFields are the fields a set step may change, in the order it sets them.
var setFields = []string{fieldTitle, fieldMessage, fieldSeverity, fieldTab, fieldURL, fieldPriority}

// Event is what CEL expressions see as `event`: the notification's fields
// that a rule may test. It is a Go struct declared to CEL (not a map) so that
// a misspelt field or a condition of the wrong type is refused when the
// workflow is saved, not when a notification arrives.
type Event struct {
	Title    string     `cel:"title"`
	Message  string     `cel:"message"`
	Severity string     `cel:"severity"`
	Tab      string     `cel:"tab"`
	Source   string     `cel:"source"`
	URL      string     `cel:"url"`
	Scope    EventScope `cel:"scope"`
	Priority int        `cel:"priority"` // 1 (min) to 5 (urgent)
	Tags     []string   `cel:"tags"`
}

// EventScope is `event.scope`: who the notification is for.
type EventScope struct {
	Type string `cel:"type"`
	ID   string `cel:"id"`
}

// env is the CEL environment every workflow compiles in. It is built once:
// its declarations never change, and building it takes about a millisecond.
var env, envErr = newEnv()

// checking serialises env.Compile. cel-go v0.33.2's checker fills the
// environment's catalog lazily (a sync.Once in checker.Env.Catalog) while
// another check that enters a comprehension's scope reads the same field
// unguarded (checker.Env.cloneWithDecls): two workflows compiled at once
// race there (seen by the race detector in TestCompileRefuses). Compiling
// is not on the delivery path (a compiled workflow is cached), so one at
// a time costs nothing that matters.
var checking sync.Mutex

func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[Event](), ext.ParseStructTags(true)),
		ext.Strings(),
		cel.Variable("event", cel.ObjectType("workflow.Event")),
		cel.Variable("payload", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("now", cel.TimestampType),
	)
}

// Program is a compiled workflow, safe for concurrent use.
type Program struct {
	w         *perch.Workflow
	condition *expr // nil: always
	steps     []step
}

// step is one compiled step.
type step struct {
	typ  string
	src  *perch.Step
	set  []setExpr     // set: in field order, for runs that read the same way each time
	key  *expr         // throttle and digest; nil: one key for the step
	keyP string        // the prefix of hook keys: workflow id and step index
	per  time.Duration // throttle's window, digest's window
}

// setExpr is one field of a set step.
type setExpr struct {
	field string
	prg   *expr
}

// Workflow returns a copy of the workflow p was compiled from, taken when it
// was compiled. It must not be changed: programs are shared.
func (p *Program) Workflow() *perch.Workflow { return p.w }

// Compile checks a workflow and compiles its CEL: the condition (a bool
// expression; "" means always), every set expression (a string expression
// for title, message, severity, tab or url; a severity's value is checked
// when it runs), and throttle and digest keys (string expressions; "" is one
// key). Expressions of type dyn, such as `payload.alert.summary`, are
// accepted and their type checked when they run.
//
// It returns every problem at once as an EVALIDATION *perch.Error whose
// fields name where each is ("name", "condition", "steps",
// "steps[2].set.title", "steps[0].route.scope", "steps[1].throttle.per"),
// with CEL's own message for an expression that does not compile.
func Compile(w *perch.Workflow) (*Program, error) {
	if envErr != nil {
		return nil, perch.Errorf(perch.EINTERNAL, "workflow: the CEL environment: %v", envErr)
	}
	if w == nil {
		return nil, perch.Problems{"workflow": "is required"}.Err()
	}
	w = clone(w)
	p := perch.Problems{}
	checkText(p, "name", w.Name, perch.MaxWorkflowNameLen, perch.SingleLine, true)
	checkText(p, "description", w.Description, perch.MaxWorkflowDescLen, perch.MultiLine, false)

	prog := &Program{w: w}
	if strings.TrimSpace(w.Condition) != "" {
		prog.condition = compileExpr(p, "condition", w.Condition, cel.BoolType)
	}
	switch n := len(w.Steps); {
	case n == 0:
		p.Add("steps", "must hold at least one step")
	case n > perch.MaxWorkflowSteps:
		p.Add("steps", fmt.Sprintf("must hold at most %d steps", perch.MaxWorkflowSteps))
	}
	if len(w.Steps) <= perch.MaxWorkflowSteps {
		prog.steps = make([]step, len(w.Steps))
		for i := range w.Steps {
			prog.steps[i] = compileStep(p, w.ID, i, &w.Steps[i])
		}
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return prog, nil
}

// compileStep checks and compiles the step at index i, recording problems
// under "steps[i]...".
func compileStep(p perch.Problems, workflowID string, i int, s *perch.Step) step {
	at := fmt.Sprintf("steps[%d]", i)
	st := step{typ: s.Type(), src: s, keyP: fmt.Sprintf("%s/%d/", workflowID, i)}
	switch st.typ {
	case "":
		p.Add(at, "must have exactly one of set, route, drop, throttle, digest, forward, email")
	case perch.StepSet:
		if len(s.Set) == 0 {
			p.Add(at+".set", "must change at least one field")
		}
		for _, field := range setFields {
			if expr, ok := s.Set[field]; ok {
				st.set = append(st.set, setExpr{field: field, prg: compileExpr(p, at+".set."+field, expr, cel.StringType)})
			}
		}
		for field := range s.Set {
			if !settable(field) {
				p.Add(at+".set."+field, "is not a field a workflow can set: use title, message, severity, tab, url or priority")
			}
		}
	case perch.StepRoute:
		switch s.Route.Scope {
		case perch.ScopeUser, perch.ScopeTeam:
			if strings.TrimSpace(s.Route.ID) == "" {
				p.Add(at+".route.id", "is required for scope "+s.Route.Scope)
			} else {
				perch.CheckText(p, at+".route.id", s.Route.ID, perch.SingleLine)
			}
		case perch.ScopeOrg:
			if s.Route.ID != "" {
				p.Add(at+".route.id", "must be empty for scope org: a workflow routes within its own organisation")
			}
		default:
			p.Add(at+".route.scope", "must be user, team or org")
		}
	case perch.StepThrottle:
		t := s.Throttle
		if t.Max < 1 || t.Max > perch.MaxThrottleMax {
			p.Add(at+".throttle.max", fmt.Sprintf("must be between 1 and %d", perch.MaxThrottleMax))
		}
		checkWindow(p, at+".throttle.per", time.Duration(t.Per), perch.MinThrottleWindow, perch.MaxThrottleWindow)
		st.per = time.Duration(t.Per)
		st.key = compileKey(p, at+".throttle.key", t.Key)
	case perch.StepDigest:
		checkWindow(p, at+".digest.window", time.Duration(s.Digest.Window), perch.MinDigestWindow, perch.MaxDigestWindow)
		st.per = time.Duration(s.Digest.Window)
		st.key = compileKey(p, at+".digest.key", s.Digest.Key)
	case perch.StepForward:
		checkForwardURL(p, at+".forward.url", s.Forward.URL)
		if len(s.Forward.Secret) > maxSecretLen {
			p.Add(at+".forward.secret", fmt.Sprintf("must be at most %d bytes", maxSecretLen))
		} else {
			perch.CheckText(p, at+".forward.secret", s.Forward.Secret, perch.SingleLine)
		}
	case perch.StepEmail:
		if strings.TrimSpace(s.Email.To) == "" {
			p.Add(at+".email.to", `must be "owners", "admins" or a team id`)
		} else {
			perch.CheckText(p, at+".email.to", s.Email.To, perch.SingleLine)
		}
	}
	return st
}

// clone copies w deeply enough that changing the caller's workflow, its
// steps or their maps afterwards cannot change a compiled program.
func clone(w *perch.Workflow) *perch.Workflow {
	c := *w
	c.Steps = make([]perch.Step, len(w.Steps))
	for i, s := range w.Steps {
		if s.Set != nil {
			s.Set = maps.Clone(s.Set)
		}
		s.Route = clonePtr(s.Route)
		s.Drop = clonePtr(s.Drop)
		s.Throttle = clonePtr(s.Throttle)
		s.Digest = clonePtr(s.Digest)
		s.Forward = clonePtr(s.Forward)
		s.Email = clonePtr(s.Email)
		c.Steps[i] = s
	}
	return &c
}

// clonePtr returns a pointer to a copy of *p, or nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// settable reports whether a set step may change field.
func settable(field string) bool {
	return slices.Contains(setFields, field)
}

// compileKey compiles a throttle or digest key; "" is one key for the step.
func compileKey(p perch.Problems, field, expr string) *expr {
	if strings.TrimSpace(expr) == "" {
		return nil
	}
	return compileExpr(p, field, expr, cel.StringType)
}

// expr is a compiled expression. When CEL's static estimate bounds its
// cost within exprCostLimit (for anything it reads, of any size a delivery
// can have), max is that bound and the program runs without cost
// tracking, which costs about as much as the evaluation of a short
// condition; otherwise max is 0 and the program counts its cost as it runs
// and stops at the limit.
type expr struct {
	cel.Program
	max   uint64
	reads [][]string // the payload paths it reads (payloadPaths)
}

// compileExpr compiles one CEL expression whose result must be of type want
// (or dyn, checked when it runs), recording a problem under field when it
// cannot. It returns nil when it records one.
func compileExpr(p perch.Problems, field, src string, want *cel.Type) *expr {
	if len(src) > perch.MaxWorkflowExprLen {
		p.Add(field, fmt.Sprintf("must be at most %d bytes", perch.MaxWorkflowExprLen))
		return nil
	}
	if problem := perch.TextProblem(src, perch.MultiLine); problem != "" {
		p.Add(field, problem)
		return nil
	}
	checking.Lock()
	ast, iss := env.Compile(src)
	checking.Unlock()
	if iss.Err() != nil {
		p.Add(field, "does not compile: "+iss.Err().Error())
		return nil
	}
	if out := ast.OutputType(); !out.IsExactType(want) && !out.IsExactType(cel.DynType) {
		p.Add(field, fmt.Sprintf("must be a %s expression, not %s", want, out))
		return nil
	}
	e := &expr{reads: payloadPaths(ast.NativeRep())}
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	if est, err := env.EstimateCost(ast, deliverySized{}); err == nil && est.Max <= exprCostLimit {
		e.max = max(est.Max, 1)
	} else {
		opts = append(opts, cel.CostLimit(exprCostLimit))
	}
	prg, err := env.Program(ast, opts...)
	if err != nil {
		p.Add(field, "does not compile: "+err.Error())
		return nil
	}
	e.Program = prg
	return e
}

// Size bounds of what an expression reads, for CEL's cost estimate: no
// field of `event` is longer than maxEventText (the receivers clip or
// refuse longer text, and set steps clip what they write), and nothing in
// a payload is larger than the delivery it came in (the receivers take at
// most 5 MiB).
const (
	maxEventText    = 8 << 10
	maxDeliverySize = 5 << 20
)

// deliverySized is the cost estimator of compileExpr: it sizes event's
// fields and the payload's values by the bounds above, and leaves the
// rest (constants, what is computed from them) and the cost of calls to
// CEL's standard model.
type deliverySized struct{}

func (deliverySized) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if n.ComputedSize() != nil {
		return nil
	}
	switch path := n.Path(); {
	case len(path) > 0 && path[0] == "event":
		return &cost.SizeEstimate{Min: 0, Max: maxEventText}
	case len(path) > 0:
		return &cost.SizeEstimate{Min: 0, Max: maxDeliverySize}
	}
	return nil
}

func (deliverySized) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// checkText records a problem with a text field: over max characters, or
// not text of form; blank too when required.
func checkText(p perch.Problems, field, s string, max int, form perch.TextForm, required bool) {
	s = strings.TrimSpace(s)
	switch n := utf8.RuneCountInString(s); {
	case n == 0 && required:
		p.Add(field, "is required")
	case n > max:
		p.Add(field, fmt.Sprintf("must be at most %d characters", max))
	default:
		perch.CheckText(p, field, s, form)
	}
}

// checkWindow records a problem with a duration outside [min, max].
func checkWindow(p perch.Problems, field string, d, min, max time.Duration) {
	if d < min || d > max {
		p.Add(field, fmt.Sprintf("must be between %s and %s", shortDuration(min), shortDuration(max)))
	}
}

// shortDuration writes d as a person would: "1m", "24h", not "1m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// checkForwardURL records a problem with a forward URL unless it is an
// absolute http or https URL with a host. Which addresses it may reach is
// checked when it is called (the SSRF guard), since a name's address can
// change.
func checkForwardURL(p perch.Problems, field, raw string) {
	if problem := perch.TextProblem(raw, perch.SingleLine); problem != "" {
		p.Add(field, problem)
		return
	}
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		p.Add(field, "is required")
	case err != nil, u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.Hostname() == "":
		p.Add(field, "must be an absolute http or https URL, such as https://example.com/hook")
	case u.User != nil:
		p.Add(field, "must not hold a user name or password: sign with the secret instead")
	}
}
