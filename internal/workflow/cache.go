package workflow

import (
	"sync"

	"github.com/perch-dev/perch"
)

// Cache keeps compiled programs per workflow id and version on this
// instance, so that ingest compiles a workflow once, not once per
// notification. Forget drops a workflow after a change, which the caller
// announces to other instances through the fan-out. A Cache is safe for
// concurrent use.
type Cache struct {
	mu       sync.Mutex
	programs map[string]*Program
	compiles int // how many times Program compiled, for tests
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{programs: map[string]*Program{}}
}

// Program returns w's compiled program, compiling it when the cache holds
// none for w's id and version, and keeping it in place of an older
// version's. A workflow that does not compile is not kept, and Compile's
// error is returned.
func (c *Cache) Program(w *perch.Workflow) (*Program, error) {
	if w == nil {
		return Compile(nil)
	}
	c.mu.Lock()
	p, ok := c.programs[w.ID]
	c.mu.Unlock()
	if ok && p.w.Version == w.Version {
		return p, nil
	}
	// Compiling outside the lock keeps other workflows' lookups fast; two
	// callers that miss together both compile, and the last one's is kept.
	p, err := Compile(w)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.compiles++
	if old, ok := c.programs[w.ID]; !ok || old.w.Version <= w.Version {
		c.programs[w.ID] = p
	}
	c.mu.Unlock()
	return p, nil
}

// Forget drops workflowID's program, so that the next Program compiles it
// afresh.
func (c *Cache) Forget(workflowID string) {
	c.mu.Lock()
	delete(c.programs, workflowID)
	c.mu.Unlock()
}
