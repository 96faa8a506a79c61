package store

import (
	"context"
	"database/sql"
	"strings"

	"github.com/perch-dev/perch"
)

// RenameOrg renames an organisation and returns it.
func (s *Store) RenameOrg(ctx context.Context, orgID, name string) (*perch.Org, error) {
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE orgs SET name = ? WHERE id = ?`), strings.TrimSpace(name), orgID)
	if err := expectOne(res, err, "Organisation"); err != nil {
		return nil, err
	}
	return s.Org(ctx, orgID)
}

const memberColumns = `u.id, u.name, u.email, u.org_role, u.joined_at, u.disabled_at IS NOT NULL`

// Members lists an organisation's members, oldest first, each with their teams.
func (s *Store) Members(ctx context.Context, orgID string) ([]*perch.Member, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+memberColumns+` FROM users u WHERE u.org_id = ? ORDER BY u.joined_at, u.id`), orgID)
	if err != nil {
		return nil, err
	}
	members := []*perch.Member{}
	byID := map[string]*perch.Member{}
	for rows.Next() {
		m, err := scanMember(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		members = append(members, m)
		byID[m.ID] = m
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = s.r.QueryContext(ctx, s.q(`SELECT tm.user_id, t.id, t.name FROM team_members tm JOIN teams t ON t.id = tm.team_id
		WHERE t.org_id = ? ORDER BY t.name_norm, t.id`), orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var userID string
		var t perch.TeamRef
		if err := rows.Scan(&userID, &t.ID, &t.Name); err != nil {
			return nil, err
		}
		if m := byID[userID]; m != nil {
			m.Teams = append(m.Teams, t)
		}
	}
	return members, rows.Err()
}

func scanMember(row interface{ Scan(...any) error }) (*perch.Member, error) {
	var m perch.Member
	var joined int64
	if err := row.Scan(&m.ID, &m.Name, &m.Email, &m.Role, &joined, &m.Disabled); err != nil {
		return nil, err
	}
	m.JoinedAt, m.Teams = fromMS(joined), []perch.TeamRef{}
	return &m, nil
}

// Member returns one member of an organisation with their teams, or
// ENOTFOUND when the user is not in it.
func (s *Store) Member(ctx context.Context, orgID, userID string) (*perch.Member, error) {
	m, err := scanMember(s.r.QueryRowContext(ctx, s.q(`SELECT `+memberColumns+` FROM users u WHERE u.org_id = ? AND u.id = ?`), orgID, userID))
	if err != nil {
		return nil, notFound(err, "Member")
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT t.id, t.name FROM team_members tm JOIN teams t ON t.id = tm.team_id
		WHERE tm.user_id = ? AND t.org_id = ? ORDER BY t.name_norm, t.id`), userID, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var t perch.TeamRef
		if err := rows.Scan(&t.ID, &t.Name); err != nil {
			return nil, err
		}
		m.Teams = append(m.Teams, t)
	}
	return m, rows.Err()
}

var errLastOwner = perch.Errorf(perch.ECONFLICT, "An organisation needs at least one owner: make someone else an owner first.")

// keepsAnOwner fails with ECONFLICT when userID is the only owner of orgID,
// so that removing or demoting them would leave it ownerless.
func (s *Store) keepsAnOwner(ctx context.Context, tx *sql.Tx, orgID, userID string) error {
	var others int
	err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM users WHERE org_id = ? AND org_role = 'owner' AND id <> ?`), orgID, userID).Scan(&others)
	if err != nil {
		return err
	}
	var role string
	if err := tx.QueryRowContext(ctx, s.q(`SELECT org_role FROM users WHERE id = ? AND org_id = ?`), userID, orgID).Scan(&role); err != nil {
		return notFound(err, "Member")
	}
	if role == perch.RoleOwner && others == 0 {
		return errLastOwner
	}
	return nil
}

// SetMemberRole changes a member's role. Demoting the last owner is ECONFLICT.
func (s *Store) SetMemberRole(ctx context.Context, orgID, userID, role string) (*perch.Member, error) {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if role != perch.RoleOwner {
			if err := s.keepsAnOwner(ctx, tx, orgID, userID); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET org_role = ?, updated_at = ? WHERE id = ? AND org_id = ?`),
			role, ms(s.now()), userID, orgID)
		return expectOne(res, err, "Member")
	})
	if err != nil {
		return nil, err
	}
	return s.Member(ctx, orgID, userID)
}

// RemoveMember takes a user out of an organisation: their team memberships
// there go, and they become the owner of a fresh organisation of their own
// (every user belongs to one). Removing the last owner is ECONFLICT, and so
// is removing a member the organisation's identity provider disabled or
// deleted: removal would give them an enabled account of their own, and
// only the provider (or a platform admin) may give access back.
func (s *Store) RemoveMember(ctx context.Context, orgID, userID string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var name string
		var bySCIM bool
		err := tx.QueryRowContext(ctx, s.q(`SELECT name, disabled_at IS NOT NULL AND disabled_by = ? FROM users WHERE id = ? AND org_id = ?`),
			DisabledBySCIM, userID, orgID).Scan(&name, &bySCIM)
		if err != nil {
			return notFound(err, "Member")
		}
		if bySCIM {
			return perch.Errorf(perch.ECONFLICT, "Your identity provider deprovisioned %s: the account stays in the organisation, disabled and without access, so that the provider can restore it. Manage them in the identity provider.", name)
		}
		if err := s.keepsAnOwner(ctx, tx, orgID, userID); err != nil {
			return err
		}
		now := s.now()
		newOrg, err := s.createOrg(ctx, tx, perch.OrgNameFor(name), now)
		if err != nil {
			return err
		}
		return s.moveUser(ctx, tx, userID, orgID, newOrg, perch.RoleOwner)
	})
}

// moveUser puts a user into another organisation with role, dropping their
// team memberships in the one they leave and what its identity provider
// kept of them (SCIM), with a deactivation or deletion of its making: the
// organisation no longer governs the account.
func (s *Store) moveUser(ctx context.Context, tx *sql.Tx, userID, fromOrg, toOrg, role string) error {
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM team_members WHERE user_id = ? AND team_id IN (SELECT id FROM teams WHERE org_id = ?)`),
		userID, fromOrg); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM scim_users WHERE user_id = ?`), userID); err != nil {
		return err
	}
	if err := s.enableUser(ctx, tx, userID, DisabledBySCIM, ms(s.now())); err != nil {
		return err
	}
	now := ms(s.now())
	res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET org_id = ?, org_role = ?, joined_at = ?, updated_at = ?, scim_deleted_at = NULL WHERE id = ?`),
		toOrg, role, now, now, userID)
	if err := expectOne(res, err, "User"); err != nil {
		return err
	}
	return s.seatsChanged(ctx, tx, fromOrg, toOrg)
}
