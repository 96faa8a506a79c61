package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/perch-dev/perch"
)

// A server's first platform admin (docs/DESIGN.md, "Who is verified, who
// is admin"): while no account is one, each start of perch serve makes a
// setup code (CreateSetupCode) and prints its link; the first signed-in
// user to redeem one (RedeemSetupCode) becomes the platform admin, and
// every code goes. The table keeps only the codes' hashes.

// errSetupRefused is the one answer to a setup code that does not work,
// whatever the reason: unknown, used, expired, or a server with an admin.
var errSetupRefused = perch.Errorf(perch.EFORBIDDEN, "This setup link does not work: it was used or has expired, "+
	"or this server has a platform admin already. While no account is a platform admin, "+
	"each start of perch serve prints a new link; perch admin grant EMAIL works too.")

// AdminNeeded reports whether no enabled account is a platform admin, by
// grant or by an address of listed (PERCH_ADMIN_EMAILS, normalized) with
// its mailbox proven.
func (s *Store) AdminNeeded(ctx context.Context, listed []string) (bool, error) {
	exists, err := s.adminExists(ctx, s.r, listed)
	return !exists, err
}

// adminExists reports whether an enabled platform admin exists.
func (s *Store) adminExists(ctx context.Context, db querier, listed []string) (bool, error) {
	cond, args := adminPredicate(listed)
	var exists bool
	err := db.QueryRowContext(ctx, s.q(`SELECT EXISTS (SELECT 1 FROM users u WHERE `+cond+`)`), args...).Scan(&exists)
	return exists, err
}

// CreateSetupCode keeps the hash of a new setup code, valid for ttl, when
// no account is a platform admin (listed as for AdminNeeded), and answers
// its expiry and true; with an admin it keeps nothing and answers false.
// Either way the expired codes are deleted, and with an admin all of them.
// The codes other instances made stay: every unexpired one works.
func (s *Store) CreateSetupCode(ctx context.Context, hash string, ttl time.Duration, listed []string) (expires time.Time, made bool, err error) {
	now := s.now()
	expires = now.Add(ttl)
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM setup_codes WHERE expires_at <= ?`), ms(now)); err != nil {
			return err
		}
		exists, err := s.adminExists(ctx, tx, listed)
		if err != nil {
			return err
		}
		if exists {
			_, err := tx.ExecContext(ctx, `DELETE FROM setup_codes`)
			return err
		}
		made = true
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO setup_codes (hash, created_at, expires_at) VALUES (?, ?, ?)`), hash, ms(now), ms(expires))
		return err
	})
	if err != nil {
		return time.Time{}, false, err
	}
	return expires, made, nil
}

// RedeemSetupCode makes userID the platform admin (the grant kept in the
// store) when hash is an unexpired setup code's and, in the same
// transaction, no account is a platform admin; then every code is deleted.
// It answers the user as they are now. Anything else is one refusal,
// EFORBIDDEN, which says what to do.
func (s *Store) RedeemSetupCode(ctx context.Context, hash, userID string, listed []string) (*perch.User, error) {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockAdmins(ctx, tx); err != nil {
			return err
		}
		var expires int64
		err := tx.QueryRowContext(ctx, s.q(`SELECT expires_at FROM setup_codes WHERE hash = ? AND expires_at > ?`), hash, ms(s.now())).Scan(&expires)
		if errors.Is(err, sql.ErrNoRows) {
			return errSetupRefused
		}
		if err != nil {
			return err
		}
		exists, err := s.adminExists(ctx, tx, listed)
		if err != nil {
			return err
		}
		if exists {
			return errSetupRefused
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET is_admin = TRUE, updated_at = ? WHERE id = ? AND disabled_at IS NULL`), ms(s.now()), userID)
		if err := expectOne(res, err, "User"); perch.ErrorCode(err) == perch.ENOTFOUND {
			return errSetupRefused // a disabled account
		} else if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM setup_codes`)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.User(ctx, userID)
}
