package server

import (
	"context"
	"net/http"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/worker"
)

// integrationStore is what the organisation's integrations need from
// storage: its PagerDuty key, sealed.
type integrationStore interface {
	OrgIntegration(ctx context.Context, orgID, kind string) (*store.OrgIntegration, error)
	PutOrgIntegration(ctx context.Context, in store.OrgIntegration) (*store.OrgIntegration, error)
	DeleteOrgIntegration(ctx context.Context, orgID, kind string) error
}

var _ integrationStore = (*store.Store)(nil)

// integrationTarget is an integration as the target of an audit entry.
func integrationTarget(kind string) perch.AuditTarget {
	return perch.AuditTarget{Type: "integration", ID: kind}
}

// statusOf is how a stored integration is shown: never with its key.
func statusOf(in *store.OrgIntegration) perch.IntegrationStatus {
	at := in.UpdatedAt
	return perch.IntegrationStatus{Configured: true, FromEmail: in.FromEmail, UpdatedAt: &at}
}

// getPagerDuty serves GET /api/v1/org/integrations/pagerduty: whether the
// caller's organisation stored a PagerDuty key, as whom it acts, since
// when.
func (s *Server) getPagerDuty(w http.ResponseWriter, r *http.Request) error {
	in, err := s.integrationDB.OrgIntegration(r.Context(), principal(r).User.OrgID, perch.IntegrationPagerDuty)
	if perch.ErrorCode(err) == perch.ENOTFOUND {
		return respond(w, http.StatusOK, perch.IntegrationStatus{})
	}
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, statusOf(in))
}

// putPagerDuty serves PUT /api/v1/org/integrations/pagerduty {api_key,
// from_email}: the key is sealed with the server's key and replaces any
// stored before. PagerDuty incidents that arrive from then on carry
// Acknowledge and Resolve.
func (s *Server) putPagerDuty(w http.ResponseWriter, r *http.Request) error {
	var in perch.PagerDutyIntegration
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := in.Validate(); err != nil {
		return err
	}
	if s.opts.Secrets == nil {
		return worker.ErrNoSecretKey
	}
	orgID := principal(r).User.OrgID
	stored, err := s.integrationDB.PutOrgIntegration(r.Context(), store.OrgIntegration{
		OrgID: orgID, Kind: perch.IntegrationPagerDuty, Sealed: s.opts.Secrets.Seal([]byte(in.APIKey)), FromEmail: in.FromEmail,
	})
	if err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditIntegrationUpdated, Target: integrationTarget(perch.IntegrationPagerDuty), OrgID: orgID,
		Changes: map[string]any{"from_email": in.FromEmail, "api_key_changed": true}})
	return respond(w, http.StatusOK, statusOf(stored))
}

// deletePagerDuty serves DELETE /api/v1/org/integrations/pagerduty: 404
// when none is stored. Notifications that carry its actions keep them;
// running one is then 409.
func (s *Server) deletePagerDuty(w http.ResponseWriter, r *http.Request) error {
	orgID := principal(r).User.OrgID
	if err := s.integrationDB.DeleteOrgIntegration(r.Context(), orgID, perch.IntegrationPagerDuty); err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditIntegrationRemoved, Target: integrationTarget(perch.IntegrationPagerDuty), OrgID: orgID})
	return noContent(w)
}

// actionSigning is the answer of GET /api/v1/org/integrations/actions.
type actionSigning struct {
	Header        string `json:"header"`
	SigningSecret string `json:"signing_secret"`
}

// getActionSigning serves GET /api/v1/org/integrations/actions: the secret
// the organisation's http actions are signed with, for their receivers to
// verify X-Perch-Signature. Owners and admins, with the manage scope: it
// is a secret.
func (s *Server) getActionSigning(w http.ResponseWriter, r *http.Request) error {
	secret, err := s.actionSigningSecret(principal(r).User.OrgID)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, actionSigning{Header: "X-Perch-Signature", SigningSecret: secret})
}
