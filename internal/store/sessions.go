package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/perch-dev/perch"
)

// SessionTokens are the hashes and expiry times of a new access and refresh
// token pair. The store never sees a raw token.
type SessionTokens struct {
	AccessHash     string
	AccessExpires  time.Time
	RefreshHash    string
	RefreshExpires time.Time
}

var errBadRefresh = perch.Errorf(perch.EUNAUTHORIZED, "The refresh token is invalid or expired.")

// CreateSession records a new sign-in of userID with its first token pair and
// returns the session ID; the user counts as seen now. A disabled user is
// EFORBIDDEN (disabledError: who disabled it): the check and the sign-in are one transaction,
// so a sign-in cannot slip past a disabling that ends every session.
func (s *Store) CreateSession(ctx context.Context, userID string, t SessionTokens) (string, error) {
	id := newID()
	now := s.now()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// On PostgreSQL the update also locks the user's row until the
		// sign-in commits, which a disabling waits for.
		res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET last_seen_at = ? WHERE id = ? AND disabled_at IS NULL`), ms(now), userID)
		if err := expectOne(res, err, "User"); err != nil {
			if perch.ErrorCode(err) == perch.ENOTFOUND {
				return s.disabledOrMissing(ctx, tx, userID)
			}
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO sessions (id, user_id, created_at) VALUES (?, ?, ?)`), id, userID, ms(now)); err != nil {
			return err
		}
		return s.insertTokens(ctx, tx, id, t, now)
	})
	return id, err
}

func (s *Store) insertTokens(ctx context.Context, tx *sql.Tx, sessionID string, t SessionTokens, now time.Time) error {
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO session_tokens (hash, session_id, kind, created_at, expires_at)
		VALUES (?, ?, 'access', ?, ?), (?, ?, 'refresh', ?, ?)`),
		t.AccessHash, sessionID, ms(now), ms(t.AccessExpires), t.RefreshHash, sessionID, ms(now), ms(t.RefreshExpires))
	return err
}

// RotateRefresh spends the refresh token with hash oldHash and records the
// new pair in its session. A token presented a second time means it leaked:
// the whole session is revoked and EUNAUTHORIZED returned, as for an unknown,
// expired or revoked token; then userID and sessionID name the sign-in that
// was revoked, so that the caller can end what it opened.
func (s *Store) RotateRefresh(ctx context.Context, oldHash string, t SessionTokens) (userID, sessionID string, err error) {
	now := s.now()
	reused := false
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var expires int64
		var used, revoked sql.NullInt64
		var disabled bool
		err := tx.QueryRowContext(ctx, s.q(`SELECT t.session_id, t.expires_at, t.used_at, s.revoked_at, s.user_id, u.disabled_at IS NOT NULL
			FROM session_tokens t JOIN sessions s ON s.id = t.session_id JOIN users u ON u.id = s.user_id
			WHERE t.hash = ? AND t.kind = 'refresh'`), oldHash).Scan(&sessionID, &expires, &used, &revoked, &userID, &disabled)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return errBadRefresh
		case err != nil:
			return err
		case revoked.Valid, disabled:
			return errBadRefresh
		case used.Valid:
			reused = true
			_, err := tx.ExecContext(ctx, s.q(`UPDATE sessions SET revoked_at = ? WHERE id = ?`), ms(now), sessionID)
			return err
		case expires <= ms(now):
			return errBadRefresh
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE session_tokens SET used_at = ? WHERE hash = ? AND used_at IS NULL`), ms(now), oldHash)
		if err := expectOne(res, err, "Refresh token"); err != nil {
			return errBadRefresh
		}
		if err := s.seen(ctx, tx, userID, now); err != nil {
			return err
		}
		return s.insertTokens(ctx, tx, sessionID, t, now)
	})
	if err == nil && reused {
		return userID, sessionID, perch.Errorf(perch.EUNAUTHORIZED, "The refresh token was already used; the sign-in has been revoked.")
	}
	if err != nil {
		return "", "", err
	}
	return userID, sessionID, nil
}

// RevokeSessionByRefresh ends the sign-in that the refresh token belongs to
// and names it. An unknown token, or one of a sign-in already ended, is not
// an error (signing out twice is harmless): the ids are then "".
func (s *Store) RevokeSessionByRefresh(ctx context.Context, refreshHash string) (userID, sessionID string, err error) {
	err = s.w.QueryRowContext(ctx, s.q(`UPDATE sessions SET revoked_at = ?
		WHERE revoked_at IS NULL AND id = (SELECT session_id FROM session_tokens WHERE hash = ? AND kind = 'refresh')
		RETURNING user_id, id`), ms(s.now()), refreshHash).Scan(&userID, &sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	return userID, sessionID, err
}

// revokeSessions ends every live sign-in of userID except keep ("" for
// none) and returns the ids of those it ended.
func (s *Store) revokeSessions(ctx context.Context, tx *sql.Tx, userID, keep string, now int64) ([]string, error) {
	return column[string](tx.QueryContext(ctx, s.q(`UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND id <> ? AND revoked_at IS NULL RETURNING id`),
		now, userID, keep))
}

const accessPrincipal = `SELECT ` + userColumns + `, t.session_id, t.expires_at
	FROM session_tokens t JOIN sessions s ON s.id = t.session_id JOIN users u ON u.id = s.user_id
	WHERE t.hash = ? AND t.kind = 'access' AND t.expires_at > ? AND s.revoked_at IS NULL AND u.disabled_at IS NULL`

// AccessPrincipal returns the user, session and expiry of a live access
// token, or EUNAUTHORIZED when it is unknown, expired or its session revoked,
// or its user disabled.
func (s *Store) AccessPrincipal(ctx context.Context, accessHash string) (*perch.Principal, error) {
	p := &perch.Principal{}
	var expires int64
	st, err := s.prepared(ctx, s.r, accessPrincipal)
	if err != nil {
		return nil, err
	}
	p.User, err = scanUser(st.QueryRowContext(ctx, accessHash, ms(s.now())), &p.SessionID, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, perch.Errorf(perch.EUNAUTHORIZED, "The access token is invalid or expired.")
	}
	if err != nil {
		return nil, err
	}
	p.ExpiresAt = fromMS(expires)
	return p, nil
}

// PruneSessions deletes expired tokens, sessions that have no live token
// left, sign-ins with a provider that were never finished, and device
// sign-ins expired for longer than DeviceSessionRetention,
// and returns how many tokens went.
func (s *Store) PruneSessions(ctx context.Context) (int64, error) {
	now := s.now()
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM session_tokens WHERE expires_at <= ?`), ms(now))
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		if _, err = tx.ExecContext(ctx, `DELETE FROM sessions WHERE NOT EXISTS (SELECT 1 FROM session_tokens t WHERE t.session_id = sessions.id)`); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, s.q(`DELETE FROM oauth_flows WHERE expires_at <= ?`), ms(now)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q(`DELETE FROM device_sessions WHERE expires_at <= ?`), ms(now.Add(-DeviceSessionRetention)))
		return err
	})
	return n, err
}

// EndedSignIns are the sign-ins a change ended and the API tokens it
// switched off, of one user, for the caller to close the WebSockets they
// opened.
type EndedSignIns struct {
	UserID    string
	Sessions  []string
	APITokens []string
}

// EndSignInsBoundBySSO ends every sign-in, and switches off every API token,
// of the members of orgID whom its enforced single sign-on binds (all but
// its owners, who keep every way in), or of the member userID alone when
// it is not "": credentials made before the organisation required single
// sign-on of them must not outlive that. An organisation that does not
// enforce single sign-on, or an owner, is left alone. A member signs in
// again through the organisation's SAML, and may switch their tokens on
// again from there.
func (s *Store) EndSignInsBoundBySSO(ctx context.Context, orgID, userID string) ([]EndedSignIns, error) {
	var out []EndedSignIns
	err := s.tx(ctx, func(tx *sql.Tx) error {
		query, args := `SELECT u.id FROM users u JOIN saml_configs c ON c.org_id = u.org_id
			WHERE u.org_id = ? AND u.org_role <> 'owner' AND c.enabled AND c.enforce`, []any{orgID}
		if userID != "" {
			query, args = query+` AND u.id = ?`, append(args, userID)
		}
		ids, err := column[string](tx.QueryContext(ctx, s.q(query+` ORDER BY u.id`), args...))
		if err != nil {
			return err
		}
		now := ms(s.now())
		for _, id := range ids {
			e := EndedSignIns{UserID: id}
			if e.Sessions, err = s.revokeSessions(ctx, tx, id, "", now); err != nil {
				return err
			}
			if e.APITokens, err = column[string](tx.QueryContext(ctx, s.q(`UPDATE api_tokens SET is_active = FALSE
				WHERE user_id = ? AND is_active RETURNING id`), id)); err != nil {
				return err
			}
			if len(e.Sessions)+len(e.APITokens) > 0 {
				out = append(out, e)
			}
		}
		return nil
	})
	return out, err
}
