package workflow

import (
	"reflect"
	"testing"

	"github.com/perch-dev/perch"
)

// FuzzCompileRun checks that no condition or set expression, however
// malformed, makes Compile or Run panic, and that a run that fails leaves
// the notification as it was.
func FuzzCompileRun(f *testing.F) {
	for _, seed := range [][2]string{
		{`event.severity == "error"`, `event.title + " !"`},
		{`has(payload.alert) && payload.alert.priority == "P1"`, `payload.alert.service`},
		{`payload.items.all(i, i > 0)`, `string(now)`},
		{`[1,2,3].map(x, [x, x].map(y, y * x)).size() > 0`, `"a".repeat(100)`},
		{"evnt", "1 +"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, condition, title string) {
		p, err := Compile(mustWorkflow(condition, perch.Step{Set: map[string]string{"title": title}}))
		if err != nil {
			if perch.ErrorCode(err) != perch.EVALIDATION {
				t.Fatalf("Compile: %v", err)
			}
			return
		}
		r := p.Run(t.Context(), input(), Hooks{})
		if r.Status == perch.RunFailed && !reflect.DeepEqual(r.Notification, alert) {
			t.Fatalf("a failed run changed the notification: %+v", r.Notification)
		}
	})
}
