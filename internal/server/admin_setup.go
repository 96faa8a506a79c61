package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
)

// A server's first platform admin (docs/DESIGN.md, "Who is verified, who
// is admin"): perch serve, started while no account is a platform admin,
// makes a one-time setup code (SetupLink) and logs its link; a signed-in
// user who opens it becomes the platform admin (redeemSetupCode). The code
// rides in the link's fragment, so no server log or Referer sees it.

// setupVia names the setup link as the way of a grant in the audit log.
const setupVia = "setup link"

// SetupLink makes a setup code, valid for perch.SetupCodeTTL, when no
// account is a platform admin, and answers its link and expiry; with an
// admin it answers "". Expired codes go either way, and every code when
// there is an admin. Each instance that starts without an admin makes a
// code of its own, and every unexpired one works.
func (s *Server) SetupLink(ctx context.Context) (link string, expires time.Time, err error) {
	raw, hash := auth.NewToken(perch.SetupCodePrefix)
	expires, made, err := s.adminDB.CreateSetupCode(ctx, hash, perch.SetupCodeTTL, s.listedAdmins())
	if err != nil || !made {
		return "", time.Time{}, err
	}
	return s.opts.BaseURL + "/setup#code=" + raw, expires, nil
}

// setupStatus answers whether the server still needs a platform admin, so
// that the dashboard can say where the setup link is.
func (s *Server) setupStatus(w http.ResponseWriter, r *http.Request) error {
	needed, err := s.adminDB.AdminNeeded(r.Context(), s.listedAdmins())
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, map[string]bool{"admin_needed": needed})
}

// redeemSetupCode makes the caller the platform admin with a setup link's
// code, while no account is one. A wrong, used or expired code, and a
// server with an admin, are one refusal (403). Admin rights are read from
// the account on every request (access tokens are opaque, not signed
// claims), so the caller's sign-in reaches the admin routes at once.
func (s *Server) redeemSetupCode(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Code string `json:"code"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	code := strings.TrimSpace(in.Code)
	if code == "" {
		return &perch.Error{Code: perch.EVALIDATION, Message: "The setup code is missing: open the whole setup link that perch serve printed; the code is its part after #code=.",
			Fields: map[string]string{"code": "is required"}}
	}
	u, err := s.adminDB.RedeemSetupCode(r.Context(), auth.HashToken(code), principal(r).User.ID, s.listedAdmins())
	if err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditAdminGranted, Target: userTarget(u.ID), OrgID: u.OrgID,
		Changes: map[string]any{"via": setupVia, "email": u.Email}})
	u.IsAdmin = s.isAdmin(u)
	return respond(w, http.StatusOK, u)
}
