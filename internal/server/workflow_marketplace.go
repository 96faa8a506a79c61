package server

import (
	"net/http"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// The marketplace (docs/DESIGN.md, Workflows and the marketplace): every
// organisation's published
// workflows, as their authors published them, for any signed-in user to
// install (a copy linked to its source, updated by installing again) or
// fork (an independent copy). A listing never shows a forward step's URL
// or secret or an e-mail step's target: the store blanks them in every
// listing it reads, so installs and forks never carry them either.

// listingView is a marketplace listing as the API answers it.
type listingView struct {
	ID          string        `json:"id"`
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Author      listingAuthor `json:"author"`
	Version     int           `json:"version"`
	Installs    int64         `json:"installs"`
	PublishedAt time.Time     `json:"published_at"`
	Condition   string        `json:"condition"`
	Steps       []listingStep `json:"steps"`
}

type listingAuthor struct {
	OrgName string `json:"org_name"`
}

// listingStep is a published step with forward and e-mail steps shown
// empty: the outer fields hide perch.Step's of the same JSON names.
type listingStep struct {
	perch.Step
	Forward *struct{} `json:"forward,omitempty"`
	Email   *struct{} `json:"email,omitempty"`
}

func viewListing(l *store.Listing) listingView {
	steps := make([]listingStep, len(l.Workflow.Steps))
	for i, st := range l.Workflow.Steps {
		v := listingStep{Step: st}
		if st.Forward != nil {
			v.Forward = &struct{}{}
		}
		if st.Email != nil {
			v.Email = &struct{}{}
		}
		v.Step.Forward, v.Step.Email = nil, nil
		steps[i] = v
	}
	return listingView{ID: l.Workflow.ID, Name: l.Workflow.Name, Description: l.Workflow.Description,
		Author: listingAuthor{OrgName: l.OrgName}, Version: l.Workflow.Version, Installs: l.Installs,
		PublishedAt: l.PublishedAt, Condition: l.Workflow.Condition, Steps: steps}
}

func (s *Server) listMarketplace(w http.ResponseWriter, r *http.Request) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if len(q.Get("q")) > 200 {
		return &perch.Error{Code: perch.EVALIDATION, Message: "The search is too long.", Fields: map[string]string{"q": "must be at most 200 bytes"}}
	}
	listings, next, err := s.workflowDB.Marketplace(r.Context(), q.Get("q"), q.Get("sort"), page)
	if err != nil {
		return err
	}
	out := make([]listingView, len(listings))
	for i, l := range listings {
		out[i] = viewListing(l)
	}
	return respondPage(w, out, next)
}

// installWorkflow copies the marketplace workflow {id} into the caller's
// organisation (201), or brings the copy it has to the latest published
// version (200). The copy is disabled until enabled, and its forward URLs
// and e-mail targets are blank until its organisation fills them in. An
// update that changes what the copy does switches it off (the answer says
// enabled false, and the audit entry's changes too), so that an author's
// new version never runs before the organisation's owners or admins have
// read it and switched it on again.
func (s *Server) installWorkflow(w http.ResponseWriter, r *http.Request) error {
	u := principal(r).User
	src, err := s.workflowDB.Listing(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if src.Workflow.OrgID == u.OrgID {
		return perch.Errorf(perch.ECONFLICT, "This is your organisation's own workflow; fork it to make a copy.")
	}
	in, err := s.workflowDB.InstallWorkflow(r.Context(), u.OrgID, src.Workflow.ID, u.ID)
	if err != nil {
		return err
	}
	s.workflowsChanged(r.Context(), u.OrgID)
	changes := map[string]any{"source": src.Workflow.ID, "source_version": src.Workflow.Version, "updated": in.Updated}
	if in.SwitchedOff {
		changes["enabled"] = false
	}
	if in.Updated && in.PreviousName != in.Workflow.Name {
		changes["name"] = map[string]any{"from": in.PreviousName, "to": in.Workflow.Name}
	}
	if in.Updated && in.PreviousDescription != in.Workflow.Description {
		changes["description"] = map[string]any{"from": in.PreviousDescription, "to": in.Workflow.Description}
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditWorkflowInstalled, Target: workflowTarget(in.Workflow.ID), Changes: changes})
	status := http.StatusCreated
	if in.Updated {
		status = http.StatusOK
	}
	return s.respondWorkflow(w, r, status, in.Workflow)
}

// forkWorkflow makes an independent, disabled copy of one of the caller's
// organisation's workflows or, with the marketplace on, of a marketplace
// workflow.
func (s *Server) forkWorkflow(w http.ResponseWriter, r *http.Request) error {
	u := principal(r).User
	id := r.PathValue("id")
	if _, err := s.workflowDB.Workflow(r.Context(), u.OrgID, id); perch.ErrorCode(err) == perch.ENOTFOUND {
		if err := s.requireFeatures(r, featureMarketplace); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	wf, err := s.workflowDB.ForkWorkflow(r.Context(), u.OrgID, id, u.ID)
	if err != nil {
		return err
	}
	s.workflowsChanged(r.Context(), u.OrgID)
	s.audit(r, perch.AuditEntry{Action: perch.AuditWorkflowForked, Target: workflowTarget(wf.ID),
		Changes: map[string]any{"forked_from": id, "name": wf.Name}})
	return s.respondWorkflow(w, r, http.StatusCreated, wf)
}

// publishWorkflow lists the current version of the caller's organisation's
// workflow {id} in the marketplace; publishing a changed workflow again
// bumps its version, which installed copies see as an update.
func (s *Server) publishWorkflow(w http.ResponseWriter, r *http.Request) error {
	orgID := principal(r).User.OrgID
	wf, err := s.workflowDB.PublishWorkflow(r.Context(), orgID, r.PathValue("id"))
	if err != nil {
		return err
	}
	s.workflowsChanged(r.Context(), orgID) // the version may have moved
	s.audit(r, perch.AuditEntry{Action: perch.AuditWorkflowPublished, Target: workflowTarget(wf.ID),
		Changes: map[string]any{"version": wf.Version}})
	return s.respondWorkflow(w, r, http.StatusOK, wf)
}
