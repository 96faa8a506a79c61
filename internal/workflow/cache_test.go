package workflow

import (
	"sync"
	"testing"

	"github.com/perch-dev/perch"
)

func TestCache(t *testing.T) {
	t.Parallel()
	c := NewCache()
	w := mustWorkflow(`event.severity == "error"`, perch.Step{Drop: &perch.DropStep{}})
	program := func(w *perch.Workflow) *Program {
		t.Helper()
		p, err := c.Program(w)
		if err != nil {
			t.Fatalf("Program: %v", err)
		}
		return p
	}

	first := program(w)
	if again := program(w); again != first || c.compiles != 1 {
		t.Errorf("the same version: %d compiles, same program %v", c.compiles, again == first)
	}

	v2 := *w
	v2.Version, v2.Condition = 2, `event.severity == "info"`
	second := program(&v2)
	if second == first || c.compiles != 2 || second.Workflow().Version != 2 {
		t.Errorf("a new version: %d compiles, program of version %d", c.compiles, second.Workflow().Version)
	}
	if program(&v2) != second || c.compiles != 2 {
		t.Errorf("version 2 again: %d compiles", c.compiles)
	}

	c.Forget(w.ID)
	if third := program(&v2); third == second || c.compiles != 3 {
		t.Errorf("after Forget: %d compiles", c.compiles)
	}
	c.Forget("wf_unknown") // forgetting what is not there is fine

	bad := mustWorkflow("evnt", perch.Step{Drop: &perch.DropStep{}})
	bad.ID = "wf_bad"
	if _, err := c.Program(bad); perch.ErrorCode(err) != perch.EVALIDATION {
		t.Errorf("Program(bad): %v", err)
	}
}

func TestCacheConcurrent(t *testing.T) {
	t.Parallel()
	c := NewCache()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			w := mustWorkflow(`event.severity == "error"`, perch.Step{Drop: &perch.DropStep{}})
			w.Version = i%2 + 1
			for range 50 {
				p, err := c.Program(w)
				if err != nil || p.Workflow().ID != "wf_1" {
					t.Errorf("Program: %v", err)
					return
				}
				if i == 0 {
					c.Forget(w.ID)
				}
			}
		})
	}
	wg.Wait()
}
