package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/perch-dev/perch"
)

// IdentityUser returns the account linked to subject at provider, or
// ENOTFOUND.
func (s *Store) IdentityUser(ctx context.Context, provider, subject string) (*perch.User, error) {
	u, err := scanUser(s.r.QueryRowContext(ctx, s.q(`SELECT `+userColumns+` FROM user_identities i JOIN users u ON u.id = i.user_id
		WHERE i.provider = ? AND i.subject = ?`), provider, subject))
	return u, notFound(err, "Identity")
}

// Identities lists the providers linked to a user's account, oldest first.
func (s *Store) Identities(ctx context.Context, userID string) ([]perch.Identity, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT provider, subject, email, created_at FROM user_identities
		WHERE user_id = ? ORDER BY created_at, provider`), userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []perch.Identity{}
	for rows.Next() {
		id := perch.Identity{UserID: userID}
		var created int64
		if err := rows.Scan(&id.Provider, &id.Subject, &id.Email, &created); err != nil {
			return nil, err
		}
		id.CreatedAt = fromMS(created)
		out = append(out, id)
	}
	return out, rows.Err()
}

// LinkIdentity links id (its Provider, Subject and Email) to the account
// userID and returns it as stored. Linking what is already linked to that
// account changes nothing; ECONFLICT when the provider's account is linked
// to another Perch account, or this account to another account at the
// provider.
func (s *Store) LinkIdentity(ctx context.Context, userID string, id perch.Identity) (*perch.Identity, error) {
	var out *perch.Identity
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		out, err = s.linkIdentity(ctx, tx, userID, id)
		return err
	})
	return out, err
}

func (s *Store) linkIdentity(ctx context.Context, tx *sql.Tx, userID string, id perch.Identity) (*perch.Identity, error) {
	title := perch.ProviderTitle(id.Provider)
	var owner string
	err := tx.QueryRowContext(ctx, s.q(`SELECT user_id FROM user_identities WHERE provider = ? AND subject = ?`), id.Provider, id.Subject).Scan(&owner)
	switch {
	case err == nil && owner == userID:
		return s.identity(ctx, tx, userID, id.Provider)
	case err == nil:
		return nil, perch.Errorf(perch.ECONFLICT, "This %s account is already linked to another Perch account.", title)
	case !errors.Is(err, sql.ErrNoRows):
		return nil, err
	}
	now := s.now()
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO user_identities (user_id, provider, subject, email, created_at) VALUES (?, ?, ?, ?, ?)`),
		userID, id.Provider, id.Subject, id.Email, ms(now))
	if isUniqueViolation(err) {
		return nil, perch.Errorf(perch.ECONFLICT, "Your Perch account is already linked to another %s account; remove that one first.", title)
	}
	if err != nil {
		return nil, err
	}
	return &perch.Identity{UserID: userID, Provider: id.Provider, Subject: id.Subject, Email: id.Email, CreatedAt: now}, nil
}

// identity reads the link of userID to provider.
func (s *Store) identity(ctx context.Context, tx *sql.Tx, userID, provider string) (*perch.Identity, error) {
	out := perch.Identity{UserID: userID, Provider: provider}
	var created int64
	err := tx.QueryRowContext(ctx, s.q(`SELECT subject, email, created_at FROM user_identities WHERE user_id = ? AND provider = ?`),
		userID, provider).Scan(&out.Subject, &out.Email, &created)
	if err != nil {
		return nil, notFound(err, "Identity")
	}
	out.CreatedAt = fromMS(created)
	return &out, nil
}

// CreateIdentityUser creates an account for a person who signs in with a
// provider for the first time, as CreateUser does (with its own
// organisation), with no password and id linked, in one transaction. The
// provider verified the address, but the mailbox counts as proven only
// after one of Perch's own round trips (VerifyEmail). ECONFLICT when the
// address or the provider's account is taken.
func (s *Store) CreateIdentityUser(ctx context.Context, name, email string, id perch.Identity) (*perch.User, error) {
	var u *perch.User
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		// An empty password hash matches no password (auth.CheckPassword).
		if u, err = s.createOwner(ctx, tx, name, email, ""); err != nil {
			return err
		}
		_, err = s.linkIdentity(ctx, tx, u.ID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// RemoveIdentity unlinks provider from the account userID: ENOTFOUND when
// it is not linked, ECONFLICT when it is the last way to sign in (no
// password and no other provider).
func (s *Store) RemoveIdentity(ctx context.Context, userID, provider string) (*perch.Identity, error) {
	var gone *perch.Identity
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// The update locks the user's row on PostgreSQL, so that two
		// removals at once cannot each leave the other as the last way in.
		res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET updated_at = ? WHERE id = ?`), ms(s.now()), userID)
		if err := expectOne(res, err, "User"); err != nil {
			return err
		}
		if gone, err = s.identity(ctx, tx, userID, provider); err != nil {
			return err
		}
		var password bool
		var others int
		err = tx.QueryRowContext(ctx, s.q(`SELECT u.password_hash <> '',
			(SELECT COUNT(*) FROM user_identities i WHERE i.user_id = u.id AND i.provider <> ?)
			FROM users u WHERE u.id = ?`), provider, userID).Scan(&password, &others)
		if err != nil {
			return err
		}
		if !password && others == 0 {
			return perch.Errorf(perch.ECONFLICT, "%s is the only way you sign in: set a password (Forgot your password? on the sign-in page mails a link) or link another account first.",
				perch.ProviderTitle(provider))
		}
		_, err = tx.ExecContext(ctx, s.q(`DELETE FROM user_identities WHERE user_id = ? AND provider = ?`), userID, provider)
		return err
	})
	return gone, err
}

// CreateOAuthFlow records a sign-in with a provider under way, found later
// by stateHash, the hash of its state; it also deletes the flows that have
// expired.
func (s *Store) CreateOAuthFlow(ctx context.Context, stateHash string, f perch.OAuthFlow) error {
	now := s.now()
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM oauth_flows WHERE expires_at <= ?`), ms(now)); err != nil {
			return err
		}
		link := sql.NullString{String: f.LinkUserID, Valid: f.LinkUserID != ""}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO oauth_flows
			(state_hash, provider, verifier, nonce, redirect, device_session, link_user_id, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), stateHash, f.Provider, f.Verifier, f.Nonce, f.Redirect, f.DeviceSession, link,
			ms(now), ms(f.ExpiresAt))
		return err
	})
}

// TakeOAuthFlow returns the flow of stateHash and deletes it, so that a
// state is used once, on every instance: ENOTFOUND when there is none (it
// was never made or was taken already) or it has expired.
func (s *Store) TakeOAuthFlow(ctx context.Context, stateHash string) (*perch.OAuthFlow, error) {
	var f perch.OAuthFlow
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var link sql.NullString
		var expires int64
		err := tx.QueryRowContext(ctx, s.q(`SELECT provider, verifier, nonce, redirect, device_session, link_user_id, expires_at
			FROM oauth_flows WHERE state_hash = ?`), stateHash).Scan(&f.Provider, &f.Verifier, &f.Nonce, &f.Redirect, &f.DeviceSession, &link, &expires)
		if err != nil {
			return notFound(err, "Sign-in")
		}
		f.LinkUserID, f.ExpiresAt = link.String, fromMS(expires)
		// Of two callers with the same state, one deletes the row.
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM oauth_flows WHERE state_hash = ?`), stateHash)
		return expectOne(res, err, "Sign-in")
	})
	if err != nil {
		return nil, err
	}
	if !f.ExpiresAt.After(s.now()) {
		return nil, perch.Errorf(perch.ENOTFOUND, "Sign-in not found.")
	}
	return &f, nil
}
