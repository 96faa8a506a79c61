package server

import (
	"context"
	"sync"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/worker"
	"github.com/perch-dev/perch/internal/workflow"
)

// flows keeps, per organisation, the compiled programs of its enabled
// workflows, in the order they run (oldest first). An organisation is
// loaded from the store the first time one of its notifications comes, and
// forgotten when its workflows change, here or on another instance
// (perch.FanoutWorkflows), so the next notification loads it afresh.
type flows struct {
	cache *workflow.Cache
	mu    sync.RWMutex
	orgs  map[string][]flow
	gen   uint64 // bumped by every forget: a load that raced one is not kept
}

// flow is one enabled workflow with its compiled program.
type flow struct {
	w *perch.Workflow
	p *workflow.Program
}

func newFlows() *flows { return &flows{cache: workflow.NewCache(), orgs: map[string][]flow{}} }

// forget drops orgID's programs ("" drops every organisation's).
func (f *flows) forget(orgID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	if orgID == "" {
		clear(f.orgs)
		return
	}
	for _, fl := range f.orgs[orgID] {
		f.cache.Forget(fl.w.ID)
	}
	delete(f.orgs, orgID)
}

// workflowsChanged is called after every change to an organisation's
// workflows (create, update, delete, install): this instance and every
// other compile them afresh before their next notification.
func (s *Server) workflowsChanged(ctx context.Context, orgID string) {
	s.flows.forget(orgID)
	if err := s.fanout.Publish(context.WithoutCancel(ctx), perch.FanoutMessage{Kind: perch.FanoutWorkflows, OrgID: orgID}); err != nil {
		s.log.Warn("publishing a change of workflows failed; other instances go on with the workflows they compiled", "org", orgID, "err", err)
	}
}

// sealedPrefix marks a forward secret sealed with the server's key.
const sealedPrefix = worker.SealedPrefix

// sealSecret seals a forward step's secret for the database: workflows and
// queued jobs keep it only in this form, and the API never shows it.
func (s *Server) sealSecret(plain string) (string, error) {
	return worker.SealSecret(s.opts.Secrets, plain)
}

// openSecret reads back what sealSecret made.
func (s *Server) openSecret(stored string) (string, error) {
	return worker.OpenSecret(s.opts.Secrets, stored)
}
