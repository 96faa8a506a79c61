package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// SCIMUser is a member of an organisation as its identity provider sees it
// through SCIM: the account, and what the provider keeps of it (when
// Linked: the provider created or changed it through SCIM; before that,
// only the account is known).
type SCIMUser struct {
	ID         string
	OrgID      string
	Role       string
	Email      string
	Name       string
	Disabled   bool
	DisabledBy string // "admin", "scim", or "" (disabled before SCIM existed)
	// Granted and EmailVerified are the account's platform-admin grant and
	// proven mailbox, with which the caller tells a platform admin, whom
	// an organisation's identity provider never manages.
	Granted       bool
	EmailVerified bool
	Linked        bool
	UserName      string // the provider's userName; the e-mail address when not Linked
	ExternalID    string
	Attributes    string // JSON the server keeps for the provider (names, e-mails)
	CreatedAt     time.Time
	UpdatedAt     time.Time // the later of the account's and the SCIM record's
}

// SCIMWrite is what a SCIM create, replace or patch sets: the account's
// e-mail address and name, derived by the caller from the provider's
// attributes, and the attributes themselves.
type SCIMWrite struct {
	Email      string
	Name       string
	UserName   string
	ExternalID string
	Attributes string
	Active     bool
	// Role is the organisation role the provider's roles name; "" keeps
	// the member's role (member, for a new one).
	Role string
}

// SCIMChange is a SCIM update or removal: the user before and after, and
// the sessions and API tokens whose open WebSockets must now close.
type SCIMChange struct {
	Before, After *SCIMUser
	Sessions      []string
	APITokens     []string
}

// SCIMFilterField names what a SCIM filter compares.
type SCIMFilterField int

const (
	SCIMUserName   SCIMFilterField = iota // userName, without regard to case
	SCIMExternalID                        // externalId, exactly
	SCIMEmail                             // the account's e-mail address, without regard to case
	SCIMActive                            // whether the account is enabled
)

// SCIMCondition is one `field eq value` of a filter; a filter is a list of
// them, all of which must hold.
type SCIMCondition struct {
	Field  SCIMFilterField
	String string
	Bool   bool
}

const scimUserColumns = `u.id, u.org_id, u.org_role, u.email, u.name, u.disabled_at IS NOT NULL, u.disabled_by, u.is_admin, u.email_verified,
	su.user_id IS NOT NULL, COALESCE(su.user_name, u.email), COALESCE(su.external_id, ''), COALESCE(su.attributes, ''),
	COALESCE(su.created_at, u.created_at), u.updated_at, COALESCE(su.updated_at, 0)`

const scimUserFrom = ` FROM users u LEFT JOIN scim_users su ON su.user_id = u.id`

func scanSCIMUser(row interface{ Scan(...any) error }) (*SCIMUser, error) {
	var u SCIMUser
	var created, updated, scimUpdated int64
	if err := row.Scan(&u.ID, &u.OrgID, &u.Role, &u.Email, &u.Name, &u.Disabled, &u.DisabledBy, &u.Granted, &u.EmailVerified,
		&u.Linked, &u.UserName, &u.ExternalID, &u.Attributes, &created, &updated, &scimUpdated); err != nil {
		return nil, err
	}
	u.CreatedAt, u.UpdatedAt = fromMS(created), fromMS(max(updated, scimUpdated))
	return &u, nil
}

// scimCondition is the SQL of c and its argument.
func scimCondition(c SCIMCondition) (string, any) {
	switch c.Field {
	case SCIMUserName:
		return `COALESCE(su.user_name_norm, u.email_norm) = ?`, perch.NormalizeEmail(c.String)
	case SCIMExternalID:
		return `su.external_id = ?`, c.String
	case SCIMEmail:
		return `u.email_norm = ?`, perch.NormalizeEmail(c.String)
	default:
		return `(u.disabled_at IS NULL) = ?`, c.Bool
	}
}

// SCIMUsers answers the members of orgID that meet every condition, in the
// order they joined Perch, skipping offset and answering at most limit,
// with how many meet them in all.
func (s *Store) SCIMUsers(ctx context.Context, orgID string, conds []SCIMCondition, offset, limit int) ([]*SCIMUser, int, error) {
	where, args := ` WHERE u.org_id = ? AND u.scim_deleted_at IS NULL`, []any{orgID}
	for _, c := range conds {
		sql, arg := scimCondition(c)
		where += ` AND ` + sql
		args = append(args, arg)
	}
	var total int
	if err := s.r.QueryRowContext(ctx, s.q(`SELECT COUNT(*)`+scimUserFrom+where), args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	out := []*SCIMUser{}
	if limit == 0 || offset >= total {
		return out, total, nil
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+scimUserColumns+scimUserFrom+where+` ORDER BY u.created_at, u.id LIMIT ? OFFSET ?`),
		append(args, limit, offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		u, err := scanSCIMUser(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, u)
	}
	return out, total, rows.Err()
}

// SCIMUser answers the member userID of orgID, or ENOTFOUND (also when the
// user is in another organisation, or was deleted through SCIM).
func (s *Store) SCIMUser(ctx context.Context, orgID, userID string) (*SCIMUser, error) {
	return s.scimUser(ctx, s.r, orgID, userID)
}

func (s *Store) scimUser(ctx context.Context, db querier, orgID, userID string) (*SCIMUser, error) {
	u, err := scanSCIMUser(db.QueryRowContext(ctx, s.q(`SELECT `+scimUserColumns+scimUserFrom+` WHERE u.id = ? AND u.org_id = ? AND u.scim_deleted_at IS NULL`), userID, orgID))
	return u, notFound(err, "User")
}

// errSCIMTaken is the uniqueness conflict of a SCIM write; Fields names
// the attribute, which tells the caller it is one.
func errSCIMTaken(attr, msg string) error {
	return &perch.Error{Code: perch.ECONFLICT, Message: msg, Fields: map[string]string{attr: "taken"}}
}

// scimUnique fails when another member of orgID has userName, or another
// account has email.
func (s *Store) scimUnique(ctx context.Context, tx *sql.Tx, orgID, userID string, w SCIMWrite) error {
	var n int
	err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*)`+scimUserFrom+` WHERE u.org_id = ? AND u.id <> ?
		AND COALESCE(su.user_name_norm, u.email_norm) = ?`), orgID, userID, perch.NormalizeEmail(w.UserName)).Scan(&n)
	if err != nil {
		return err
	}
	if n > 0 {
		return errSCIMTaken("userName", "Another member of the organisation has this userName.")
	}
	err = tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM users WHERE email_norm = ? AND id <> ?`), perch.NormalizeEmail(w.Email), userID).Scan(&n)
	if err != nil {
		return err
	}
	if n > 0 {
		return errSCIMTaken("emails", "An account with this e-mail address already exists.")
	}
	return nil
}

// putSCIMRecord writes what the provider keeps of userID.
func (s *Store) putSCIMRecord(ctx context.Context, tx *sql.Tx, orgID, userID string, w SCIMWrite, now int64) error {
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO scim_users
		(user_id, org_id, user_name, user_name_norm, external_id, attributes, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (user_id) DO UPDATE SET org_id = excluded.org_id, user_name = excluded.user_name,
			user_name_norm = excluded.user_name_norm, external_id = excluded.external_id,
			attributes = excluded.attributes, updated_at = excluded.updated_at`),
		userID, orgID, strings.TrimSpace(w.UserName), perch.NormalizeEmail(w.UserName), w.ExternalID, w.Attributes, now, now)
	if isUniqueViolation(err) {
		return errSCIMTaken("userName", "Another member of the organisation has this userName.")
	}
	return err
}

// CreateSCIMUser makes an account in orgID with w's role (member when
// none), as its identity provider asks, with no password (the member signs
// in through the organisation's single sign-on). The address is the organisation's
// assertion (email_asserted_by), not a proven mailbox. A taken userName or
// address is ECONFLICT naming it in Fields; a full plan is ECONFLICT too.
func (s *Store) CreateSCIMUser(ctx context.Context, orgID string, w SCIMWrite) (*SCIMUser, error) {
	id := newID()
	var out *SCIMUser
	err := s.tx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		if err := s.seatFree(ctx, tx, orgID, now); err != nil {
			return err
		}
		if err := s.scimUnique(ctx, tx, orgID, id, w); err != nil {
			return err
		}
		disabledAt, disabledBy := sql.NullInt64{}, ""
		if !w.Active {
			disabledAt, disabledBy = sql.NullInt64{Int64: ms(now), Valid: true}, DisabledBySCIM
		}
		role := w.Role
		if role == "" {
			role = perch.RoleMember
		}
		if !perch.ValidRole(role) {
			return perch.Errorf(perch.EBADREQUEST, "%q is not an organisation role.", role)
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO users
			(id, org_id, org_role, joined_at, email, email_norm, name, email_asserted_by, created_at, updated_at, disabled_at, disabled_by)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			id, orgID, role, ms(now), strings.TrimSpace(w.Email), perch.NormalizeEmail(w.Email), strings.TrimSpace(w.Name), orgID,
			ms(now), ms(now), disabledAt, disabledBy)
		if isUniqueViolation(err) {
			return errSCIMTaken("emails", "An account with this e-mail address already exists.")
		}
		if err != nil {
			return err
		}
		if err := s.putSCIMRecord(ctx, tx, orgID, id, w, ms(now)); err != nil {
			return err
		}
		if err := s.seatsChanged(ctx, tx, orgID); err != nil {
			return err
		}
		out, err = s.scimUser(ctx, tx, orgID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateSCIMUser changes the member userID of orgID to what change makes
// of it (a replace or a patch, run in the transaction so that two at once
// cannot lose one). Deactivating disables the account as a platform admin
// does (disableUser: every session ends in the same transaction) and
// answers the sessions and active API tokens, for their WebSockets;
// reactivating lifts only a SCIM deactivation (an account a platform admin
// disabled is ECONFLICT). A new address is the organisation's assertion:
// the account's mailbox is no longer proven. A role in w changes the
// member's, except that the last owner cannot be demoted (ECONFLICT, and
// nothing changes). Taken names are as for CreateSCIMUser.
func (s *Store) UpdateSCIMUser(ctx context.Context, orgID, userID string, change func(*SCIMUser) (SCIMWrite, error)) (*SCIMChange, error) {
	var c *SCIMChange
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		c, err = s.updateSCIMUser(ctx, tx, orgID, userID, change)
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// updateSCIMUser is UpdateSCIMUser in tx.
func (s *Store) updateSCIMUser(ctx context.Context, tx *sql.Tx, orgID, userID string, change func(*SCIMUser) (SCIMWrite, error)) (*SCIMChange, error) {
	c := &SCIMChange{}
	before, err := s.lockedSCIMUser(ctx, tx, orgID, userID)
	if err != nil {
		return nil, err
	}
	c.Before = before
	w, err := change(before)
	if err != nil {
		return nil, err
	}
	if err := s.scimUnique(ctx, tx, orgID, userID, w); err != nil {
		return nil, err
	}
	if w.Active && before.Disabled && before.DisabledBy != DisabledBySCIM {
		return nil, perch.Errorf(perch.ECONFLICT, "A platform admin disabled this account; only a platform admin can enable it again.")
	}
	now := ms(s.now())
	moved := perch.NormalizeEmail(w.Email) != perch.NormalizeEmail(before.Email)
	res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET email = ?, email_norm = ?, name = ?, updated_at = ?,
		email_verified = CASE WHEN ? THEN FALSE ELSE email_verified END,
		email_asserted_by = CASE WHEN ? THEN ? ELSE email_asserted_by END
		WHERE id = ?`),
		strings.TrimSpace(w.Email), perch.NormalizeEmail(w.Email), strings.TrimSpace(w.Name), now,
		moved, moved, orgID, userID)
	if isUniqueViolation(err) {
		return nil, errSCIMTaken("emails", "An account with this e-mail address already exists.")
	}
	if err := expectOne(res, err, "User"); err != nil {
		return nil, err
	}
	if err := s.putSCIMRecord(ctx, tx, orgID, userID, w, now); err != nil {
		return nil, err
	}
	if err := s.setSCIMRole(ctx, tx, before, w.Role, now); err != nil {
		return nil, err
	}
	if w.Active {
		err = s.enableUser(ctx, tx, userID, DisabledBySCIM, now)
	} else {
		c.Sessions, c.APITokens, err = s.disableUser(ctx, tx, userID, DisabledBySCIM, now)
	}
	if err != nil {
		return nil, err
	}
	c.After, err = s.scimUser(ctx, tx, orgID, userID)
	return c, err
}

// lockedSCIMUser reads the member for an update in tx, holding its row on
// PostgreSQL (SQLite has one writer).
func (s *Store) lockedSCIMUser(ctx context.Context, tx *sql.Tx, orgID, userID string) (*SCIMUser, error) {
	if s.dialect == Postgres {
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM users WHERE id = $1 AND org_id = $2 FOR UPDATE`, userID, orgID); err != nil {
			return nil, err
		}
	}
	return s.scimUser(ctx, tx, orgID, userID)
}

// seatFree fails with ECONFLICT when the members and pending invitations
// of orgID fill its plan's seats.
func (s *Store) seatFree(ctx context.Context, tx *sql.Tx, orgID string, now time.Time) error {
	var members, pending, seats int
	err := tx.QueryRowContext(ctx, s.q(`SELECT
			(SELECT COUNT(*) FROM users WHERE org_id = o.id),
			(SELECT COUNT(*) FROM invitations WHERE org_id = o.id AND status = 'pending' AND expires_at > ?),
			p.max_seats
		FROM orgs o JOIN plans p ON p.slug = o.plan WHERE o.id = ?`), ms(now), orgID).Scan(&members, &pending, &seats)
	if err != nil {
		return notFound(err, "Organisation")
	}
	if members+pending >= seats {
		return perch.Errorf(perch.ECONFLICT, "All %d seats of the organisation's plan are taken: ask an owner to make room.", seats)
	}
	return nil
}

// setSCIMRole gives the member role, when it names one other than theirs,
// keeping the organisation an owner.
func (s *Store) setSCIMRole(ctx context.Context, tx *sql.Tx, member *SCIMUser, role string, now int64) error {
	switch {
	case role == "" || role == member.Role:
		return nil
	case !perch.ValidRole(role):
		return perch.Errorf(perch.EBADREQUEST, "%q is not an organisation role.", role)
	}
	if member.Role == perch.RoleOwner {
		err := s.keepsAnOwner(ctx, tx, member.OrgID, member.ID)
		if errors.Is(err, errLastOwner) {
			return perch.Errorf(perch.ECONFLICT, "This is the organisation's last owner: the identity provider cannot make them %s. Make someone else an owner first (in Perch, or with roles).", role)
		}
		if err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, s.q(`UPDATE users SET org_role = ?, updated_at = ? WHERE id = ? AND org_id = ?`), role, now, member.ID, member.OrgID)
	return err
}
