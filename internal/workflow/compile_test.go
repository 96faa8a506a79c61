package workflow

import (
	"errors"
	"strings"
	"testing"
	"time"

	"cel.dev/cel-go/cel"

	"github.com/perch-dev/perch"
)

// minute is a perch.Duration of one minute, for step literals.
const minute = perch.Duration(time.Minute)

// mustWorkflow returns a valid workflow named "Test" with the given
// condition and steps.
func mustWorkflow(condition string, steps ...perch.Step) *perch.Workflow {
	return &perch.Workflow{ID: "wf_1", Name: "Test", Enabled: true, Condition: condition, Steps: steps, Version: 1}
}

func TestCompileAcceptsEachStepType(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]perch.Step{
		"set":               {Set: map[string]string{"title": `event.title + " !"`, "severity": `"error"`, "message": "payload.text", "tab": `"Ops"`, "url": `"https://example.com"`}},
		"route to a team":   {Route: &perch.RouteStep{Scope: "team", ID: "team_1"}},
		"route to a user":   {Route: &perch.RouteStep{Scope: "user", ID: "usr_1"}},
		"route to org":      {Route: &perch.RouteStep{Scope: "org"}},
		"drop":              {Drop: &perch.DropStep{}},
		"throttle":          {Throttle: &perch.ThrottleStep{Key: "event.source", Max: 5, Per: minute}},
		"throttle, one key": {Throttle: &perch.ThrottleStep{Max: 1, Per: perch.Duration(time.Second)}},
		"digest":            {Digest: &perch.DigestStep{Key: `event.scope.type + ":" + event.scope.id`, Window: 15 * minute}},
		"forward":           {Forward: &perch.ForwardStep{URL: "https://hooks.example.com/perch", Secret: "s3cret"}},
		"email owners":      {Email: &perch.EmailStep{To: "owners"}},
		"email a team":      {Email: &perch.EmailStep{To: "team_1"}},
	} {
		t.Run(name, func(t *testing.T) {
			for _, cond := range []string{"", `event.severity == "error"`, `has(payload.alert) && payload.alert.priority == "P1"`, "payload.flag", `now > timestamp("2020-01-01T00:00:00Z")`, `event.title.lowerAscii().contains("db")`} {
				p, err := Compile(mustWorkflow(cond, s))
				if err != nil {
					t.Fatalf("Compile(condition %q): %v", cond, err)
				}
				if p.Workflow().Name != "Test" {
					t.Errorf("Workflow().Name = %q", p.Workflow().Name)
				}
			}
		})
	}
}

func TestCompileRefuses(t *testing.T) {
	t.Parallel()
	drop := perch.Step{Drop: &perch.DropStep{}}
	tooMany := make([]perch.Step, perch.MaxWorkflowSteps+1)
	for i := range tooMany {
		tooMany[i] = drop
	}
	for _, tt := range []struct {
		name  string
		w     *perch.Workflow
		field string
		want  string // part of the problem
	}{
		{"an unknown variable in the condition", mustWorkflow("evnt.title == 'x'", drop), "condition", "undeclared reference to 'evnt'"},
		{"an unknown event field", mustWorkflow("event.titel == 'x'", drop), "condition", "undefined field 'titel'"},
		{"a condition that is not bool", mustWorkflow("event.title", drop), "condition", "must be a bool expression"},
		{"a condition that does not parse", mustWorkflow("event.title ==", drop), "condition", "does not compile: ERROR"},
		{"set of an unknown field", mustWorkflow("", perch.Step{Set: map[string]string{"colour": `"red"`}}), "steps[0].set.colour", "not a field"},
		{"a set expression that is not a string", mustWorkflow("", drop, perch.Step{Set: map[string]string{"title": "1 + 2"}}), "steps[1].set.title", "must be a string expression"},
		{"a set step that sets nothing", mustWorkflow("", perch.Step{Set: map[string]string{}}), "steps[0].set", "at least one"},
		{"no steps", mustWorkflow(""), "steps", "at least one step"},
		{"too many steps", mustWorkflow("", tooMany...), "steps", "at most 20"},
		{"two types in one step", mustWorkflow("", perch.Step{Drop: &perch.DropStep{}, Email: &perch.EmailStep{To: "owners"}}), "steps[0]", "exactly one"},
		{"no type in a step", mustWorkflow("", perch.Step{}), "steps[0]", "exactly one"},
		{"route to everyone", mustWorkflow("", perch.Step{Route: &perch.RouteStep{Scope: "everyone"}}), "steps[0].route.scope", "user, team or org"},
		{"route to a team without an id", mustWorkflow("", perch.Step{Route: &perch.RouteStep{Scope: "team"}}), "steps[0].route.id", "required"},
		{"throttle max 0", mustWorkflow("", perch.Step{Throttle: &perch.ThrottleStep{Max: 0, Per: minute}}), "steps[0].throttle.max", "between 1 and"},
		{"throttle per 1ms", mustWorkflow("", drop, perch.Step{Throttle: &perch.ThrottleStep{Max: 1, Per: perch.Duration(time.Millisecond)}}), "steps[1].throttle.per", "between 1s and 24h"},
		{"a throttle key that is not a string", mustWorkflow("", perch.Step{Throttle: &perch.ThrottleStep{Key: "event.title == ''", Max: 1, Per: minute}}), "steps[0].throttle.key", "string expression"},
		{"digest window 1s", mustWorkflow("", perch.Step{Digest: &perch.DigestStep{Window: perch.Duration(time.Second)}}), "steps[0].digest.window", "between 1m and 24h"},
		{"forward to ftp", mustWorkflow("", perch.Step{Forward: &perch.ForwardStep{URL: "ftp://x"}}), "steps[0].forward.url", "http or https"},
		{"forward to a relative URL", mustWorkflow("", perch.Step{Forward: &perch.ForwardStep{URL: "/hook"}}), "steps[0].forward.url", "http or https"},
		{"a forward secret too long", mustWorkflow("", perch.Step{Forward: &perch.ForwardStep{URL: "https://x.example", Secret: strings.Repeat("s", 257)}}), "steps[0].forward.secret", "256 bytes"},
		{"email to nobody", mustWorkflow("", perch.Step{Email: &perch.EmailStep{To: ""}}), "steps[0].email.to", "owners"},
		{"no name", &perch.Workflow{Name: " ", Steps: []perch.Step{drop}}, "name", "required"},
		{"a name with a control character", &perch.Workflow{Name: "a\x00b", Steps: []perch.Step{drop}}, "name", "control"},
		{"a description too long", &perch.Workflow{Name: "x", Description: strings.Repeat("d", perch.MaxWorkflowDescLen+1), Steps: []perch.Step{drop}}, "description", "at most"},
		{"a condition too long", mustWorkflow(strings.Repeat("true && ", perch.MaxWorkflowExprLen/8)+"true", drop), "condition", "at most 2000 bytes"},
		{"a condition with a NUL", mustWorkflow("true\x00", drop), "condition", "control"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(tt.w)
			if p != nil {
				t.Error("Compile returned a program for an invalid workflow")
			}
			var e *perch.Error
			if !errors.As(err, &e) || e.Code != perch.EVALIDATION {
				t.Fatalf("Compile: %v, want a %s error", err, perch.EVALIDATION)
			}
			got, ok := e.Fields[tt.field]
			if !ok || !strings.Contains(got, tt.want) {
				t.Errorf("Fields = %q, want %q holding %q", e.Fields, tt.field, tt.want)
			}
		})
	}
}

func TestCompileReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := Compile(&perch.Workflow{Condition: "evnt", Steps: []perch.Step{
		{Set: map[string]string{"title": "1"}},
		{Route: &perch.RouteStep{Scope: "everyone"}},
		{Throttle: &perch.ThrottleStep{Max: 0, Per: 0}},
	}})
	var e *perch.Error
	if !errors.As(err, &e) {
		t.Fatalf("Compile: %v", err)
	}
	for _, f := range []string{"name", "condition", "steps[0].set.title", "steps[1].route.scope", "steps[2].throttle.max", "steps[2].throttle.per"} {
		if _, ok := e.Fields[f]; !ok {
			t.Errorf("no problem for %s in %q", f, e.Fields)
		}
	}
	if want := "does not compile: ERROR: <input>:1:1: undeclared reference to 'evnt'"; !strings.HasPrefix(e.Fields["condition"], want) {
		t.Errorf("condition: %q, want it to start %q", e.Fields["condition"], want)
	}
}

func TestCompileCopiesTheWorkflow(t *testing.T) {
	t.Parallel()
	w := mustWorkflow("", perch.Step{Set: map[string]string{"title": `"a"`}}, perch.Step{Email: &perch.EmailStep{To: "owners"}})
	p, err := Compile(w)
	if err != nil {
		t.Fatal(err)
	}
	w.Name, w.Steps[0].Set["title"], w.Steps[1].Email.To = "Changed", `"b"`, "admins"
	r := p.Run(t.Context(), input(), Hooks{})
	if p.Workflow().Name != "Test" || r.Notification.Title != "a" || r.Emails[0].To != "owners" {
		t.Errorf("the program changed with its workflow: %q, %+v, %v", p.Workflow().Name, r.Notification, r.Emails)
	}
}

func TestCompileNil(t *testing.T) {
	t.Parallel()
	if _, err := Compile(nil); perch.ErrorCode(err) != perch.EVALIDATION {
		t.Errorf("Compile(nil): %v", err)
	}
}

// Expressions whose cost CEL's estimate bounds within the limit run
// without counting their cost; the rest count it as they run (and the
// cost-limit cases of TestRunFailures show them stopped).
func TestCompileBoundsCostStatically(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		expr    string
		want    *cel.Type
		bounded bool
	}{
		{`event.severity == "error" && has(payload.alert) && payload.alert.priority == "P1"`, cel.BoolType, true},
		{`event.source == "monitoring" && event.title.contains("svc-1")`, cel.BoolType, true},
		{`"[P1] " + event.title`, cel.StringType, true},
		{`payload.items.exists(i, i == 1)`, cel.BoolType, false},          // as long as the payload's list
		{`string(payload.summary).contains("disk")`, cel.BoolType, false}, // as long as a payload's string
	} {
		p := perch.Problems{}
		e := compileExpr(p, "x", tt.expr, tt.want)
		if e == nil {
			t.Fatalf("%s: %v", tt.expr, p)
		}
		if got := e.max > 0; got != tt.bounded || e.max > exprCostLimit {
			t.Errorf("%s: bound %d, want bounded %v", tt.expr, e.max, tt.bounded)
		}
	}
}
