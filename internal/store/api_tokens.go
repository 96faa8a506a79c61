package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/perch-dev/perch"
)

const apiTokenColumns = `k.id, k.user_id, k.label, k.token_prefix, k.is_active, k.created_at, k.last_verified_at, k.expires_at, k.scopes`

// apiTokenRow is where a row of apiTokenColumns is scanned to.
type apiTokenRow struct {
	k                 perch.APIToken
	created           int64
	verified, expires sql.NullInt64
	scopes            sql.NullString
}

func (t *apiTokenRow) dest() []any {
	return []any{&t.k.ID, &t.k.UserID, &t.k.Label, &t.k.TokenPrefix, &t.k.IsActive, &t.created, &t.verified, &t.expires, &t.scopes}
}

func (t *apiTokenRow) token() *perch.APIToken {
	t.k.CreatedAt, t.k.LastVerifiedAt, t.k.ExpiresAt = fromMS(t.created), fromNullMS(t.verified), fromNullMS(t.expires)
	if t.scopes.Valid {
		t.k.Scopes = perch.ParseTokenScopes(t.scopes.String)
	}
	return &t.k
}

func scanAPIToken(row interface{ Scan(...any) error }) (*perch.APIToken, error) {
	var t apiTokenRow
	if err := row.Scan(t.dest()...); err != nil {
		return nil, err
	}
	return t.token(), nil
}

// CreateAPIToken stores a new active API token of userID, known by its
// hash, that never expires and may do everything its user may.
func (s *Store) CreateAPIToken(ctx context.Context, userID, label, prefix, hash string) (*perch.APIToken, error) {
	return s.CreateLimitedAPIToken(ctx, userID, label, prefix, hash, perch.APITokenLimits{})
}

// CreateLimitedAPIToken stores a new active API token of userID, known by
// its hash, with its expiry and scopes (validated by the caller:
// perch.ValidateTokenLimits).
func (s *Store) CreateLimitedAPIToken(ctx context.Context, userID, label, prefix, hash string, lim perch.APITokenLimits) (*perch.APIToken, error) {
	k := &perch.APIToken{ID: newID(), UserID: userID, Label: label, TokenPrefix: prefix, IsActive: true, CreatedAt: s.now(),
		ExpiresAt: lim.ExpiresAt, Scopes: lim.Scopes}
	var expires sql.NullInt64
	if k.ExpiresAt != nil {
		expires = sql.NullInt64{Int64: ms(*k.ExpiresAt), Valid: true}
		*k.ExpiresAt = fromMS(expires.Int64) // as it reads back
	}
	var scopes sql.NullString
	if k.Scopes != nil {
		scopes = sql.NullString{String: perch.FormatTokenScopes(k.Scopes), Valid: true}
	}
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO api_tokens (id, user_id, label, token_prefix, hash, is_active, created_at, expires_at, scopes)
		VALUES (?, ?, ?, ?, ?, TRUE, ?, ?, ?)`), k.ID, userID, label, prefix, hash, ms(k.CreatedAt), expires, scopes)
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

// APITokenPrincipal returns the owner of an active, unexpired API token and
// the token, or EUNAUTHORIZED for an unknown, inactive or expired one, or
// one whose owner is disabled.
func (s *Store) APITokenPrincipal(ctx context.Context, hash string) (*perch.User, *perch.APIToken, error) {
	var t apiTokenRow
	st, err := s.prepared(ctx, s.r, apiTokenPrincipal)
	if err != nil {
		return nil, nil, err
	}
	u, err := scanUser(st.QueryRowContext(ctx, hash), t.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, perch.Errorf(perch.EUNAUTHORIZED, "The API token is invalid or inactive, or its account is disabled.")
	}
	if err != nil {
		return nil, nil, err
	}
	k := t.token()
	if k.Expired(s.now()) {
		return nil, nil, perch.Errorf(perch.EUNAUTHORIZED, "The API token expired at %s; make a new one on the dashboard's API tokens page.",
			k.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return u, k, nil
}

// TouchAPIToken records that a token was just used, writing at most once per
// interval so that a busy token does not turn every request into a write.
func (s *Store) TouchAPIToken(ctx context.Context, id string, interval time.Duration) error {
	now := s.now()
	_, err := s.w.ExecContext(ctx, s.q(`UPDATE api_tokens SET last_verified_at = ?
		WHERE id = ? AND (last_verified_at IS NULL OR last_verified_at <= ?)`), ms(now), id, ms(now.Add(-interval)))
	return err
}
