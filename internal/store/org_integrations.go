package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"time"

	"github.com/perch-dev/perch"
)

// OrgIntegration is a credential an organisation stored to act on a source
// system (perch.IntegrationPagerDuty). The secret is sealed
// (internal/secrets) by the caller: the store never sees it in the clear.
type OrgIntegration struct {
	OrgID     string
	Kind      string
	Sealed    []byte
	FromEmail string
	UpdatedAt time.Time
}

// OrgIntegration returns the organisation's integration of kind, or
// ENOTFOUND when it stored none.
func (s *Store) OrgIntegration(ctx context.Context, orgID, kind string) (*OrgIntegration, error) {
	in := OrgIntegration{OrgID: orgID, Kind: kind}
	var sealed string
	var updated int64
	err := s.r.QueryRowContext(ctx, s.q(`SELECT secret_sealed, from_email, updated_at FROM org_integrations
		WHERE org_id = ? AND kind = ?`), orgID, kind).Scan(&sealed, &in.FromEmail, &updated)
	if err != nil {
		return nil, notFound(err, "Integration")
	}
	in.UpdatedAt = fromMS(updated)
	if in.Sealed, err = base64.StdEncoding.DecodeString(sealed); err != nil {
		return nil, errors.New("store: a stored integration's secret is not base64")
	}
	return &in, nil
}

// HasOrgIntegration reports whether the organisation stored an integration
// of kind: one primary-key probe, for the receiver of PagerDuty's
// deliveries.
func (s *Store) HasOrgIntegration(ctx context.Context, orgID, kind string) (bool, error) {
	var one int
	err := s.r.QueryRowContext(ctx, s.q(`SELECT 1 FROM org_integrations WHERE org_id = ? AND kind = ?`), orgID, kind).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// PutOrgIntegration stores in (its OrgID, Kind, Sealed and FromEmail) in
// place of the organisation's integration of that kind, and answers it as
// stored.
func (s *Store) PutOrgIntegration(ctx context.Context, in OrgIntegration) (*OrgIntegration, error) {
	if len(in.Sealed) == 0 {
		return nil, perch.Errorf(perch.EBADREQUEST, "An integration needs its credential.")
	}
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO org_integrations (org_id, kind, secret_sealed, from_email, updated_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (org_id, kind) DO UPDATE SET secret_sealed = excluded.secret_sealed,
			from_email = excluded.from_email, updated_at = excluded.updated_at`),
		in.OrgID, in.Kind, base64.StdEncoding.EncodeToString(in.Sealed), in.FromEmail, ms(s.now()))
	if err != nil {
		return nil, err
	}
	return s.OrgIntegration(ctx, in.OrgID, in.Kind)
}

// DeleteOrgIntegration removes the organisation's integration of kind:
// ENOTFOUND when there was none.
func (s *Store) DeleteOrgIntegration(ctx context.Context, orgID, kind string) error {
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM org_integrations WHERE org_id = ? AND kind = ?`), orgID, kind)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return perch.Errorf(perch.ENOTFOUND, "Integration not found.")
	}
	return nil
}
