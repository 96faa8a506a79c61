package workflow

import (
	"fmt"
	"testing"

	"github.com/perch-dev/perch"
)

// BenchmarkRun runs one workflow, a condition and a set step, over a
// realistic notification.
func BenchmarkRun(b *testing.B) {
	p := mustCompile(b, `event.severity == "error" && has(payload.alert) && payload.alert.priority == "P1"`,
		perch.Step{Set: map[string]string{"title": `"[P1] " + event.title`, "tab": `"Ops"`}})
	in := input()
	b.ReportAllocs()
	for b.Loop() {
		if r := p.Run(b.Context(), in, Hooks{}); r.Status != perch.RunDelivered {
			b.Fatalf("Status = %q", r.Status)
		}
	}
}

// BenchmarkTenWorkflows runs ten workflows on one notification, as ingest
// does for an organisation with ten: one matches.
func BenchmarkTenWorkflows(b *testing.B) {
	var ps []*Program
	for i := range 10 {
		// Like real organisations' rules: most test a service or a source
		// that this notification is not from.
		cond := fmt.Sprintf(`event.source == "monitoring" && event.title.contains("svc-%d")`, i)
		if i%3 == 1 {
			cond = fmt.Sprintf(`has(payload.alert) && payload.alert.service == "svc-%d"`, i)
		}
		if i == 9 {
			cond = `event.severity == "error" && has(payload.alert) && payload.alert.priority == "P1"`
		}
		ps = append(ps, mustCompile(b, cond, perch.Step{Set: map[string]string{"title": `"[P1] " + event.title`}}))
	}
	in := input()
	b.ReportAllocs()
	for b.Loop() {
		matched := 0
		for _, p := range ps {
			if p.Run(b.Context(), in, Hooks{}).Matched {
				matched++
			}
		}
		if matched != 1 {
			b.Fatalf("%d matched, want 1", matched)
		}
	}
}
