package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// orgStore is what the handlers of organisations, their members, teams and
// invitations need from storage.
type orgStore interface {
	AcceptInvitation(ctx context.Context, tokenHash string, user *perch.User) (*perch.Org, error)
	AddTeamMember(ctx context.Context, orgID, teamID, userID string) error
	CreateInvitation(ctx context.Context, orgID, inviterID, email, role, tokenHash, mailHash string) (*perch.Invitation, error)
	CreateTeam(ctx context.Context, orgID, name, description string) (*perch.Team, error)
	DeleteTeam(ctx context.Context, orgID, id string) error
	InvitationPreview(ctx context.Context, tokenHash string) (*perch.InvitationPreview, error)
	Invitations(ctx context.Context, orgID string) ([]*perch.Invitation, error)
	Member(ctx context.Context, orgID, userID string) (*perch.Member, error)
	Members(ctx context.Context, orgID string) ([]*perch.Member, error)
	Org(ctx context.Context, id string) (*perch.Org, error)
	RemoveMember(ctx context.Context, orgID, userID string) error
	RemoveTeamMember(ctx context.Context, orgID, teamID, userID string) error
	RenameOrg(ctx context.Context, orgID, name string) (*perch.Org, error)
	RevokeInvitation(ctx context.Context, orgID, id string) error
	SetMemberRole(ctx context.Context, orgID, userID, role string) (*perch.Member, error)
	Team(ctx context.Context, orgID, id string) (*perch.Team, error)
	Teams(ctx context.Context, orgID string) ([]*perch.Team, error)
	UpdateTeam(ctx context.Context, orgID, id string, upd perch.TeamUpdate) (*perch.Team, error)
}

var _ orgStore = (*store.Store)(nil)

func (s *Server) getOrg(w http.ResponseWriter, r *http.Request) error {
	org, err := s.orgDB.Org(r.Context(), principal(r).User.OrgID)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, org)
}

func (s *Server) updateOrg(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name *string `json:"name"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	orgID := principal(r).User.OrgID
	if in.Name == nil {
		return s.getOrg(w, r)
	}
	p := perch.Problems{}
	if perch.ValidateOrgName(p, *in.Name); len(p) > 0 {
		return p.Err()
	}
	before, err := s.orgDB.Org(r.Context(), orgID)
	if err != nil {
		return err
	}
	org, err := s.orgDB.RenameOrg(r.Context(), orgID, strings.TrimSpace(*in.Name))
	if err != nil {
		return err
	}
	if org.Name != before.Name {
		s.audit(r, perch.AuditEntry{Action: perch.AuditOrgUpdated, Target: perch.AuditTarget{Type: "org", ID: orgID},
			Changes: map[string]any{"name": map[string]any{"from": before.Name, "to": org.Name}}})
	}
	return respond(w, http.StatusOK, org)
}

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) error {
	members, err := s.orgDB.Members(r.Context(), principal(r).User.OrgID)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, members)
}

// updateMember changes a member's role (owners only for anything touching
// the owner role).
func (s *Server) updateMember(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Role string `json:"role"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	if !perch.ValidRole(in.Role) {
		return perch.Problems{"role": "must be owner, admin or member"}.Err()
	}
	actor := principal(r).User
	target, err := s.orgDB.Member(r.Context(), actor.OrgID, r.PathValue("userId"))
	if err != nil {
		return err
	}
	if err := perch.AuthorizeMemberChange(actor, target, in.Role); err != nil {
		return err
	}
	m, err := s.orgDB.SetMemberRole(r.Context(), actor.OrgID, target.ID, in.Role)
	if err != nil {
		return err
	}
	if err := s.roleChanged(r, actor.OrgID, target.ID, target.Email, target.Role, in.Role); err != nil {
		return err
	}
	return respond(w, http.StatusOK, m)
}

// roleChanged carries out what follows a member's role going from one to
// another, whether an owner did it in the dashboard or the organisation's
// identity provider through SCIM roles (which audit names as the actor):
// the webhook tokens they made are looked up afresh on every instance, the
// change is audited, and a former owner loses the sign-ins that single
// sign-on enforcement would have refused them.
func (s *Server) roleChanged(r *http.Request, orgID, userID, email, from, to string) error {
	s.tokensChanged(r.Context()) // the tokens they made may stand or fall with their role
	if from != to {
		s.audit(r, perch.AuditEntry{Action: perch.AuditMemberRoleChanged, Target: userTarget(userID),
			Changes: map[string]any{"email": email, "role": map[string]any{"from": from, "to": to}}})
	}
	if from == perch.RoleOwner && to != perch.RoleOwner { // no longer break-glass
		return s.ssoBinds(r, orgID, userID)
	}
	return nil
}

// removeMember takes someone out of the organisation, or lets a member
// leave. They get a fresh organisation of their own.
func (s *Server) removeMember(w http.ResponseWriter, r *http.Request) error {
	actor := principal(r).User
	target, err := s.orgDB.Member(r.Context(), actor.OrgID, r.PathValue("userId"))
	if err != nil {
		return err
	}
	if err := perch.AuthorizeMemberChange(actor, target, ""); err != nil {
		return err
	}
	if err := s.orgDB.RemoveMember(r.Context(), actor.OrgID, target.ID); err != nil {
		return err
	}
	s.grantsChanged(r.Context(), target.ID)
	action := perch.AuditMemberRemoved
	if target.ID == actor.ID {
		action = perch.AuditMemberLeft
	}
	s.audit(r, perch.AuditEntry{Action: action, Target: userTarget(target.ID), Changes: map[string]any{"email": target.Email, "role": target.Role}})
	return noContent(w)
}
