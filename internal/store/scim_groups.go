package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// SCIMGroup is a team of an organisation as its identity provider sees it
// through SCIM: its name, the provider's id for it, and its members.
type SCIMGroup struct {
	ID         string
	OrgID      string
	Name       string
	ExternalID string
	// Members are in the order they joined the team (by id within a millisecond).
	Members   []SCIMGroupMember
	CreatedAt time.Time
	UpdatedAt time.Time // when its name or members last changed
}

// SCIMGroupMember is a member of a team: a user of its organisation.
type SCIMGroupMember struct {
	ID    string
	Name  string
	Email string
}

// MemberIDs are the ids of g's members.
func (g *SCIMGroup) MemberIDs() []string {
	ids := make([]string, len(g.Members))
	for i, m := range g.Members {
		ids[i] = m.ID
	}
	return ids
}

// SCIMGroupWrite is what a SCIM create, replace or patch of a group sets:
// the team's name, the provider's id, and every member (user ids).
type SCIMGroupWrite struct {
	Name       string
	ExternalID string
	Members    []string
}

// SCIMGroupChange is a SCIM update of a group: the team before and after,
// and who joined and who left it.
type SCIMGroupChange struct {
	Before, After  *SCIMGroup
	Added, Removed []string
}

// SCIMGroupField names what a SCIM filter of groups compares.
type SCIMGroupField int

const (
	SCIMGroupName       SCIMGroupField = iota // displayName: the team's name, without regard to case
	SCIMGroupExternalID                       // externalId, exactly
)

// SCIMGroupCondition is one `field eq value` of a filter of groups.
type SCIMGroupCondition struct {
	Field SCIMGroupField
	Value string
}

const scimGroupColumns = `t.id, t.org_id, t.name, t.external_id, t.created_at, t.updated_at`

func scanSCIMGroup(row interface{ Scan(...any) error }) (*SCIMGroup, error) {
	var g SCIMGroup
	var created, updated int64
	if err := row.Scan(&g.ID, &g.OrgID, &g.Name, &g.ExternalID, &created, &updated); err != nil {
		return nil, err
	}
	g.CreatedAt, g.UpdatedAt = fromMS(created), fromMS(max(created, updated))
	return &g, nil
}

// errGroupNameTaken is the uniqueness conflict of a SCIM group's name;
// Fields names the attribute, which tells the caller it is one.
var errGroupNameTaken = errSCIMTaken("displayName", "The organisation already has a team of that name.")

// SCIMGroups answers the teams of orgID that meet every condition, with
// their members, in the order they were made, skipping offset and
// answering at most limit, with how many meet them in all. (Members come
// even when the caller will not show them: a group's version is of them.)
func (s *Store) SCIMGroups(ctx context.Context, orgID string, conds []SCIMGroupCondition, offset, limit int) ([]*SCIMGroup, int, error) {
	where, args := ` WHERE t.org_id = ?`, []any{orgID}
	for _, c := range conds {
		if c.Field == SCIMGroupName {
			where += ` AND t.name_norm = ?`
			args = append(args, strings.ToLower(strings.TrimSpace(c.Value)))
		} else {
			where += ` AND t.external_id = ?`
			args = append(args, c.Value)
		}
	}
	var total int
	if err := s.r.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM teams t`+where), args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	out := []*SCIMGroup{}
	if limit == 0 || offset >= total {
		return out, total, nil
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+scimGroupColumns+` FROM teams t`+where+` ORDER BY t.created_at, t.id LIMIT ? OFFSET ?`),
		append(args, limit, offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		g, err := scanSCIMGroup(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if err := s.groupMembers(ctx, s.r, out); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// SCIMGroup answers the team id of orgID with its members, or ENOTFOUND
// (also when the team is another organisation's).
func (s *Store) SCIMGroup(ctx context.Context, orgID, id string) (*SCIMGroup, error) {
	return s.scimGroup(ctx, s.r, orgID, id)
}

func (s *Store) scimGroup(ctx context.Context, db querier, orgID, id string) (*SCIMGroup, error) {
	g, err := scanSCIMGroup(db.QueryRowContext(ctx, s.q(`SELECT `+scimGroupColumns+` FROM teams t WHERE t.id = ? AND t.org_id = ?`), id, orgID))
	if err != nil {
		return nil, notFound(err, "Group")
	}
	if err := s.groupMembers(ctx, db, []*SCIMGroup{g}); err != nil {
		return nil, err
	}
	return g, nil
}

// groupMembers fills in the members of groups, in the order they joined.
func (s *Store) groupMembers(ctx context.Context, db querier, groups []*SCIMGroup) error {
	byID := make(map[string]*SCIMGroup, len(groups))
	args := make([]any, len(groups))
	for i, g := range groups {
		g.Members, byID[g.ID], args[i] = []SCIMGroupMember{}, g, g.ID
	}
	if len(groups) == 0 {
		return nil
	}
	// A member the provider deleted (scim_deleted_at) is not SCIM's to see,
	// nor to remove: they keep their teams for a restore.
	rows, err := db.QueryContext(ctx, s.q(`SELECT tm.team_id, u.id, u.name, u.email FROM team_members tm JOIN users u ON u.id = tm.user_id
		WHERE tm.team_id IN (`+placeholders(len(groups))+`) AND u.scim_deleted_at IS NULL ORDER BY tm.added_at, u.id`), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var team string
		var m SCIMGroupMember
		if err := rows.Scan(&team, &m.ID, &m.Name, &m.Email); err != nil {
			return err
		}
		byID[team].Members = append(byID[team].Members, m)
	}
	return rows.Err()
}

// placeholders is n question marks separated by commas.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// checkMembers fails, naming the first, when any of ids is not a user of
// orgID that SCIM sees: a group holds only the organisation's own people,
// and a member the provider deleted is unknown to it.
func (s *Store) checkMembers(ctx context.Context, tx *sql.Tx, orgID string, ids []string) error {
	const chunk = 500 // well under either database's limit of parameters
	for part := range slices.Chunk(ids, chunk) {
		args := append([]any{orgID}, anys(part)...)
		found, err := column[string](tx.QueryContext(ctx, s.q(`SELECT id FROM users WHERE org_id = ? AND scim_deleted_at IS NULL AND id IN (`+placeholders(len(part))+`)`), args...))
		if err != nil {
			return err
		}
		for _, id := range part {
			if !slices.Contains(found, id) {
				return &perch.Error{Code: perch.EBADREQUEST, Message: "A member is not a user of this organisation.",
					Fields: map[string]string{"members": fmt.Sprintf("hold %q, who is not a user of this organisation", id)}}
			}
		}
	}
	return nil
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// CreateSCIMGroup makes a team in orgID with the name, the provider's id
// and the members of w, all at once: a name the organisation already has
// (without regard to case) is ECONFLICT naming displayName, a member who
// is not a user of orgID is EBADREQUEST naming members, and then nothing
// is made.
func (s *Store) CreateSCIMGroup(ctx context.Context, orgID string, w SCIMGroupWrite) (*SCIMGroup, error) {
	id := newID()
	var out *SCIMGroup
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.checkMembers(ctx, tx, orgID, w.Members); err != nil {
			return err
		}
		now := ms(s.now())
		name := strings.TrimSpace(w.Name)
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO teams (id, org_id, name, name_norm, description, external_id, created_at, updated_at)
			VALUES (?, ?, ?, ?, '', ?, ?, ?)`), id, orgID, name, strings.ToLower(name), w.ExternalID, now, now)
		if isUniqueViolation(err) {
			return errGroupNameTaken
		}
		if err != nil {
			return err
		}
		for _, m := range w.Members {
			if err := s.addTeamMember(ctx, tx, id, m, now); err != nil {
				return err
			}
		}
		out, err = s.scimGroup(ctx, tx, orgID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateSCIMGroup changes the team id of orgID to what change makes of it
// (a replace or a patch, run in the transaction so that two at once cannot
// lose one): its name, the provider's id, and its members, of whom those
// not in it join and those not listed leave. Errors as for CreateSCIMGroup.
func (s *Store) UpdateSCIMGroup(ctx context.Context, orgID, id string, change func(*SCIMGroup) (SCIMGroupWrite, error)) (*SCIMGroupChange, error) {
	c := &SCIMGroupChange{}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if s.dialect == Postgres {
			if _, err := tx.ExecContext(ctx, `SELECT 1 FROM teams WHERE id = $1 AND org_id = $2 FOR UPDATE`, id, orgID); err != nil {
				return err
			}
		}
		before, err := s.scimGroup(ctx, tx, orgID, id)
		if err != nil {
			return err
		}
		c.Before = before
		w, err := change(before)
		if err != nil {
			return err
		}
		current := before.MemberIDs()
		for _, m := range w.Members {
			if !slices.Contains(current, m) && !slices.Contains(c.Added, m) {
				c.Added = append(c.Added, m)
			}
		}
		for _, m := range current {
			if !slices.Contains(w.Members, m) {
				c.Removed = append(c.Removed, m)
			}
		}
		if err := s.checkMembers(ctx, tx, orgID, c.Added); err != nil {
			return err
		}
		now := ms(s.now())
		name := strings.TrimSpace(w.Name)
		if name != before.Name || w.ExternalID != before.ExternalID {
			_, err := tx.ExecContext(ctx, s.q(`UPDATE teams SET name = ?, name_norm = ?, external_id = ?, updated_at = ? WHERE id = ?`),
				name, strings.ToLower(name), w.ExternalID, now, id)
			if isUniqueViolation(err) {
				return errGroupNameTaken
			}
			if err != nil {
				return err
			}
		}
		for _, m := range c.Added {
			if err := s.addTeamMember(ctx, tx, id, m, now); err != nil {
				return err
			}
		}
		for _, m := range c.Removed {
			if _, err := s.removeTeamMember(ctx, tx, id, m, now); err != nil {
				return err
			}
		}
		c.After, err = s.scimGroup(ctx, tx, orgID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}
