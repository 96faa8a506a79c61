package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/workflow"
)

// workflowStore is what the handlers of workflows and the marketplace need
// from storage.
type workflowStore interface {
	Audience(ctx context.Context, u *perch.User) (*perch.Audience, error)
	CreateWorkflow(ctx context.Context, w *perch.Workflow) (*perch.Workflow, error)
	DeleteWorkflow(ctx context.Context, orgID, id string) (*perch.Workflow, error)
	EnabledWorkflows(ctx context.Context, orgID string) ([]*perch.Workflow, error)
	Features(ctx context.Context, userID, orgID string) (map[string]bool, error)
	ForkWorkflow(ctx context.Context, orgID, id, createdBy string) (*perch.Workflow, error)
	HoldForDigest(ctx context.Context, orgID, key string, window time.Duration, n perch.Notification, now time.Time) (time.Time, error)
	InstallWorkflow(ctx context.Context, orgID, sourceID, createdBy string) (*store.Installed, error)
	Listing(ctx context.Context, id string) (*store.Listing, error)
	Marketplace(ctx context.Context, q, sort string, page perch.Page) ([]*store.Listing, string, error)
	Member(ctx context.Context, orgID, userID string) (*perch.Member, error)
	Notifications(ctx context.Context, a *perch.Audience, since string, limit int) ([]*perch.Notification, error)
	NotificationPayload(ctx context.Context, id string) ([]byte, error)
	PublishWorkflow(ctx context.Context, orgID, id string) (*perch.Workflow, error)
	SeedStarterWorkflows(ctx context.Context, author string, ws []*perch.Workflow) error
	SourceVersions(ctx context.Context, orgID string) (map[string]int, error)
	Team(ctx context.Context, orgID, id string) (*perch.Team, error)
	Throttle(ctx context.Context, orgID, key string, max int, per time.Duration, now time.Time) (bool, error)
	UpdateWorkflow(ctx context.Context, orgID, id string, u store.WorkflowUpdate) (before, after *perch.Workflow, err error)
	Workflow(ctx context.Context, orgID, id string) (*perch.Workflow, error)
	WorkflowRuns(ctx context.Context, orgID, workflowID, status string, page perch.Page) ([]*perch.WorkflowRun, string, error)
	Workflows(ctx context.Context, orgID string) ([]*perch.Workflow, error)
}

var _ workflowStore = (*store.Store)(nil)

// The organisation's workflows (docs/DESIGN.md, Workflows and the
// marketplace): members read them, their
// runs, and try them; owners and admins change them. The marketplace's side
// (install, fork of a listing, publish, the listing) is workflow_marketplace.go.
// Every change is followed by s.workflowsChanged, so that every instance
// compiles the organisation's workflows afresh.

const (
	// workflowBodyLimit bounds a workflow request body: twenty steps and a
	// sample payload are far below it.
	workflowBodyLimit = 64 << 10
	// maxForwardSecret bounds a forward step's secret as the client sends
	// it, so that its sealed form (sealSecret: 33 bytes more, in base64,
	// behind a prefix) stays within the engine's limit of 256 bytes, which
	// it checks on the workflow as stored.
	maxForwardSecret = 150
)

// Feature flags that gate the workflows' routes.
const (
	featureWorkflows   = "workflows"
	featureMarketplace = "marketplace"
)

// workflowFields are what a client may set on a workflow.
type workflowFields struct {
	Name        *string       `json:"name"`
	Description *string       `json:"description"`
	Enabled     *bool         `json:"enabled"`
	Condition   *string       `json:"condition"`
	Steps       *[]perch.Step `json:"steps"`
}

// workflowPatch is PATCH's body: the fields, and published (false
// withdraws the workflow from the marketplace, true publishes it).
type workflowPatch struct {
	workflowFields
	Published *bool `json:"published"`
}

// workflowView is a workflow as the API answers it: forward secrets are
// never shown, and an installed copy says whether its source has published
// a newer version.
type workflowView struct {
	*perch.Workflow
	UpdateAvailable bool `json:"update_available"`
}

// viewWorkflow is w without its secrets; versions is store.SourceVersions
// of w's organisation.
func viewWorkflow(w *perch.Workflow, versions map[string]int) workflowView {
	c := *w
	c.Steps = withoutSecrets(w.Steps)
	return workflowView{Workflow: &c, UpdateAvailable: w.Source != nil && versions[w.ID] > w.Source.Version}
}

// withoutSecrets copies steps with every forward step's secret left out.
func withoutSecrets(steps []perch.Step) []perch.Step {
	out := make([]perch.Step, len(steps))
	for i, st := range steps {
		if st.Forward != nil {
			st.Forward = &perch.ForwardStep{URL: st.Forward.URL}
		}
		out[i] = st
	}
	return out
}

// gated serves h only when every one of flags is on for the caller; else
// 403 feature_disabled.
func (s *Server) gated(h handlerFunc, flags ...string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := s.requireFeatures(r, flags...); err != nil {
			return err
		}
		return h(w, r)
	}
}

// requireFeatures is nil when every one of flags is on for the caller.
func (s *Server) requireFeatures(r *http.Request, flags ...string) error {
	u := principal(r).User
	on, err := s.workflowDB.Features(r.Context(), u.ID, u.OrgID)
	if err != nil {
		return err
	}
	for _, f := range flags {
		if !on[f] {
			return perch.Errorf(perch.EFEATUREDISABLED, "The %s feature is turned off for your organisation.", f)
		}
	}
	return nil
}

// decodeStrict reads a JSON object of at most workflowBodyLimit bytes into
// v, refusing fields v does not have (400, naming the field) and anything
// decode refuses, with decode's messages.
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeStrictBody(w, r, v, false)
}

// decodeStrictBody is decodeStrict; when optional, no body at all leaves v
// as it is.
func decodeStrictBody(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, workflowBodyLimit))
	if err != nil {
		if berr := bodyError(err); berr != nil {
			return berr
		}
		return err
	}
	if optional && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	strictErr := dec.Decode(v)
	if strictErr == nil {
		if dec.More() {
			return perch.Errorf(perch.EBADREQUEST, "The body holds more than one JSON value.")
		}
		return nil
	}
	if name, ok := strings.CutPrefix(strictErr.Error(), "json: unknown field "); ok {
		if unq, err := strconv.Unquote(name); err == nil {
			name = unq
		}
		return &perch.Error{Code: perch.EBADREQUEST, Message: fmt.Sprintf("The field %q is not one this request takes.", name),
			Fields: map[string]string{name: "is not a known field"}}
	}
	if msg := strictErr.Error(); strings.HasPrefix(msg, "want a duration") { // perch.Duration's own error
		return perch.Errorf(perch.EBADREQUEST, "A duration is not valid: %s.", msg)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err := decode(r, v); err != nil {
		return err
	}
	return perch.Errorf(perch.EBADREQUEST, "The body is not valid JSON.")
}

// blankTarget matches the problems Compile reports for a forward URL or an
// e-mail target left blank, as installs leave them.
var blankTarget = regexp.MustCompile(`^steps\[(\d+)\]\.(forward\.url|email\.to)$`)

// checkWorkflow validates w as it is to be stored in orgID: it must compile
// (workflow.Compile; 422 with its fields), its forward secrets must be
// plain and short enough when clientSteps (they came in this request), and
// its route and e-mail steps must name the organisation's own teams and
// members. A disabled workflow may keep blank forward URLs and e-mail
// targets, as an install leaves them; it cannot be enabled until they are
// filled in.
func (s *Server) checkWorkflow(ctx context.Context, orgID string, w *perch.Workflow, clientSteps bool) error {
	p := perch.Problems{}
	if clientSteps {
		for i, st := range w.Steps {
			if st.Forward == nil {
				continue
			}
			field := fmt.Sprintf("steps[%d].forward.secret", i)
			switch sec := st.Forward.Secret; {
			case strings.HasPrefix(sec, sealedPrefix):
				p.Add(field, "must be the secret itself")
			case len(sec) > maxForwardSecret:
				p.Add(field, fmt.Sprintf("must be at most %d bytes", maxForwardSecret))
			}
		}
	}
	_, err := compileWorkflow(w)
	if e, ok := errors.AsType[*perch.Error](err); ok && e.Code == perch.EVALIDATION {
		for field, problem := range e.Fields {
			if !w.Enabled && isBlankTarget(w, field) {
				continue
			}
			p.Add(field, problem)
		}
	} else if err != nil {
		return err
	}
	if err := s.checkTargets(ctx, orgID, w.Steps, p); err != nil {
		return err
	}
	return p.Err()
}

// compileWorkflow compiles w as the engine will, with sealed secrets left
// out: they were checked when they came in, and their sealed form is not
// the client's to fix.
func compileWorkflow(w *perch.Workflow) (*workflow.Program, error) {
	c := *w
	c.Steps = make([]perch.Step, len(w.Steps))
	for i, st := range w.Steps {
		if st.Forward != nil && strings.HasPrefix(st.Forward.Secret, sealedPrefix) {
			st.Forward = &perch.ForwardStep{URL: st.Forward.URL}
		}
		c.Steps[i] = st
	}
	return workflow.Compile(&c)
}

// isBlankTarget reports whether field is a forward URL or e-mail target
// that w leaves blank.
func isBlankTarget(w *perch.Workflow, field string) bool {
	m := blankTarget.FindStringSubmatch(field)
	if m == nil {
		return false
	}
	i, err := strconv.Atoi(m[1])
	if err != nil || i >= len(w.Steps) {
		return false
	}
	st := w.Steps[i]
	if m[2] == "forward.url" {
		return st.Forward != nil && strings.TrimSpace(st.Forward.URL) == ""
	}
	return st.Email != nil && strings.TrimSpace(st.Email.To) == ""
}

// checkTargets records a problem for each route step to a team or user,
// and each e-mail step to a team, that orgID does not have.
func (s *Server) checkTargets(ctx context.Context, orgID string, steps []perch.Step, p perch.Problems) error {
	for i, st := range steps {
		var err error
		var field, problem string
		switch {
		case st.Route != nil && st.Route.Scope == perch.ScopeTeam && st.Route.ID != "":
			_, err = s.workflowDB.Team(ctx, orgID, st.Route.ID)
			field, problem = fmt.Sprintf("steps[%d].route.id", i), "is not a team of the organisation"
		case st.Route != nil && st.Route.Scope == perch.ScopeUser && st.Route.ID != "":
			_, err = s.workflowDB.Member(ctx, orgID, st.Route.ID)
			field, problem = fmt.Sprintf("steps[%d].route.id", i), "is not a member of the organisation"
		case st.Email != nil && st.Email.To != "" && st.Email.To != "owners" && st.Email.To != "admins":
			_, err = s.workflowDB.Team(ctx, orgID, st.Email.To)
			field, problem = fmt.Sprintf("steps[%d].email.to", i), `must be "owners", "admins" or a team of the organisation`
		default:
			continue
		}
		switch perch.ErrorCode(err) {
		case "":
		case perch.ENOTFOUND, perch.EBADREQUEST:
			p.Add(field, problem)
		default:
			return err
		}
	}
	return nil
}

// sealSteps copies steps with every forward secret sealed. A forward step
// sent without a secret whose URL is that of a forward step in current
// keeps that step's sealed secret, so that saving what the API answered
// (which never holds secrets) does not wipe them.
func (s *Server) sealSteps(steps, current []perch.Step) ([]perch.Step, error) {
	kept := map[string]string{}
	for _, st := range current {
		if st.Forward != nil && st.Forward.Secret != "" {
			if _, ok := kept[st.Forward.URL]; !ok {
				kept[st.Forward.URL] = st.Forward.Secret
			}
		}
	}
	out := make([]perch.Step, len(steps))
	for i, st := range steps {
		if st.Forward != nil {
			f := *st.Forward
			if f.Secret == "" {
				f.Secret = kept[f.URL]
			}
			sealed, err := s.sealSecret(f.Secret)
			if err != nil {
				return nil, err
			}
			f.Secret = sealed
			st.Forward = &f
		}
		out[i] = st
	}
	return out, nil
}

func workflowTarget(id string) perch.AuditTarget { return perch.AuditTarget{Type: "workflow", ID: id} }

func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	orgID := principal(r).User.OrgID
	ws, err := s.workflowDB.Workflows(r.Context(), orgID)
	if err != nil {
		return err
	}
	versions, err := s.workflowDB.SourceVersions(r.Context(), orgID)
	if err != nil {
		return err
	}
	out := make([]workflowView, len(ws))
	for i, wf := range ws {
		out[i] = viewWorkflow(wf, versions)
	}
	return respond(w, http.StatusOK, out)
}

// respondWorkflow answers wf with status, with update_available.
func (s *Server) respondWorkflow(w http.ResponseWriter, r *http.Request, status int, wf *perch.Workflow) error {
	versions := map[string]int{}
	if wf.Source != nil {
		var err error
		if versions, err = s.workflowDB.SourceVersions(r.Context(), wf.OrgID); err != nil {
			return err
		}
	}
	return respond(w, status, viewWorkflow(wf, versions))
}

func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request) error {
	wf, err := s.workflowDB.Workflow(r.Context(), principal(r).User.OrgID, r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.respondWorkflow(w, r, http.StatusOK, wf)
}

func (s *Server) createWorkflow(w http.ResponseWriter, r *http.Request) error {
	var in workflowFields
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	u := principal(r).User
	wf := &perch.Workflow{OrgID: u.OrgID, Name: deref(in.Name), Description: deref(in.Description),
		Enabled: in.Enabled != nil && *in.Enabled, Condition: deref(in.Condition), CreatedBy: u.ID}
	if in.Steps != nil {
		wf.Steps = *in.Steps
	}
	if err := s.checkWorkflow(r.Context(), u.OrgID, wf, true); err != nil {
		return err
	}
	var err error
	if wf.Steps, err = s.sealSteps(wf.Steps, nil); err != nil {
		return err
	}
	made, err := s.workflowDB.CreateWorkflow(r.Context(), wf)
	if err != nil {
		return err
	}
	s.workflowsChanged(r.Context(), u.OrgID)
	s.audit(r, perch.AuditEntry{Action: perch.AuditWorkflowCreated, Target: workflowTarget(made.ID),
		Changes: map[string]any{"name": made.Name, "enabled": made.Enabled}})
	return s.respondWorkflow(w, r, http.StatusCreated, made)
}

func (s *Server) updateWorkflow(w http.ResponseWriter, r *http.Request) error {
	var in workflowPatch
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	if in.Published != nil {
		if err := s.requireFeatures(r, featureMarketplace); err != nil {
			return err
		}
	}
	orgID := principal(r).User.OrgID
	current, err := s.workflowDB.Workflow(r.Context(), orgID, r.PathValue("id"))
	if err != nil {
		return err
	}
	next := *current
	if in.Name != nil {
		next.Name = *in.Name
	}
	if in.Description != nil {
		next.Description = *in.Description
	}
	if in.Enabled != nil {
		next.Enabled = *in.Enabled
	}
	if in.Condition != nil {
		next.Condition = *in.Condition
	}
	if in.Steps != nil {
		next.Steps = *in.Steps
	}
	if err := s.checkWorkflow(r.Context(), orgID, &next, in.Steps != nil); err != nil {
		return err
	}
	u := store.WorkflowUpdate{Name: in.Name, Description: in.Description, Enabled: in.Enabled, Condition: in.Condition, Published: in.Published}
	if in.Steps != nil {
		sealed, err := s.sealSteps(*in.Steps, current.Steps)
		if err != nil {
			return err
		}
		u.Steps = &sealed
	}
	before, after, err := s.workflowDB.UpdateWorkflow(r.Context(), orgID, current.ID, u)
	if err != nil {
		return err
	}
	s.workflowsChanged(r.Context(), orgID)
	if changes := workflowChanges(before, after); len(changes) > 0 {
		s.audit(r, perch.AuditEntry{Action: perch.AuditWorkflowUpdated, Target: workflowTarget(after.ID), Changes: changes})
	}
	switch {
	case in.Published == nil:
	case *in.Published:
		s.audit(r, perch.AuditEntry{Action: perch.AuditWorkflowPublished, Target: workflowTarget(after.ID),
			Changes: map[string]any{"version": after.Version}})
	case before.Published:
		s.audit(r, perch.AuditEntry{Action: perch.AuditWorkflowWithdrawn, Target: workflowTarget(after.ID),
			Changes: map[string]any{"version": after.Version}})
	}
	return s.respondWorkflow(w, r, http.StatusOK, after)
}

// workflowChanges says what an update changed, for the audit log: names,
// descriptions and enabled from and to; that the condition or steps
// changed, with the new version (never the steps themselves, which hold
// secrets).
func workflowChanges(before, after *perch.Workflow) map[string]any {
	changes := map[string]any{}
	if before.Name != after.Name {
		changes["name"] = map[string]any{"from": before.Name, "to": after.Name}
	}
	if before.Description != after.Description {
		changes["description"] = map[string]any{"from": before.Description, "to": after.Description}
	}
	if before.Enabled != after.Enabled {
		changes["enabled"] = map[string]any{"from": before.Enabled, "to": after.Enabled}
	}
	if before.Condition != after.Condition {
		changes["condition"] = map[string]any{"from": before.Condition, "to": after.Condition}
	}
	if before.Version != after.Version {
		changes["version"] = map[string]any{"from": before.Version, "to": after.Version}
	}
	return changes
}

func (s *Server) deleteWorkflow(w http.ResponseWriter, r *http.Request) error {
	orgID := principal(r).User.OrgID
	gone, err := s.workflowDB.DeleteWorkflow(r.Context(), orgID, r.PathValue("id"))
	if err != nil {
		return err
	}
	s.workflowsChanged(r.Context(), orgID)
	s.audit(r, perch.AuditEntry{Action: perch.AuditWorkflowDeleted, Target: workflowTarget(gone.ID),
		Changes: map[string]any{"name": gone.Name}})
	return noContent(w)
}

func (s *Server) listWorkflowRuns(w http.ResponseWriter, r *http.Request) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	orgID := principal(r).User.OrgID
	runs, next, err := s.workflowDB.WorkflowRuns(r.Context(), orgID, r.PathValue("id"), r.URL.Query().Get("status"), page)
	if err != nil {
		return err
	}
	if err := s.withDeliveries(r.Context(), orgID, runs); err != nil {
		return err
	}
	return respondPage(w, runs, next)
}
