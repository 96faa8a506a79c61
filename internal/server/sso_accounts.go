package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// Who an organisation's identity provider may speak for (docs/DESIGN.md,
// "Who is verified, who is admin"): its SAML sign-ins and just-in-time
// accounts, and the break-glass rule of enforced single sign-on.

// An organisation's identity provider (its SAML and its SCIM token) speaks
// only for the organisation's own members, never for a platform admin, and
// creates accounts only for addresses in the organisation's verified
// domains unless the operator allows any (PERCH_SSO_ANY_DOMAIN); what it
// asserts never proves a mailbox.

// idpMayManage refuses to let an identity provider sign in or change u
// when u is a platform admin: the organisation that runs the provider does
// not own the server.
func (s *Server) idpMayManage(u *perch.User) error {
	if s.isAdmin(u) {
		return perch.Errorf(perch.EFORBIDDEN, "%s is a platform admin of this server, so an organisation's identity provider cannot sign it in or change it: it signs in with its own password or provider.", u.Email)
	}
	return nil
}

// idpMayCreate refuses to let the identity provider of orgID make an
// account for email, or move an account to it, unless the address is in
// one of the organisation's verified domains (compared exactly: a
// subdomain is a domain of its own) or the operator allows any domain.
func (s *Server) idpMayCreate(ctx context.Context, orgID, email string) error {
	if s.opts.SSO.AnyDomain {
		return nil
	}
	ok, err := s.ssoDB.DomainVerified(ctx, orgID, perch.EmailDomain(email))
	if err != nil || ok {
		return err
	}
	return perch.Errorf(perch.EFORBIDDEN, "%s is not in one of the organisation's verified domains, so its identity provider cannot make an account for it: an owner verifies the domain on the organisation's single sign-on page, or invites the person.", email)
}

// samlUser is the account an accepted assertion signs in: the member of
// the organisation with the address, or, with jit_provisioning and an
// address the organisation's identity provider may create, a new one with
// the default role. An account of another organisation, or a platform
// admin, is refused.
func (s *Server) samlUser(r *http.Request, cfg *store.SAMLConfig, id *samlIdentity) (*perch.User, error) {
	u, _, err := s.ssoDB.UserCredentials(r.Context(), id.Email)
	switch perch.ErrorCode(err) {
	case "":
		if u.OrgID != cfg.OrgID {
			return nil, refuse("The account %s belongs to another organisation on this server, so this organisation's single sign-on cannot sign it in. Sign in with that account's own method.", u.Email)
		}
		if err := s.idpMayManage(u); err != nil {
			return nil, err
		}
		return u, nil
	case perch.ENOTFOUND:
	default:
		return nil, err
	}
	if !cfg.JITProvisioning {
		return nil, refuse("There is no account for %s in this organisation: ask an owner to invite you.", id.Email)
	}
	if err := s.idpMayCreate(r.Context(), cfg.OrgID, id.Email); err != nil {
		return nil, err
	}
	name, p := id.Name, perch.Problems{}
	if perch.ValidateName(p, name); len(p) > 0 {
		name, _, _ = strings.Cut(id.Email, "@")
	}
	u, err = s.ssoDB.CreateSSOUser(r.Context(), cfg.OrgID, id.Email, name, cfg.DefaultRole)
	if err != nil {
		if perch.ErrorCode(err) == perch.ECONFLICT {
			return nil, refuse("%s", perch.ErrorMessage(err))
		}
		return nil, err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditSAMLProvisioned, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
		Changes: map[string]any{"org_role": u.OrgRole, "name": u.Name}})
	return u, nil
}

// ssoRefusal refuses a sign-in by method ("password", an OAuth provider)
// to a member of an organisation that signs in with SAML alone (enforce),
// except its owners, who keep every way in should the identity provider
// fail (break-glass).
func (s *Server) ssoRefusal(ctx context.Context, u *perch.User, method string) error {
	if u.OrgRole == perch.RoleOwner {
		return nil
	}
	enforced, err := s.ssoDB.SSOEnforced(ctx, u.OrgID)
	if err != nil || !enforced {
		return err
	}
	return perch.Errorf(perch.EFORBIDDEN,
		"Your organisation signs in with single sign-on, not with %s: choose “Sign in with SSO” on the sign-in page.", method)
}

// ssoBinds ends what predates orgID's enforced single sign-on for the
// members it binds (userID alone, when not ""): their sign-ins end and
// their API tokens are switched off, and the WebSockets those opened close
// on every instance. Called when enforcement starts, and when someone
// becomes bound by it (joins the organisation, or stops being an owner).
func (s *Server) ssoBinds(r *http.Request, orgID, userID string) error {
	ended, err := s.ssoDB.EndSignInsBoundBySSO(r.Context(), orgID, userID)
	if err != nil {
		return err
	}
	for _, e := range ended {
		s.revoked(r.Context(), e.UserID, e.Sessions, e.APITokens)
		s.audit(r, perch.AuditEntry{Action: perch.AuditSSOSignInsEnded, Target: userTarget(e.UserID), OrgID: orgID,
			Changes: map[string]any{"sessions_ended": len(e.Sessions), "api_credentials_switched_off": len(e.APITokens)}})
	}
	return nil
}
