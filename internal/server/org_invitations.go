package server

import (
	"net/http"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/mail"
)

// invitationPath is the dashboard page an invitation link opens.
const invitationPath = "/invitations/accept"

func (s *Server) listInvitations(w http.ResponseWriter, r *http.Request) error {
	list, err := s.orgDB.Invitations(r.Context(), principal(r).User.OrgID)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, list)
}

// createInvitation records an invitation and mails its link. The answer
// carries a link too (url), so an admin can pass it on by hand when mail
// is not set up; only the invited address can accept either. They are two
// links: the one answered here joins the organisation, but only the mailed
// one, which nobody but the address's owner has seen, proves the mailbox.
func (s *Server) createInvitation(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Email string `json:"email"`
		Role  string `json:"role"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	in.Email = strings.TrimSpace(in.Email)
	if in.Role == "" {
		in.Role = perch.RoleMember
	}
	p := perch.Problems{}
	perch.ValidateEmail(p, in.Email)
	if !perch.ValidRole(in.Role) {
		p.Add("role", "must be owner, admin or member")
	}
	if err := p.Err(); err != nil {
		return err
	}
	actor := principal(r).User
	if err := perch.AuthorizeInvite(actor, in.Role); err != nil {
		return err
	}
	shown, shownHash := auth.NewToken(perch.InvitationTokenPrefix)
	mailed, mailedHash := auth.NewToken(perch.InvitationTokenPrefix)
	inv, err := s.orgDB.CreateInvitation(r.Context(), actor.OrgID, actor.ID, in.Email, in.Role, shownHash, mailedHash)
	if err != nil {
		return err
	}
	org, err := s.orgDB.Org(r.Context(), actor.OrgID)
	if err != nil {
		return err
	}
	link := s.link(invitationPath, shown)
	s.sendMail(r.Context(), mail.Invitation(inv.Email, actor.Name, org.Name, inv.Role, s.link(invitationPath, mailed)))
	s.audit(r, perch.AuditEntry{Action: perch.AuditInvitationCreated, Target: invitationTarget(inv.ID),
		Changes: map[string]any{"email": inv.Email, "role": inv.Role}})
	return respond(w, http.StatusCreated, struct {
		*perch.Invitation
		URL string `json:"url"`
	}{inv, link})
}

func (s *Server) revokeInvitation(w http.ResponseWriter, r *http.Request) error {
	if err := s.orgDB.RevokeInvitation(r.Context(), principal(r).User.OrgID, r.PathValue("id")); err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditInvitationRevoked, Target: invitationTarget(r.PathValue("id"))})
	return noContent(w)
}

func invitationTarget(id string) perch.AuditTarget {
	return perch.AuditTarget{Type: "invitation", ID: id}
}

// checkInvitation says what a live invitation link is for (the
// organisation, who invited, the role and the address) without spending it,
// so that the page the link opens can name them and the sign-up form can
// fill in the address. The token travels in the body, as for the reset
// link's check. The link is the credential: an unknown, used, revoked or
// expired one is the same 400, which names nothing.
func (s *Server) checkInvitation(w http.ResponseWriter, r *http.Request) error {
	token, err := decodeLinkToken(r)
	if err != nil {
		return err
	}
	p, err := s.orgDB.InvitationPreview(r.Context(), auth.HashToken(token))
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, p)
}

// acceptInvitation moves the signed-in user into the inviting organisation.
func (s *Server) acceptInvitation(w http.ResponseWriter, r *http.Request) error {
	token, err := decodeLinkToken(r)
	if err != nil {
		return err
	}
	u := principal(r).User
	org, err := s.orgDB.AcceptInvitation(r.Context(), auth.HashToken(token), u)
	if err != nil {
		return err
	}
	s.grantsChanged(r.Context(), u.ID)
	s.syncListedAdmin(r, u.ID) // the mailed link proves the mailbox
	s.audit(r, perch.AuditEntry{Action: perch.AuditInvitationAccepted, Target: userTarget(u.ID), OrgID: org.ID,
		Changes: map[string]any{"from_org_id": u.OrgID}})
	// Into an organisation that signs in with SAML alone, the sign-ins
	// made another way (this one too) end here.
	if err := s.ssoBinds(r, org.ID, u.ID); err != nil {
		return err
	}
	return respond(w, http.StatusOK, org)
}
