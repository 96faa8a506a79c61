package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/mail"
)

// Dashboard pages the account links open.
const (
	verifyEmailPath   = "/verify-email"
	resetPasswordPath = "/reset-password"
)

// mailEmailToken makes a single-use link of kind for u, bound to the address
// it goes to, and mails it there.
func (s *Server) mailEmailToken(ctx context.Context, u *perch.User, kind, to string) error {
	raw, hash := auth.NewToken(perch.EmailTokenPrefix)
	ttl, path := perch.VerifyEmailTTL, verifyEmailPath
	if kind == perch.EmailPasswordReset {
		ttl, path = perch.PasswordResetTTL, resetPasswordPath
	}
	if err := s.accountDB.CreateEmailToken(ctx, u.ID, kind, to, hash, s.now().Add(ttl)); err != nil {
		return err
	}
	link := s.link(path, raw)
	var m mail.Message
	switch kind {
	case perch.EmailVerify:
		m = mail.VerifyEmail(to, u.Name, link)
	case perch.EmailChange:
		m = mail.EmailChange(to, u.Name, link)
	default:
		m = mail.PasswordReset(to, u.Name, link)
	}
	s.sendMail(ctx, m)
	return nil
}

// forgotPassword mails a reset link when the address has an enabled
// account, and answers 202 either way, so it reveals nothing about who has
// one, or whose is disabled.
func (s *Server) forgotPassword(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Email string `json:"email"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	p := perch.Problems{}
	if perch.ValidateEmail(p, strings.TrimSpace(in.Email)); len(p) > 0 {
		return p.Err()
	}
	u, _, err := s.accountDB.UserCredentials(r.Context(), in.Email)
	switch perch.ErrorCode(err) {
	case "":
		if u.Disabled {
			// As for an address without an account: nothing is mailed and
			// the answer is the same, so it tells nobody the account is
			// there, disabled. Its reset links are refused anyway.
			break
		}
		if err := s.mailEmailToken(r.Context(), u, perch.EmailPasswordReset, u.Email); err != nil {
			return err
		}
		s.audit(r, perch.AuditEntry{Action: perch.AuditPasswordResetAsked, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID})
	case perch.ENOTFOUND:
	default:
		return err
	}
	return respond(w, http.StatusAccepted, map[string]string{"status": "If the address has an account, a reset link is on its way."})
}

// resetPassword sets a new password with a mailed link, and signs out every
// session of the account.
func (s *Server) resetPassword(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Token    string `json:"token"`
		Password string `json:"password"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	p := perch.Problems{}
	if in.Token == "" {
		p.Add("token", "is required")
	}
	perch.ValidatePassword(p, "password", in.Password, "")
	if err := p.Err(); err != nil {
		return err
	}
	hash := auth.HashToken(in.Token)
	owner, err := s.accountDB.EmailTokenOwner(r.Context(), hash, perch.EmailPasswordReset)
	if err != nil {
		return err
	}
	if perch.ValidatePassword(p, "password", in.Password, owner.Email); len(p) > 0 {
		return p.Err()
	}
	u, revoked, err := s.accountDB.ResetPassword(r.Context(), hash, auth.HashPassword(in.Password, s.opts.PasswordParams))
	if err != nil {
		return err
	}
	s.revoked(r.Context(), u.ID, revoked, nil)
	s.audit(r, perch.AuditEntry{Action: perch.AuditPasswordReset, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
		Changes: map[string]any{"sessions_ended": len(revoked)}})
	s.syncListedAdmin(r, u.ID) // the link came back from the mailbox
	return noContent(w)
}

// checkResetLink says whether a password-reset link still works, without
// spending it, so that the page it opens can say at once that it does not.
// The token travels in the body, as for the reset itself, not in a URL.
func (s *Server) checkResetLink(w http.ResponseWriter, r *http.Request) error {
	token, err := decodeLinkToken(r)
	if err != nil {
		return err
	}
	u, err := s.accountDB.EmailTokenOwner(r.Context(), auth.HashToken(token), perch.EmailPasswordReset)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, map[string]string{"email": u.Email})
}

// verifyEmail spends a verification or address-change link.
func (s *Server) verifyEmail(w http.ResponseWriter, r *http.Request) error {
	token, err := decodeLinkToken(r)
	if err != nil {
		return err
	}
	hash := auth.HashToken(token)
	// A link for a new address changes the account's address: the audit log
	// says from what.
	before, err := s.accountDB.EmailTokenOwner(r.Context(), hash, perch.EmailChange)
	if err != nil && perch.ErrorCode(err) != perch.EBADREQUEST && perch.ErrorCode(err) != perch.ENOTFOUND {
		return err
	}
	u, err := s.accountDB.VerifyEmail(r.Context(), hash)
	if err != nil {
		return err
	}
	e := perch.AuditEntry{Action: perch.AuditEmailVerified, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
		Changes: map[string]any{"email": u.Email}}
	if before != nil {
		e.Action, e.Changes = perch.AuditEmailChanged, map[string]any{"email": map[string]any{"from": before.Email, "to": u.Email}}
	}
	s.audit(r, e)
	s.syncListedAdmin(r, u.ID)
	u.IsAdmin = s.isAdmin(u)
	return respond(w, http.StatusOK, u)
}

// decodeLinkToken reads the body {"token": …} of a request that carries a
// mailed link's token (a check, a verification, an acceptance): the token
// travels in the body, never in a URL. A missing one is 422 naming it.
func decodeLinkToken(r *http.Request) (string, error) {
	var in struct {
		Token string `json:"token"`
	}
	if err := decode(r, &in); err != nil {
		return "", err
	}
	if in.Token == "" {
		return "", perch.Problems{"token": "is required"}.Err()
	}
	return in.Token, nil
}
