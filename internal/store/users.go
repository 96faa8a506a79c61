package store

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

const userColumns = `u.id, u.email, u.name, u.email_verified, u.org_id, u.org_role, u.is_admin, u.newsletter_at IS NOT NULL, u.created_at, u.updated_at, u.last_seen_at,
	u.disabled_at IS NOT NULL`

func scanUser(row interface{ Scan(...any) error }, extra ...any) (*perch.User, error) {
	var u perch.User
	var created, updated int64
	var seen sql.NullInt64
	dest := append([]any{&u.ID, &u.Email, &u.Name, &u.EmailVerified, &u.OrgID, &u.OrgRole, &u.IsAdmin, &u.Newsletter, &created, &updated, &seen,
		&u.Disabled}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	u.CreatedAt, u.UpdatedAt, u.LastSeenAt = fromMS(created), fromMS(updated), fromNullMS(seen)
	return &u, nil
}

// CreateUser creates an account and, in the same transaction, the
// organisation it owns: "<name>'s organisation" on a team-plan trial.
// It returns ECONFLICT when the e-mail address (case-insensitively) is taken.
func (s *Store) CreateUser(ctx context.Context, name, email, passwordHash string) (*perch.User, error) {
	var u *perch.User
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		u, err = s.createOwner(ctx, tx, name, email, passwordHash)
		return err
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// createOwner inserts an account and the organisation it owns. Its mailbox
// is not proven yet: only VerifyEmail, ResetPassword and a mailed
// invitation prove one.
func (s *Store) createOwner(ctx context.Context, tx *sql.Tx, name, email, passwordHash string) (*perch.User, error) {
	now := s.now()
	name, email = strings.TrimSpace(name), strings.TrimSpace(email)
	u := &perch.User{ID: newID(), Email: email, Name: name, OrgRole: perch.RoleOwner, CreatedAt: now, UpdatedAt: now}
	orgID, err := s.createOrg(ctx, tx, perch.OrgNameFor(name), now)
	if err != nil {
		return nil, err
	}
	u.OrgID = orgID
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO users
		(id, org_id, org_role, joined_at, email, email_norm, name, password_hash, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		u.ID, u.OrgID, u.OrgRole, ms(now), u.Email, perch.NormalizeEmail(email), u.Name, passwordHash, ms(now), ms(now))
	if isUniqueViolation(err) {
		return nil, perch.Errorf(perch.ECONFLICT, "An account with this e-mail address already exists.")
	}
	if err != nil {
		return nil, err
	}
	return u, nil
}

// createOrg inserts a new organisation on a team-plan trial and returns its ID.
func (s *Store) createOrg(ctx context.Context, tx *sql.Tx, name string, now time.Time) (string, error) {
	id := newID()
	trialEnds := now.Add(perch.TrialDays * 24 * time.Hour)
	// The slug is readable and unique without a retry loop: the random suffix
	// comes from the ID.
	slug := slugify(name) + "-" + id[:6]
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO orgs (id, name, slug, plan, plan_status, trial_ends_at, created_at)
		VALUES (?, ?, ?, 'team', ?, ?, ?)`), id, name, slug, perch.PlanTrialing, ms(trialEnds), ms(now))
	if err != nil {
		return "", fmt.Errorf("create org: %w", err)
	}
	return id, nil
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

func slugify(s string) string {
	s = strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	if s == "" {
		s = "org"
	}
	return s
}

// User returns the user with the given ID, or ENOTFOUND.
func (s *Store) User(ctx context.Context, id string) (*perch.User, error) {
	u, err := scanUser(s.r.QueryRowContext(ctx, s.q(`SELECT `+userColumns+` FROM users u WHERE u.id = ?`), id))
	return u, notFound(err, "User")
}

// UserCredentials returns the user with the given e-mail address (compared
// case-insensitively) and their password hash, or ENOTFOUND.
func (s *Store) UserCredentials(ctx context.Context, email string) (*perch.User, string, error) {
	var hash string
	u, err := scanUser(s.r.QueryRowContext(ctx, s.q(`SELECT `+userColumns+`, u.password_hash FROM users u WHERE u.email_norm = ?`),
		perch.NormalizeEmail(email)), &hash)
	if err != nil {
		return nil, "", notFound(err, "User")
	}
	return u, hash, nil
}

// PasswordHash returns the password hash of a user, or ENOTFOUND.
func (s *Store) PasswordHash(ctx context.Context, userID string) (string, error) {
	var hash string
	err := s.r.QueryRowContext(ctx, s.q(`SELECT password_hash FROM users WHERE id = ?`), userID).Scan(&hash)
	return hash, notFound(err, "User")
}

// SetUserName renames a user and returns the updated user.
func (s *Store) SetUserName(ctx context.Context, userID, name string) (*perch.User, error) {
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE users SET name = ?, updated_at = ? WHERE id = ?`),
		strings.TrimSpace(name), ms(s.now()), userID)
	if err := expectOne(res, err, "User"); err != nil {
		return nil, err
	}
	return s.User(ctx, userID)
}

// SetPassword replaces a user's password hash and revokes every sign-in of
// theirs except keepSession (which may be empty to revoke them all); it
// returns the ids of the sign-ins it revoked.
func (s *Store) SetPassword(ctx context.Context, userID, hash, keepSession string) ([]string, error) {
	now := ms(s.now())
	var revoked []string
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?`), hash, now, userID)
		if err := expectOne(res, err, "User"); err != nil {
			return err
		}
		revoked, err = s.revokeSessions(ctx, tx, userID, keepSession, now)
		return err
	})
	return revoked, err
}

// GrantAdmin makes the account with the given e-mail address a platform
// admin. The server has an admin then, so its setup links (setup.go) are
// deleted in the same transaction.
func (s *Store) GrantAdmin(ctx context.Context, email string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockAdmins(ctx, tx); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET is_admin = TRUE, updated_at = ? WHERE email_norm = ?`),
			ms(s.now()), perch.NormalizeEmail(email))
		if err := expectOne(res, err, "User"); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM setup_codes`)
		return err
	})
}

// SyncListedAdmins brings up to date the record of who is a platform admin
// by PERCH_ADMIN_EMAILS (listed: the addresses, normalized), for the account
// userID, or for every account when userID is "": an account whose address
// is listed and whose mailbox is proven gains the mark, one that no longer
// qualifies loses it. It answers the accounts that gained and lost it. Each
// change is a conditional update, so however many instances sync at once,
// each account is answered by one of them, once: the caller audits it.
func (s *Store) SyncListedAdmins(ctx context.Context, listed []string, userID string) (granted, withdrawn []*perch.User, err error) {
	qualifies, args := `FALSE`, []any{}
	if len(listed) > 0 {
		qualifies = `(email_verified AND email_norm IN (?` + strings.Repeat(`, ?`, len(listed)-1) + `))`
		for _, e := range listed {
			args = append(args, e)
		}
	}
	only := ``
	if userID != "" {
		only, args = ` AND id = ?`, append(args, userID)
	}
	var gained, lost []string
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		gained, err = column[string](tx.QueryContext(ctx, s.q(`UPDATE users SET listed_admin = TRUE
			WHERE NOT listed_admin AND `+qualifies+only+` RETURNING id`), args...))
		if err != nil {
			return err
		}
		lost, err = column[string](tx.QueryContext(ctx, s.q(`UPDATE users SET listed_admin = FALSE
			WHERE listed_admin AND NOT `+qualifies+only+` RETURNING id`), args...))
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if granted, err = s.usersByID(ctx, gained); err != nil {
		return nil, nil, err
	}
	withdrawn, err = s.usersByID(ctx, lost)
	return granted, withdrawn, err
}

// usersByID reads the users with the ids, in that order.
func (s *Store) usersByID(ctx context.Context, ids []string) ([]*perch.User, error) {
	out := make([]*perch.User, 0, len(ids))
	for _, id := range ids {
		u, err := s.User(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// Org returns the organisation with the given ID, its seat counts and its
// subscription, or ENOTFOUND.
func (s *Store) Org(ctx context.Context, id string) (*perch.Org, error) {
	var o perch.Org
	var created int64
	var trial sql.NullInt64
	var sub subscriptionRow
	err := s.r.QueryRowContext(ctx, s.q(`SELECT o.id, o.name, o.slug, o.plan, o.plan_status, o.trial_ends_at, o.created_at, p.max_seats,
			(SELECT COUNT(*) FROM users u WHERE u.org_id = o.id),
			(SELECT COUNT(*) FROM invitations i WHERE i.org_id = o.id AND i.status = 'pending' AND i.expires_at > ?),
			`+subscriptionColumns+`
		FROM orgs o JOIN plans p ON p.slug = o.plan WHERE o.id = ?`), ms(s.now()), id).
		Scan(append([]any{&o.ID, &o.Name, &o.Slug, &o.Plan, &o.PlanStatus, &trial, &created, &o.MaxSeats, &o.SeatCount, &o.PendingInvitations},
			sub.dest()...)...)
	if err != nil {
		return nil, notFound(err, "Organisation")
	}
	o.CreatedAt, o.TrialEndsAt, o.Subscription = fromMS(created), fromNullMS(trial), sub.subscription()
	return &o, nil
}

// expectOne turns an update or delete that touched no row into ENOTFOUND.
func expectOne(res sql.Result, err error, what string) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return perch.Errorf(perch.ENOTFOUND, "%s not found.", what)
	}
	return nil
}
