package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/perch-dev/perch"
)

// ErrNoDeletedSCIMUser (ENOTFOUND) is RestoreSCIMUser's answer when no
// member the identity provider deleted matches.
var ErrNoDeletedSCIMUser = perch.Errorf(perch.ENOTFOUND, "No member deleted through SCIM matches.")

// DeleteSCIMUser deprovisions the member userID of orgID, as its identity
// provider's DELETE asks, after check approves the member as it stands
// (the caller's If-Match): the account is disabled as a deactivation
// disables it (disableUser: every session ends in the same transaction)
// and stays in the organisation, with its SCIM record, marked deleted
// (users.scim_deleted_at), so that SCIM no longer finds it (ENOTFOUND)
// until RestoreSCIMUser. The change answers the member before, the
// sessions ended and the API tokens now refused; After is nil.
func (s *Store) DeleteSCIMUser(ctx context.Context, orgID, userID string, check func(*SCIMUser) error) (*SCIMChange, error) {
	c := &SCIMChange{}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if c.Before, err = s.lockedSCIMUser(ctx, tx, orgID, userID); err != nil {
			return err
		}
		if err := check(c.Before); err != nil {
			return err
		}
		now := ms(s.now())
		if c.Sessions, c.APITokens, err = s.disableUser(ctx, tx, userID, DisabledBySCIM, now); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET scim_deleted_at = ? WHERE id = ? AND org_id = ?`), now, userID, orgID)
		return expectOne(res, err, "User")
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// RestoreSCIMUser brings back the member of orgID that SCIM deleted and
// that w names (by externalId first, then userName, then the address),
// as its identity provider's POST of them asks: the same account, in the
// same organisation with the same role, no longer marked deleted, and
// then changed to what change makes of it as UpdateSCIMUser does (enabled
// when w is active, unless a platform admin disabled it: ECONFLICT; a new
// address unproven). It never grants anything an update does not. With
// no such member it is ErrNoDeletedSCIMUser, and the caller creates one.
func (s *Store) RestoreSCIMUser(ctx context.Context, orgID string, w SCIMWrite, change func(*SCIMUser) (SCIMWrite, error)) (*SCIMChange, error) {
	var c *SCIMChange
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var id string
		name := perch.NormalizeEmail(w.UserName)
		err := tx.QueryRowContext(ctx, s.q(`SELECT u.id`+scimUserFrom+` WHERE u.org_id = ? AND u.scim_deleted_at IS NOT NULL
			AND ((? <> '' AND su.external_id = ?) OR su.user_name_norm = ? OR u.email_norm = ?)
			ORDER BY CASE WHEN ? <> '' AND su.external_id = ? THEN 0 WHEN su.user_name_norm = ? THEN 1 ELSE 2 END, u.scim_deleted_at DESC, u.id
			LIMIT 1`), orgID, w.ExternalID, w.ExternalID, name, perch.NormalizeEmail(w.Email), w.ExternalID, w.ExternalID, name).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoDeletedSCIMUser
		}
		if err != nil {
			return err
		}
		// Conditional, so that of two restores at once the second finds
		// nothing to restore and creates, which its uniqueness refuses.
		res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET scim_deleted_at = NULL WHERE id = ? AND scim_deleted_at IS NOT NULL`), id)
		if err := expectOne(res, err, "User"); err != nil {
			return err
		}
		c, err = s.updateSCIMUser(ctx, tx, orgID, id, change)
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}
