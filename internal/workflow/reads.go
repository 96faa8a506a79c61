package workflow

import (
	"slices"
	"strings"

	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// What a workflow reads of the payload, so that "Try it" can say when its
// sample lacks something a condition or a step reads: a condition over
// `payload.alert.priority` tried on a sample without it is "not matched"
// for want of data, not because the rule said no.

// payloadPaths are the payload paths src's checked AST reads with constant
// names, longest only: `payload.alert.priority` and
// `payload["alert"]["tags"]` give ["alert", "priority"] and
// ["alert", "tags"]; a bare `payload`, or an index computed as it runs,
// reads no path that can be named.
func payloadPaths(ast *celast.AST) [][]string {
	var paths [][]string
	celast.PreOrderVisit(ast.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if p, ok := payloadPath(e); ok && len(p) > 0 {
			paths = append(paths, p)
		}
	}))
	// Keep a path only when no other one extends it: visiting
	// payload.a.b also visits payload.a.
	slices.SortFunc(paths, func(a, b []string) int { return slices.Compare(a, b) })
	paths = slices.CompactFunc(paths, slices.Equal)
	longest := paths[:0]
	for i, p := range paths {
		if i+1 < len(paths) && hasPrefix(paths[i+1], p) {
			continue
		}
		longest = append(longest, p)
	}
	return longest
}

// payloadPath is the path e reads from the payload, when e is `payload`
// itself, a field selection or a constant string index of one.
func payloadPath(e celast.Expr) ([]string, bool) {
	switch e.Kind() {
	case celast.IdentKind:
		return nil, e.AsIdent() == "payload"
	case celast.SelectKind:
		s := e.AsSelect()
		p, ok := payloadPath(s.Operand())
		if !ok {
			return nil, false
		}
		return append(slices.Clip(p), s.FieldName()), true
	case celast.CallKind:
		c := e.AsCall()
		if c.FunctionName() != operators.Index || len(c.Args()) != 2 || c.Args()[1].Kind() != celast.LiteralKind {
			return nil, false
		}
		key, isString := c.Args()[1].AsLiteral().(types.String)
		if !isString {
			return nil, false
		}
		p, ok := payloadPath(c.Args()[0])
		if !ok {
			return nil, false
		}
		return append(slices.Clip(p), string(key)), true
	}
	return nil, false
}

func hasPrefix(p, prefix []string) bool {
	return len(p) > len(prefix) && slices.Equal(p[:len(prefix)], prefix)
}

// Reads lists the payload paths the program's expressions read, each as
// written in CEL's dot notation ("payload.alert.priority"), sorted.
func (p *Program) Reads() []string {
	var out []string
	for _, e := range p.exprs() {
		for _, path := range e.reads {
			out = append(out, "payload."+strings.Join(path, "."))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Missing lists the payload paths the program reads that payload lacks: a
// key absent at some depth along the path. A path that reaches a value
// other than an object before its end is not missing (CEL may index a
// list or fail the run, which the run itself reports).
func (p *Program) Missing(payload map[string]any) []string {
	var out []string
	for _, e := range p.exprs() {
		for _, path := range e.reads {
			if lacks(payload, path) {
				out = append(out, "payload."+strings.Join(path, "."))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func lacks(m map[string]any, path []string) bool {
	for _, k := range path {
		v, ok := m[k]
		if !ok {
			return true
		}
		if m, ok = v.(map[string]any); !ok {
			return false
		}
	}
	return false
}

// exprs are the program's compiled expressions: the condition, then each
// step's.
func (p *Program) exprs() []*expr {
	var out []*expr
	if p.condition != nil {
		out = append(out, p.condition)
	}
	for _, st := range p.steps {
		for _, s := range st.set {
			out = append(out, s.prg)
		}
		if st.key != nil {
			out = append(out, st.key)
		}
	}
	return out
}
