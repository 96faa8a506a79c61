package server

import (
	"net/http"
	"net/url"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
)

func (s *Server) listWebhookTokens(w http.ResponseWriter, r *http.Request) error {
	list, err := s.tokenDB.WebhookTokens(r.Context(), principal(r).User.ID)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, list)
}

// createWebhookToken answers with the raw token and the full receiver URL,
// the only time either is shown.
func (s *Server) createWebhookToken(w http.ResponseWriter, r *http.Request) error {
	if err := signedInToMint(r, "webhook tokens"); err != nil {
		return err
	}
	var in struct {
		Label  string `json:"label"`
		Sender string `json:"sender"`
		Scope  string `json:"scope"`
		TeamID string `json:"team_id"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	label, err := perch.ValidateTokenLabel(in.Label)
	if err != nil {
		return err
	}
	if in.Scope == "" {
		in.Scope = perch.ScopeUser
	}
	p := perch.Problems{}
	if !perch.ValidSender(in.Sender) {
		p.Add("sender", "must be incidents, code-host, monitoring or inbound")
	}
	switch in.Scope {
	case perch.ScopeUser, perch.ScopeOrg:
	case perch.ScopeTeam:
		if in.TeamID == "" {
			p.Add("team_id", "is required for a team token")
		}
	default:
		p.Add("scope", "must be user, team or org")
	}
	if err := p.Err(); err != nil {
		return err
	}
	u := principal(r).User
	t := &perch.WebhookToken{UserID: u.ID, OrgID: u.OrgID, Label: label, Sender: in.Sender, Scope: in.Scope}
	if err := s.authorizeWebhookScope(r, u, in.Scope, in.TeamID); err != nil {
		return err
	}
	if in.Scope == perch.ScopeTeam {
		t.TeamID = &in.TeamID
	}
	raw, hash := auth.NewToken(perch.WebhookTokenPrefix)
	t.TokenPrefix = auth.DisplayPrefix(raw)
	created, err := s.tokenDB.CreateWebhookToken(r.Context(), t, hash)
	if err != nil {
		return err
	}
	changes := map[string]any{"label": created.Label, "sender": created.Sender, "scope": created.Scope, "token_prefix": created.TokenPrefix}
	if created.TeamID != nil {
		changes["team_id"] = *created.TeamID
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditWebhookTokenCreated, Target: perch.AuditTarget{Type: "webhook_token", ID: created.ID}, Changes: changes})
	return respond(w, http.StatusCreated, map[string]any{
		"token":     created,
		"raw_token": raw,
		"url":       s.opts.BaseURL + "/webhooks/" + in.Sender + "?token=" + url.QueryEscape(raw),
	})
}

// authorizeWebhookScope: organisation tokens need an owner or admin; team
// tokens a member of the team or an owner or admin of the organisation.
func (s *Server) authorizeWebhookScope(r *http.Request, u *perch.User, scope, teamID string) error {
	switch scope {
	case perch.ScopeOrg:
		if !u.IsOrgAdmin() {
			return perch.Errorf(perch.EFORBIDDEN, "Only owners and admins may make organisation-wide webhook tokens.")
		}
	case perch.ScopeTeam:
		team, err := s.tokenDB.Team(r.Context(), u.OrgID, teamID)
		if err != nil {
			return err
		}
		if u.IsOrgAdmin() {
			return nil
		}
		for _, m := range team.Members {
			if m.ID == u.ID {
				return nil
			}
		}
		return perch.Errorf(perch.EFORBIDDEN, "Only members of the team, or owners and admins, may make its webhook tokens.")
	}
	return nil
}

func (s *Server) deleteWebhookToken(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.tokenDB.DeleteWebhookToken(r.Context(), principal(r).User.ID, id); err != nil {
		return err
	}
	s.tokensChanged(r.Context())
	s.audit(r, perch.AuditEntry{Action: perch.AuditWebhookTokenDeleted, Target: perch.AuditTarget{Type: "webhook_token", ID: id}})
	return noContent(w)
}
