package server

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"

	"github.com/perch-dev/perch"
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

// Queued work of workflows (store.Job payloads): carried out by the
// background worker after the notification is stored.
type (
	// forwardJob POSTs Notification to URL, signed with the secret.
	forwardJob struct {
		WorkflowID   string             `json:"workflow_id"`
		Notification perch.Notification `json:"notification"`
		URL          string             `json:"url"`
		Secret       string             `json:"secret,omitempty"` // sealed, as the workflow keeps it (sealSecret)
	}
	// emailJob mails Notification to To: "owners", "admins" or a team id.
	emailJob struct {
		WorkflowID   string             `json:"workflow_id"`
		Notification perch.Notification `json:"notification"`
		To           string             `json:"to"`
	}
)

// sealedPrefix marks a forward secret sealed with the server's key.
const sealedPrefix = "sealed:"

// sealSecret seals a forward step's secret for the database: workflows and
// queued jobs keep it only in this form, and the API never shows it.
func (s *Server) sealSecret(plain string) (string, error) {
	if plain == "" || strings.HasPrefix(plain, sealedPrefix) {
		return plain, nil
	}
	if s.opts.Secrets == nil {
		return "", errNoSecretKey
	}
	return sealedPrefix + base64.RawStdEncoding.EncodeToString(s.opts.Secrets.Seal([]byte(plain))), nil
}

// openSecret reads back what sealSecret made.
func (s *Server) openSecret(stored string) (string, error) {
	if stored == "" {
		return "", nil
	}
	enc, ok := strings.CutPrefix(stored, sealedPrefix)
	if !ok {
		return "", errors.New("the forward secret is not sealed")
	}
	if s.opts.Secrets == nil {
		return "", errNoSecretKey
	}
	raw, err := base64.RawStdEncoding.DecodeString(enc)
	if err != nil {
		return "", err
	}
	plain, err := s.opts.Secrets.Open(raw)
	return string(plain), err
}
