package store

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// adminsLock is the PostgreSQL advisory lock that serializes changes of
// platform admins, so that two admins stepping down at once cannot both
// count the other as the one who remains, nor two setup links both find
// the server without one. (SQLite has one writer.)
const adminsLock = 7_310_009

// lockAdmins takes adminsLock for the rest of tx (PostgreSQL; SQLite's
// one writer serializes them already).
func (s *Store) lockAdmins(ctx context.Context, tx *sql.Tx) error {
	if s.dialect != Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, adminsLock)
	return err
}

const adminUserColumns = `u.id, u.email, u.name, u.org_id, o.name, u.org_role, u.is_admin, u.email_verified, u.email_asserted_by,
	u.disabled_at IS NOT NULL, u.created_at, u.last_seen_at`

const adminUserFrom = ` FROM users u JOIN orgs o ON o.id = u.org_id`

func scanAdminUser(row interface{ Scan(...any) error }) (*perch.AdminUser, error) {
	var u perch.AdminUser
	var created int64
	var seen sql.NullInt64
	if err := row.Scan(&u.ID, &u.Email, &u.Name, &u.OrgID, &u.OrgName, &u.Role, &u.Granted, &u.EmailVerified, &u.EmailAssertedBy,
		&u.Disabled, &created, &seen); err != nil {
		return nil, err
	}
	u.CreatedAt, u.LastSeenAt = fromMS(created), fromNullMS(seen)
	return &u, nil
}

// Users answers one page of every user, newest first: those whose e-mail
// address or name holds q without regard to case (letters outside ASCII in
// names: see docs/DESIGN.md, Users and organisations), or whose id is q;
// everyone when q is "". The second result is the cursor of the next page,
// "" after the last. A cursor this store did not answer is EBADREQUEST.
func (s *Store) Users(ctx context.Context, q string, page perch.Page) ([]*perch.AdminUser, string, error) {
	var where []string
	var args []any
	if q = strings.TrimSpace(q); q != "" {
		like := containsPattern(q)
		where = append(where, `(u.email_norm LIKE ? ESCAPE '\' OR lower(u.name) LIKE ? ESCAPE '\' OR u.id = ?)`)
		args = append(args, like, like, q)
	}
	if err := afterCursor(page.Cursor, "u", &where, &args); err != nil {
		return nil, "", err
	}
	query := `SELECT ` + adminUserColumns + adminUserFrom + whereClause(where) + ` ORDER BY u.created_at DESC, u.id DESC LIMIT ?`
	rows, err := s.r.QueryContext(ctx, s.q(query), append(args, page.Limit+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	users := []*perch.AdminUser{}
	for rows.Next() {
		u, err := scanAdminUser(rows)
		if err != nil {
			return nil, "", err
		}
		users = append(users, u)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(users) > page.Limit {
		users = users[:page.Limit]
		last := users[len(users)-1]
		next = encodeCursor(last.CreatedAt, last.ID)
	}
	return users, next, nil
}

// AdminUser returns one user as the operators see them, or ENOTFOUND.
func (s *Store) AdminUser(ctx context.Context, id string) (*perch.AdminUser, error) {
	return s.adminUser(ctx, s.r, id)
}

func (s *Store) adminUser(ctx context.Context, db querier, id string) (*perch.AdminUser, error) {
	u, err := scanAdminUser(db.QueryRowContext(ctx, s.q(`SELECT `+adminUserColumns+adminUserFrom+` WHERE u.id = ?`), id))
	return u, notFound(err, "User")
}

// AdminUserChange is what UpdateUserAsAdmin did: the user before and after,
// and, when the user was disabled, the sign-ins it ended and the active API
// tokens that are refused from now on (they stay active, and work again if
// the user is enabled), so that the caller can close what they opened.
type AdminUserChange struct {
	Before, After *perch.AdminUser
	Sessions      []string
	APITokens     []string
}

// UpdateUserAsAdmin disables or enables a user, or grants or withdraws the
// platform-admin grant kept in the store. listed are the addresses
// (normalized) that configuration makes platform admins once verified.
// Disabling ends every sign-in of the user in the same transaction. A change
// that would leave no enabled platform admin is ECONFLICT; an unknown user
// ENOTFOUND.
func (s *Store) UpdateUserAsAdmin(ctx context.Context, id string, upd perch.AdminUserUpdate, listed []string) (*AdminUserChange, error) {
	c := &AdminUserChange{}
	now := ms(s.now())
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockAdmins(ctx, tx); err != nil {
			return err
		}
		var err error
		if c.Before, err = s.adminUser(ctx, tx, id); err != nil {
			return err
		}
		next := *c.Before
		if upd.Disabled != nil {
			next.Disabled = *upd.Disabled
		}
		if upd.PlatformAdmin != nil {
			next.Granted = *upd.PlatformAdmin
		}
		if isAdmin(c.Before, listed) && !isAdmin(&next, listed) {
			if err := s.anotherAdmin(ctx, tx, id, listed); err != nil {
				return err
			}
		}
		if next.Disabled != c.Before.Disabled || next.Granted != c.Before.Granted {
			// disabled_at keeps when the user was first disabled.
			// An admin's disable is theirs to lift: an identity provider
			// (SCIM) lifts only its own.
			res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET is_admin = ?, updated_at = ?,
				disabled_at = CASE WHEN ? THEN COALESCE(disabled_at, ?) ELSE NULL END,
				disabled_by = CASE WHEN ? THEN 'admin' ELSE '' END WHERE id = ?`),
				next.Granted, now, next.Disabled, now, next.Disabled, id)
			if err := expectOne(res, err, "User"); err != nil {
				return err
			}
			if err := s.seatsChangedFor(ctx, tx, id); err != nil {
				return err
			}
		}
		if next.Disabled {
			if c.Sessions, err = s.revokeSessions(ctx, tx, id, "", now); err != nil {
				return err
			}
			if c.APITokens, err = column[string](tx.QueryContext(ctx, s.q(`SELECT id FROM api_tokens WHERE user_id = ? AND is_active`), id)); err != nil {
				return err
			}
		}
		c.After, err = s.adminUser(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// isAdmin reports whether u is an enabled platform admin, by grant or by a
// listed, verified address.
func isAdmin(u *perch.AdminUser, listed []string) bool {
	if u.Disabled {
		return false
	}
	return u.Granted || u.EmailVerified && slices.Contains(listed, perch.NormalizeEmail(u.Email))
}

// adminPredicate is the SQL condition, on users u, of an enabled platform
// admin (as isAdmin): granted in the store, or listed (normalized
// addresses) with the mailbox proven; and its arguments.
func adminPredicate(listed []string) (string, []any) {
	if len(listed) == 0 {
		return `(u.disabled_at IS NULL AND u.is_admin)`, nil
	}
	args := make([]any, len(listed))
	for i, e := range listed {
		args[i] = e
	}
	return `(u.disabled_at IS NULL AND (u.is_admin OR (u.email_verified AND u.email_norm IN (?` + strings.Repeat(`, ?`, len(listed)-1) + `))))`, args
}

// anotherAdmin fails with ECONFLICT unless an enabled platform admin other
// than userID exists.
func (s *Store) anotherAdmin(ctx context.Context, tx *sql.Tx, userID string, listed []string) error {
	cond, args := adminPredicate(listed)
	var others int
	err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM users u WHERE u.id <> ? AND `+cond), append([]any{userID}, args...)...).Scan(&others)
	if err != nil {
		return err
	}
	if others == 0 {
		return perch.Errorf(perch.ECONFLICT, "This is the last platform admin: make someone else a platform admin first.")
	}
	return nil
}

// seen records that userID was seen at now, at most once a minute: a
// busy user does not turn every request into a write.
func (s *Store) seen(ctx context.Context, db querier, userID string, now time.Time) error {
	_, err := db.ExecContext(ctx, s.q(`UPDATE users SET last_seen_at = ?
		WHERE id = ? AND (last_seen_at IS NULL OR last_seen_at <= ?)`), ms(now), userID, ms(now.Add(-SeenEvery)))
	return err
}

// SeenEvery is how often a user's last_seen_at is written at most.
const SeenEvery = time.Minute

// TouchUser records that userID was just authenticated, writing at most
// once per SeenEvery.
func (s *Store) TouchUser(ctx context.Context, userID string) error {
	return s.seen(ctx, s.w, userID, s.now())
}

// disabledOrMissing explains why userID cannot sign in: errDisabled, or
// ENOTFOUND when there is no such user.
func (s *Store) disabledOrMissing(ctx context.Context, tx *sql.Tx, userID string) error {
	var disabled bool
	err := tx.QueryRowContext(ctx, s.q(`SELECT disabled_at IS NOT NULL FROM users WHERE id = ?`), userID).Scan(&disabled)
	if err != nil {
		return notFound(err, "User")
	}
	if disabled {
		return errDisabled
	}
	return perch.Errorf(perch.ENOTFOUND, "User not found.")
}
