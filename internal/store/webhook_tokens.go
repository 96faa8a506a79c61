package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/perch-dev/perch"
)

const webhookTokenColumns = `w.id, w.user_id, w.org_id, w.team_id, w.label, w.sender, w.scope, w.token_prefix, w.created_at, w.last_used_at`

func scanWebhookToken(row interface{ Scan(...any) error }) (*perch.WebhookToken, error) {
	var t perch.WebhookToken
	var team sql.NullString
	var created int64
	var used sql.NullInt64
	if err := row.Scan(&t.ID, &t.UserID, &t.OrgID, &team, &t.Label, &t.Sender, &t.Scope, &t.TokenPrefix, &created, &used); err != nil {
		return nil, err
	}
	if team.Valid {
		t.TeamID = &team.String
	}
	t.CreatedAt, t.LastUsedAt = fromMS(created), fromNullMS(used)
	return &t, nil
}

// CreateWebhookToken stores a webhook token known by its hash. t carries the
// creator, organisation, label, sender, scope and team.
func (s *Store) CreateWebhookToken(ctx context.Context, t *perch.WebhookToken, hash string) (*perch.WebhookToken, error) {
	out := *t
	out.ID, out.CreatedAt = newID(), s.now()
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO webhook_tokens (id, user_id, org_id, team_id, label, sender, scope, token_prefix, hash, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`), out.ID, out.UserID, out.OrgID, out.TeamID, out.Label, out.Sender, out.Scope, out.TokenPrefix, hash, ms(out.CreatedAt))
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// WebhookTokens lists the webhook tokens a user created, newest first.
func (s *Store) WebhookTokens(ctx context.Context, userID string) ([]*perch.WebhookToken, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+webhookTokenColumns+` FROM webhook_tokens w WHERE w.user_id = ? ORDER BY w.created_at DESC, w.id`), userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []*perch.WebhookToken{}
	for rows.Next() {
		t, err := scanWebhookToken(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, t)
	}
	return list, rows.Err()
}

// DeleteWebhookToken deletes one of userID's webhook tokens, or returns
// ENOTFOUND. The token stops working at once: receivers look it up on every
// delivery.
func (s *Store) DeleteWebhookToken(ctx context.Context, userID, id string) error {
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM webhook_tokens WHERE id = ? AND user_id = ?`), id, userID)
	return expectOne(res, err, "Webhook token")
}

// webhookTokenUsable holds for a webhook token w of user u while u could
// still make it (see WebhookTokenByHash).
const webhookTokenUsable = `u.disabled_at IS NULL AND (w.scope = 'user'
		OR (u.org_id = w.org_id AND u.org_role IN ('owner', 'admin'))
		OR (w.scope = 'team' AND u.org_id = w.org_id
			AND EXISTS (SELECT 1 FROM team_members tm WHERE tm.team_id = w.team_id AND tm.user_id = w.user_id)))`

const webhookTokenByHash = `SELECT ` + webhookTokenColumns + ` FROM webhook_tokens w
	JOIN users u ON u.id = w.user_id
	WHERE w.hash = ? AND ` + webhookTokenUsable

// WebhookTokenByHash returns the token with the given hash while its
// creator could still make it: for an organisation token, an owner or admin
// of that organisation; for a team token, a member of the team or an owner or
// admin of its organisation. Otherwise, as for an unknown or deleted token,
// EUNAUTHORIZED: a member who leaves takes their grants along, and a
// disabled user's tokens stop until they are enabled again.
func (s *Store) WebhookTokenByHash(ctx context.Context, hash string) (*perch.WebhookToken, error) {
	st, err := s.prepared(ctx, s.r, webhookTokenByHash)
	if err != nil {
		return nil, err
	}
	t, err := scanWebhookToken(st.QueryRowContext(ctx, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, perch.Errorf(perch.EUNAUTHORIZED, "The webhook token is invalid or was deleted.")
	}
	return t, err
}

// TouchWebhookTokens records when tokens were used (token id → when), in
// one transaction; a token's use is written at most once per interval.
func (s *Store) TouchWebhookTokens(ctx context.Context, uses map[string]time.Time, interval time.Duration) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		for id, at := range uses {
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE webhook_tokens SET last_used_at = ?
				WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)`), ms(at), id, ms(at.Add(-interval))); err != nil {
				return err
			}
		}
		return nil
	})
}
