package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/perch-dev/perch"
)

var errBadEmailLink = perch.Errorf(perch.EBADREQUEST, "This link is invalid, expired or already used.")

// CreateEmailToken records a single-use link token of kind for userID,
// bound to email (the address it is sent to), valid until expires.
func (s *Store) CreateEmailToken(ctx context.Context, userID, kind, email, hash string, expires time.Time) error {
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO email_tokens (hash, user_id, kind, email, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`),
		hash, userID, kind, email, ms(s.now()), ms(expires))
	return err
}

// spendEmailToken marks a live token of one of kinds as used and returns it.
func (s *Store) spendEmailToken(ctx context.Context, tx *sql.Tx, hash string, kinds ...string) (userID, kind, email string, err error) {
	now := ms(s.now())
	err = tx.QueryRowContext(ctx, s.q(`SELECT user_id, kind, email FROM email_tokens WHERE hash = ? AND used_at IS NULL AND expires_at > ?`), hash, now).
		Scan(&userID, &kind, &email)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", "", errBadEmailLink
	}
	if err != nil {
		return "", "", "", err
	}
	ok := false
	for _, k := range kinds {
		ok = ok || k == kind
	}
	if !ok {
		return "", "", "", errBadEmailLink
	}
	res, err := tx.ExecContext(ctx, s.q(`UPDATE email_tokens SET used_at = ? WHERE hash = ? AND used_at IS NULL`), now, hash)
	if err := expectOne(res, err, "Link"); err != nil {
		return "", "", "", errBadEmailLink
	}
	return userID, kind, email, nil
}

// VerifyEmail spends a verification or address-change token: the address it
// was sent to becomes the user's verified address. A link for an address the
// user no longer has is refused; an address taken meanwhile is ECONFLICT.
func (s *Store) VerifyEmail(ctx context.Context, hash string) (*perch.User, error) {
	var userID string
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var kind, email string
		var err error
		userID, kind, email, err = s.spendEmailToken(ctx, tx, hash, perch.EmailVerify, perch.EmailChange)
		if err != nil {
			return err
		}
		now := ms(s.now())
		if kind == perch.EmailVerify {
			if err := s.proveMailbox(ctx, tx, userID, email); err != nil {
				return errBadEmailLink
			}
			return nil
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE users SET email = ?, email_norm = ?, email_verified = TRUE, updated_at = ? WHERE id = ?`),
			email, perch.NormalizeEmail(email), now, userID)
		if isUniqueViolation(err) {
			return perch.Errorf(perch.ECONFLICT, "Another account uses %s now.", email)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.User(ctx, userID)
}

// ResetPassword spends a password-reset token, sets the new password hash and
// signs out every session of the user, returning the ids of the sessions it
// ended. A link sent to an address the user no longer has is EBADREQUEST;
// a disabled account's link EFORBIDDEN, and it is not spent.
func (s *Store) ResetPassword(ctx context.Context, hash, passwordHash string) (*perch.User, []string, error) {
	var userID string
	var revoked []string
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var email string
		var err error
		if userID, _, email, err = s.spendEmailToken(ctx, tx, hash, perch.EmailPasswordReset); err != nil {
			return err
		}
		// A disabled account is not reset, whenever its link was mailed:
		// the same refusal as its sign-in.
		if disabled, by, err := s.disabledBy(ctx, tx, userID); err != nil || disabled {
			if err == nil {
				err = disabledError(by)
			}
			return err
		}
		now := ms(s.now())
		// A link mailed to an address the user has since given up is dead;
		// one that came back from the address proves its mailbox.
		res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET password_hash = ?, email_verified = TRUE, updated_at = ?
			WHERE id = ? AND email_norm = ? AND disabled_at IS NULL`),
			passwordHash, now, userID, perch.NormalizeEmail(email))
		if err := expectOne(res, err, "User"); err != nil {
			return errBadEmailLink
		}
		revoked, err = s.revokeSessions(ctx, tx, userID, "", now)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	u, err := s.User(ctx, userID)
	return u, revoked, err
}

// proveMailbox records that a link mailed to email came back from it, for
// userID, whose address it must still be (ENOTFOUND otherwise). It is one
// of the three places a mailbox becomes proven (with the address-change
// and password-reset links): nothing an identity provider asserts does.
func (s *Store) proveMailbox(ctx context.Context, tx *sql.Tx, userID, email string) error {
	res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET email_verified = TRUE, updated_at = ? WHERE id = ? AND email_norm = ?`),
		ms(s.now()), userID, perch.NormalizeEmail(email))
	return expectOne(res, err, "User")
}

// EmailInUse reports whether an account has the address.
func (s *Store) EmailInUse(ctx context.Context, email string) (bool, error) {
	var n int
	err := s.r.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM users WHERE email_norm = ?`), perch.NormalizeEmail(email)).Scan(&n)
	return n > 0, err
}

// EmailTokenOwner returns the user of a live token of kind without spending
// it, or EBADREQUEST; a password-reset link of a disabled account is
// EFORBIDDEN, as ResetPassword refuses it.
func (s *Store) EmailTokenOwner(ctx context.Context, hash, kind string) (*perch.User, error) {
	var userID string
	err := s.r.QueryRowContext(ctx, s.q(`SELECT user_id FROM email_tokens WHERE hash = ? AND kind = ? AND used_at IS NULL AND expires_at > ?`),
		hash, kind, ms(s.now())).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errBadEmailLink
	}
	if err != nil {
		return nil, err
	}
	if kind == perch.EmailPasswordReset {
		if disabled, by, err := s.disabledBy(ctx, s.r, userID); err != nil || disabled {
			if err == nil {
				err = disabledError(by)
			}
			return nil, err
		}
	}
	return s.User(ctx, userID)
}
