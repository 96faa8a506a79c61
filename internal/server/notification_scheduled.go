package server

import (
	"context"
	"net/http"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// scheduledStore is what the scheduled notifications' handlers need from
// storage.
type scheduledStore interface {
	ScheduledNotifications(ctx context.Context, userID string) ([]*perch.ScheduledNotification, error)
	CancelScheduled(ctx context.Context, userID, id string) (*perch.ScheduledNotification, error)
}

var _ scheduledStore = (*store.Store)(nil)

// listScheduled answers the caller's pending scheduled notifications: those
// sent through webhook tokens they own, soonest first. Others' (even for
// an audience the caller is in) are not listed: they see them when they
// are delivered.
func (s *Server) listScheduled(w http.ResponseWriter, r *http.Request) error {
	list, err := s.scheduledDB.ScheduledNotifications(r.Context(), principal(r).User.ID)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, list)
}

// cancelScheduled cancels one of the caller's pending scheduled
// notifications: it is never delivered. Anyone else's, and one delivered
// or cancelled already, is 404; one being delivered at this moment is 409.
func (s *Server) cancelScheduled(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.scheduledDB.CancelScheduled(r.Context(), principal(r).User.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditScheduledCancelled, Target: perch.AuditTarget{Type: "scheduled_notification", ID: sc.ID},
		Changes: map[string]any{"webhook_token_id": sc.WebhookTokenID, "deliver_at": sc.DeliverAt}})
	return noContent(w)
}
