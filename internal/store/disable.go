package store

import (
	"context"
	"database/sql"

	"github.com/perch-dev/perch"
)

// Who disabled an account (users.disabled_by): a platform admin, or the
// organisation's identity provider through SCIM. A platform admin's
// disable outranks the identity provider's, which lifts only its own.
const (
	DisabledByAdmin = "admin"
	DisabledBySCIM  = "scim"
)

// disableUser is the one way an account is disabled, whoever asks (a
// platform admin, or the organisation's identity provider deactivating or
// deleting it): users.disabled_at keeps the first disable's time, a
// platform admin's disable becomes theirs while the identity provider's
// leaves an earlier one's author, and every sign-in of the user ends in
// the same transaction. It answers the sign-ins it ended and the user's
// active API tokens (refused from now on, and working again if the account
// is enabled), so that the caller closes the WebSockets they opened
// (Server.userDisabled). Every credential lookup refuses a disabled
// account: access and API tokens, refresh, webhook tokens it made, session
// creation (every sign-in) and password-reset links.
func (s *Store) disableUser(ctx context.Context, tx *sql.Tx, userID, by string, now int64) (sessions, apiTokens []string, err error) {
	res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET updated_at = ?,
		disabled_by = CASE WHEN disabled_at IS NULL OR ? THEN ? ELSE disabled_by END,
		disabled_at = COALESCE(disabled_at, ?) WHERE id = ?`), now, by == DisabledByAdmin, by, now, userID)
	if err := expectOne(res, err, "User"); err != nil {
		return nil, nil, err
	}
	if sessions, err = s.revokeSessions(ctx, tx, userID, "", now); err != nil {
		return nil, nil, err
	}
	if err := s.seatsChangedFor(ctx, tx, userID); err != nil { // a disabled member holds no billed seat
		return nil, nil, err
	}
	apiTokens, err = column[string](tx.QueryContext(ctx, s.q(`SELECT id FROM api_tokens WHERE user_id = ? AND is_active`), userID))
	return sessions, apiTokens, err
}

// enableUser lifts the disable of userID: any disable when by is
// DisabledByAdmin, else (the identity provider) only its own, leaving a
// platform admin's in place. An account enabled again is under its
// identity provider's management again: a SCIM deletion is lifted with
// the disable, so that the provider sees (and can deprovision) it.
func (s *Store) enableUser(ctx context.Context, tx *sql.Tx, userID, by string, now int64) error {
	res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET disabled_at = NULL, disabled_by = '', scim_deleted_at = NULL, updated_at = ?
		WHERE id = ? AND disabled_at IS NOT NULL AND (? OR disabled_by = ?)`), now, userID, by == DisabledByAdmin, DisabledBySCIM)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // an account that was enabled already changes no seat
	}
	return s.seatsChangedFor(ctx, tx, userID)
}

// disabledError is the answer to a disabled account's sign-in or password
// reset (EFORBIDDEN), saying who can enable it again: the identity
// provider's administrators for a SCIM deactivation or deletion, else the
// server's.
func disabledError(by string) error {
	if by == DisabledBySCIM {
		return perch.Errorf(perch.EFORBIDDEN, "This account was disabled by your organisation's identity provider. Ask your organisation's IT administrator to restore your access there.")
	}
	return perch.Errorf(perch.EFORBIDDEN, "This account is disabled. Ask the administrators of this Perch server to enable it again.")
}

// disabledBy answers whether userID is disabled, and by whom; ENOTFOUND
// when there is no such user.
func (s *Store) disabledBy(ctx context.Context, db querier, userID string) (bool, string, error) {
	var disabled bool
	var by string
	err := db.QueryRowContext(ctx, s.q(`SELECT disabled_at IS NOT NULL, disabled_by FROM users WHERE id = ?`), userID).Scan(&disabled, &by)
	return disabled, by, notFound(err, "User")
}
