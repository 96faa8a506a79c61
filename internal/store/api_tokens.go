package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/perch-dev/perch"
)

const apiTokenColumns = `k.id, k.user_id, k.label, k.token_prefix, k.is_active, k.created_at, k.last_verified_at`

func scanAPIToken(row interface{ Scan(...any) error }) (*perch.APIToken, error) {
	var k perch.APIToken
	var created int64
	var verified sql.NullInt64
	if err := row.Scan(&k.ID, &k.UserID, &k.Label, &k.TokenPrefix, &k.IsActive, &created, &verified); err != nil {
		return nil, err
	}
	k.CreatedAt, k.LastVerifiedAt = fromMS(created), fromNullMS(verified)
	return &k, nil
}

// CreateAPIToken stores a new active API token of userID, known by its hash.
func (s *Store) CreateAPIToken(ctx context.Context, userID, label, prefix, hash string) (*perch.APIToken, error) {
	k := &perch.APIToken{ID: newID(), UserID: userID, Label: label, TokenPrefix: prefix, IsActive: true, CreatedAt: s.now()}
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO api_tokens (id, user_id, label, token_prefix, hash, is_active, created_at)
		VALUES (?, ?, ?, ?, ?, TRUE, ?)`), k.ID, userID, label, prefix, hash, ms(k.CreatedAt))
	if err != nil {
		return nil, err
	}
	return k, nil
}

// APITokens lists the API tokens of userID, newest first.
func (s *Store) APITokens(ctx context.Context, userID string) ([]*perch.APIToken, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+apiTokenColumns+` FROM api_tokens k WHERE k.user_id = ? ORDER BY k.created_at DESC, k.id`), userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	tokens := []*perch.APIToken{}
	for rows.Next() {
		k, err := scanAPIToken(rows)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, k)
	}
	return tokens, rows.Err()
}

// APIToken returns one API token of userID, or ENOTFOUND (also for another
// user's token, so IDs reveal nothing).
func (s *Store) APIToken(ctx context.Context, userID, id string) (*perch.APIToken, error) {
	k, err := scanAPIToken(s.r.QueryRowContext(ctx, s.q(`SELECT `+apiTokenColumns+` FROM api_tokens k WHERE k.id = ? AND k.user_id = ?`), id, userID))
	return k, notFound(err, "API token")
}

// UpdateAPIToken changes the label or active state of one of userID's tokens.
func (s *Store) UpdateAPIToken(ctx context.Context, userID, id string, upd perch.APITokenUpdate) (*perch.APIToken, error) {
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE api_tokens SET label = COALESCE(?, label), is_active = COALESCE(?, is_active)
		WHERE id = ? AND user_id = ?`), upd.Label, upd.IsActive, id, userID)
	if err := expectOne(res, err, "API token"); err != nil {
		return nil, err
	}
	return s.APIToken(ctx, userID, id)
}

// DeleteAPIToken deletes one of userID's tokens, or returns ENOTFOUND.
func (s *Store) DeleteAPIToken(ctx context.Context, userID, id string) error {
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM api_tokens WHERE id = ? AND user_id = ?`), id, userID)
	return expectOne(res, err, "API token")
}

const apiTokenPrincipal = `SELECT ` + userColumns + `, ` + apiTokenColumns + `
	FROM api_tokens k JOIN users u ON u.id = k.user_id WHERE k.hash = ? AND k.is_active AND u.disabled_at IS NULL`

// APITokenPrincipal returns the owner of an active API token and the token,
// or EUNAUTHORIZED for an unknown or inactive one, or one whose owner is
// disabled.
func (s *Store) APITokenPrincipal(ctx context.Context, hash string) (*perch.User, *perch.APIToken, error) {
	var k perch.APIToken
	var created int64
	var verified sql.NullInt64
	st, err := s.prepared(ctx, s.r, apiTokenPrincipal)
	if err != nil {
		return nil, nil, err
	}
	u, err := scanUser(st.QueryRowContext(ctx, hash), &k.ID, &k.UserID, &k.Label, &k.TokenPrefix, &k.IsActive, &created, &verified)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, perch.Errorf(perch.EUNAUTHORIZED, "The API token is invalid or inactive, or its account is disabled.")
	}
	if err != nil {
		return nil, nil, err
	}
	k.CreatedAt, k.LastVerifiedAt = fromMS(created), fromNullMS(verified)
	return u, &k, nil
}

// TouchAPIToken records that a token was just used, writing at most once per
// interval so that a busy token does not turn every request into a write.
func (s *Store) TouchAPIToken(ctx context.Context, id string, interval time.Duration) error {
	now := s.now()
	_, err := s.w.ExecContext(ctx, s.q(`UPDATE api_tokens SET last_verified_at = ?
		WHERE id = ? AND (last_verified_at IS NULL OR last_verified_at <= ?)`), ms(now), id, ms(now.Add(-interval)))
	return err
}
