package server

import (
	"context"
	"net/http"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/worker"
)

// What became of the forwards and e-mails workflows queued
// (docs/DESIGN.md, Workflows: deliveries): each run's steps carry their
// delivery, and owners and admins list the failed ones and retry them.

// deliveryStore is what the deliveries' handlers need from storage.
type deliveryStore interface {
	FailedDeliveries(ctx context.Context, orgID string, page perch.Page) ([]store.FailedJob, string, error)
	RequeueJob(ctx context.Context, orgID, id string, allowRefused bool, now time.Time) (before, after store.Job, err error)
	RunJobs(ctx context.Context, orgID string, runIDs []string) (map[string][]store.Job, error)
}

var _ deliveryStore = (*store.Store)(nil)

// withDeliveries gives each forward and e-mail step of runs the delivery
// it queued, and that delivery's state as the step's status. A step whose
// delivery is no longer kept (pruned, or queued before runs named their
// deliveries) keeps the status it was recorded with.
func (s *Server) withDeliveries(ctx context.Context, orgID string, runs []*perch.WorkflowRun) error {
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	jobs, err := s.deliveryDB.RunJobs(ctx, orgID, ids)
	if err != nil {
		return err
	}
	for _, r := range runs {
		for _, j := range jobs[r.ID] {
			if j.Step < 0 || j.Step >= len(r.Steps) {
				continue
			}
			d := j.Delivery()
			r.Steps[j.Step].Job = &d
			r.Steps[j.Step].Status = d.State
		}
	}
	return nil
}

// listFailedDeliveries serves GET /api/v1/org/workflows/failed-deliveries:
// the organisation's deliveries that were refused or given up, the most
// recent first, paged.
func (s *Server) listFailedDeliveries(w http.ResponseWriter, r *http.Request) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	jobs, next, err := s.deliveryDB.FailedDeliveries(r.Context(), principal(r).User.OrgID, page)
	if err != nil {
		return err
	}
	out := make([]perch.FailedDelivery, len(jobs))
	for i, j := range jobs {
		out[i] = failedDelivery(j.Job, j.WorkflowName)
	}
	return respondPage(w, out, next)
}

// failedDelivery is j as the list of failed deliveries shows it.
func failedDelivery(j store.Job, workflowName string) perch.FailedDelivery {
	title, target := worker.Describe(j)
	return perch.FailedDelivery{Delivery: j.Delivery(), WorkflowID: j.WorkflowID, WorkflowName: workflowName, RunID: j.RunID,
		NotificationID: j.NotificationID, Title: title, Target: target}
}

// retryDelivery serves POST
// /api/v1/org/workflows/failed-deliveries/{job_id}/retry: a delivery that
// was given up is queued again, at once, with a new 24 hours to succeed. A
// refused one only where forwards may now reach private addresses
// (PERCH_WORKFLOW_ALLOW_PRIVATE); else it would be refused again (409).
// Audited.
func (s *Server) retryDelivery(w http.ResponseWriter, r *http.Request) error {
	orgID := principal(r).User.OrgID
	before, after, err := s.deliveryDB.RequeueJob(r.Context(), orgID, r.PathValue("job_id"), s.worker.AllowsPrivate(), s.storeNow())
	if err != nil {
		return err
	}
	s.worker.Wake()
	s.audit(r, perch.AuditEntry{Action: perch.AuditWorkflowDeliveryRetried, Target: perch.AuditTarget{Type: "delivery", ID: after.ID},
		Changes: map[string]any{"workflow_id": after.WorkflowID, "run_id": after.RunID, "kind": after.Delivery().Kind,
			"state":    map[string]any{"from": before.Delivery().State, "to": after.Delivery().State},
			"attempts": before.Attempts}})
	return respond(w, http.StatusOK, failedDelivery(after, ""))
}
