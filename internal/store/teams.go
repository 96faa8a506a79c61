package store

import (
	"context"
	"database/sql"
	"strings"

	"github.com/perch-dev/perch"
)

const teamColumns = `t.id, t.org_id, t.name, t.description, t.created_at,
	(SELECT COUNT(*) FROM team_members tm WHERE tm.team_id = t.id)`

func scanTeam(row interface{ Scan(...any) error }) (*perch.Team, error) {
	var t perch.Team
	var created int64
	if err := row.Scan(&t.ID, &t.OrgID, &t.Name, &t.Description, &created, &t.MemberCount); err != nil {
		return nil, err
	}
	t.CreatedAt = fromMS(created)
	return &t, nil
}

var errTeamNameTaken = perch.Errorf(perch.ECONFLICT, "The organisation already has a team of that name.")

// Teams lists an organisation's teams by name.
func (s *Store) Teams(ctx context.Context, orgID string) ([]*perch.Team, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+teamColumns+` FROM teams t WHERE t.org_id = ? ORDER BY t.name_norm, t.id`), orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	teams := []*perch.Team{}
	for rows.Next() {
		t, err := scanTeam(rows)
		if err != nil {
			return nil, err
		}
		teams = append(teams, t)
	}
	return teams, rows.Err()
}

// Team returns one team of orgID with its members, or ENOTFOUND.
func (s *Store) Team(ctx context.Context, orgID, id string) (*perch.Team, error) {
	t, err := scanTeam(s.r.QueryRowContext(ctx, s.q(`SELECT `+teamColumns+` FROM teams t WHERE t.id = ? AND t.org_id = ?`), id, orgID))
	if err != nil {
		return nil, notFound(err, "Team")
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT u.id, u.name, u.email, tm.added_at FROM team_members tm JOIN users u ON u.id = tm.user_id
		WHERE tm.team_id = ? ORDER BY u.name, u.id`), id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	t.Members = []perch.TeamMember{}
	for rows.Next() {
		var m perch.TeamMember
		var added int64
		if err := rows.Scan(&m.ID, &m.Name, &m.Email, &added); err != nil {
			return nil, err
		}
		m.AddedAt = fromMS(added)
		t.Members = append(t.Members, m)
	}
	return t, rows.Err()
}

// CreateTeam adds a team to orgID; a name already used there (ignoring case)
// is ECONFLICT.
func (s *Store) CreateTeam(ctx context.Context, orgID, name, description string) (*perch.Team, error) {
	name, description = strings.TrimSpace(name), strings.TrimSpace(description)
	t := &perch.Team{ID: newID(), OrgID: orgID, Name: name, Description: description, CreatedAt: s.now(), Members: []perch.TeamMember{}}
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO teams (id, org_id, name, name_norm, description, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		t.ID, orgID, name, strings.ToLower(name), description, ms(t.CreatedAt), ms(t.CreatedAt))
	if isUniqueViolation(err) {
		return nil, errTeamNameTaken
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// UpdateTeam changes a team's name or description.
func (s *Store) UpdateTeam(ctx context.Context, orgID, id string, upd perch.TeamUpdate) (*perch.Team, error) {
	var name, norm, desc *string
	if upd.Name != nil {
		n := strings.TrimSpace(*upd.Name)
		l := strings.ToLower(n)
		name, norm = &n, &l
	}
	if upd.Description != nil {
		d := strings.TrimSpace(*upd.Description)
		desc = &d
	}
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE teams SET name = COALESCE(?, name), name_norm = COALESCE(?, name_norm),
		description = COALESCE(?, description), updated_at = ? WHERE id = ? AND org_id = ?`), name, norm, desc, ms(s.now()), id, orgID)
	if isUniqueViolation(err) {
		return nil, errTeamNameTaken
	}
	if err := expectOne(res, err, "Team"); err != nil {
		return nil, err
	}
	return s.Team(ctx, orgID, id)
}

// DeleteTeam deletes a team of orgID and its memberships.
func (s *Store) DeleteTeam(ctx context.Context, orgID, id string) error {
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM teams WHERE id = ? AND org_id = ?`), id, orgID)
	return expectOne(res, err, "Team")
}

// AddTeamMember puts a member of orgID into one of its teams; adding someone
// twice is harmless. A team or user outside orgID is ENOTFOUND.
func (s *Store) AddTeamMember(ctx context.Context, orgID, teamID, userID string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		err := tx.QueryRowContext(ctx, s.q(`SELECT (SELECT COUNT(*) FROM teams WHERE id = ? AND org_id = ?) +
			(SELECT COUNT(*) FROM users WHERE id = ? AND org_id = ?)`), teamID, orgID, userID, orgID).Scan(&n)
		if err != nil {
			return err
		}
		if n != 2 {
			return perch.Errorf(perch.ENOTFOUND, "No such team, or the user is not a member of this organisation.")
		}
		return s.addTeamMember(ctx, tx, teamID, userID, ms(s.now()))
	})
}

// addTeamMember puts userID into teamID in tx (once: a second time is
// harmless) and marks the team changed when they were not in it yet.
func (s *Store) addTeamMember(ctx context.Context, tx *sql.Tx, teamID, userID string, now int64) error {
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO team_members (team_id, user_id, added_at) VALUES (?, ?, ?)
		ON CONFLICT (team_id, user_id) DO NOTHING`), teamID, userID, now)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	return s.teamChanged(ctx, tx, teamID, now)
}

// removeTeamMember takes userID out of teamID in tx, reporting whether they
// were in it, and marks the team changed when they were.
func (s *Store) removeTeamMember(ctx context.Context, tx *sql.Tx, teamID, userID string, now int64) (bool, error) {
	res, err := tx.ExecContext(ctx, s.q(`DELETE FROM team_members WHERE team_id = ? AND user_id = ?`), teamID, userID)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	return true, s.teamChanged(ctx, tx, teamID, now)
}

// teamChanged records now as when teamID last changed.
func (s *Store) teamChanged(ctx context.Context, tx *sql.Tx, teamID string, now int64) error {
	_, err := tx.ExecContext(ctx, s.q(`UPDATE teams SET updated_at = ? WHERE id = ?`), now, teamID)
	return err
}

// RemoveTeamMember takes a user out of a team of orgID, or returns ENOTFOUND.
func (s *Store) RemoveTeamMember(ctx context.Context, orgID, teamID, userID string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM teams WHERE id = ? AND org_id = ?`), teamID, orgID).Scan(&n); err != nil {
			return err
		}
		removed := false
		if n == 1 {
			var err error
			if removed, err = s.removeTeamMember(ctx, tx, teamID, userID, ms(s.now())); err != nil {
				return err
			}
		}
		if !removed {
			return perch.Errorf(perch.ENOTFOUND, "Team member not found.")
		}
		return nil
	})
}

// UserTeamIDs lists the teams a user belongs to.
func (s *Store) UserTeamIDs(ctx context.Context, userID string) ([]string, error) {
	ids, err := column[string](s.r.QueryContext(ctx, s.q(`SELECT team_id FROM team_members WHERE user_id = ? ORDER BY team_id`), userID))
	if ids == nil && err == nil {
		ids = []string{}
	}
	return ids, err
}
