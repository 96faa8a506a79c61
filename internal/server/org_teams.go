package server

import (
	"net/http"

	"github.com/perch-dev/perch"
)

type teamInput struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
}

func (s *Server) listTeams(w http.ResponseWriter, r *http.Request) error {
	teams, err := s.orgDB.Teams(r.Context(), principal(r).User.OrgID)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, teams)
}

func (s *Server) getTeam(w http.ResponseWriter, r *http.Request) error {
	t, err := s.orgDB.Team(r.Context(), principal(r).User.OrgID, r.PathValue("id"))
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, t)
}

func (s *Server) createTeam(w http.ResponseWriter, r *http.Request) error {
	var in teamInput
	if err := decode(r, &in); err != nil {
		return err
	}
	name, desc := deref(in.Name), deref(in.Description)
	p := perch.Problems{}
	if perch.ValidateTeam(p, name, desc); len(p) > 0 {
		return p.Err()
	}
	t, err := s.orgDB.CreateTeam(r.Context(), principal(r).User.OrgID, name, desc)
	if err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditTeamCreated, Target: teamTarget(t.ID), Changes: map[string]any{"name": t.Name}})
	return respond(w, http.StatusCreated, t)
}

func (s *Server) updateTeam(w http.ResponseWriter, r *http.Request) error {
	var in teamInput
	if err := decode(r, &in); err != nil {
		return err
	}
	orgID := principal(r).User.OrgID
	current, err := s.orgDB.Team(r.Context(), orgID, r.PathValue("id"))
	if err != nil {
		return err
	}
	name, desc := current.Name, current.Description
	if in.Name != nil {
		name = *in.Name
	}
	if in.Description != nil {
		desc = *in.Description
	}
	p := perch.Problems{}
	if perch.ValidateTeam(p, name, desc); len(p) > 0 {
		return p.Err()
	}
	t, err := s.orgDB.UpdateTeam(r.Context(), orgID, current.ID, perch.TeamUpdate{Name: in.Name, Description: in.Description})
	if err != nil {
		return err
	}
	changes := map[string]any{}
	if t.Name != current.Name {
		changes["name"] = map[string]any{"from": current.Name, "to": t.Name}
	}
	if t.Description != current.Description {
		changes["description"] = map[string]any{"from": current.Description, "to": t.Description}
	}
	if len(changes) > 0 {
		s.audit(r, perch.AuditEntry{Action: perch.AuditTeamUpdated, Target: teamTarget(t.ID), Changes: changes})
	}
	return respond(w, http.StatusOK, t)
}

func (s *Server) deleteTeam(w http.ResponseWriter, r *http.Request) error {
	orgID := principal(r).User.OrgID
	team, err := s.orgDB.Team(r.Context(), orgID, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.orgDB.DeleteTeam(r.Context(), orgID, team.ID); err != nil {
		return err
	}
	memberIDs := make([]string, len(team.Members))
	for i, m := range team.Members {
		memberIDs[i] = m.ID
	}
	s.teamDeleted(r, team.ID, team.Name, memberIDs)
	return noContent(w)
}

// addTeamMember puts a member of the organisation into a team; it answers
// 204 whether or not they were in it already.
func (s *Server) addTeamMember(w http.ResponseWriter, r *http.Request) error {
	if err := s.orgDB.AddTeamMember(r.Context(), principal(r).User.OrgID, r.PathValue("id"), r.PathValue("userId")); err != nil {
		return err
	}
	s.teamMembersChanged(r, r.PathValue("id"), []string{r.PathValue("userId")}, nil)
	return noContent(w)
}

func (s *Server) removeTeamMember(w http.ResponseWriter, r *http.Request) error {
	if err := s.orgDB.RemoveTeamMember(r.Context(), principal(r).User.OrgID, r.PathValue("id"), r.PathValue("userId")); err != nil {
		return err
	}
	s.teamMembersChanged(r, r.PathValue("id"), nil, []string{r.PathValue("userId")})
	return noContent(w)
}

// teamMembersChanged carries out what follows users joining or leaving
// teamID, whether an owner did it in the dashboard or the organisation's
// identity provider through SCIM (which audit names as the actor): each
// user's open WebSockets move to their new teams at once, on every
// instance, the webhook tokens' cache drops, and each change is audited.
func (s *Server) teamMembersChanged(r *http.Request, teamID string, added, removed []string) {
	for _, id := range added {
		s.grantsChanged(r.Context(), id)
		s.audit(r, perch.AuditEntry{Action: perch.AuditTeamMemberAdded, Target: teamTarget(teamID), Changes: map[string]any{"user_id": id}})
	}
	for _, id := range removed {
		s.grantsChanged(r.Context(), id)
		s.audit(r, perch.AuditEntry{Action: perch.AuditTeamMemberRemoved, Target: teamTarget(teamID), Changes: map[string]any{"user_id": id}})
	}
}

// teamDeleted carries out what follows deleting a team, by either path:
// the team's webhook tokens went with it, and its members receive by their
// remaining teams from now on.
func (s *Server) teamDeleted(r *http.Request, teamID, name string, memberIDs []string) {
	s.tokensChanged(r.Context())
	for _, id := range memberIDs {
		s.grantsChanged(r.Context(), id)
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditTeamDeleted, Target: teamTarget(teamID),
		Changes: map[string]any{"name": name, "members": len(memberIDs)}})
}

func teamTarget(id string) perch.AuditTarget { return perch.AuditTarget{Type: "team", ID: id} }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
