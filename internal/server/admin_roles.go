package server

import (
	"context"
	"net/http"

	"github.com/perch-dev/perch"
)

// Who is a platform admin (docs/DESIGN.md, "Who is verified, who is admin"):
// an account granted the role in the store (perch admin grant, or another
// platform admin), or one whose address is listed in PERCH_ADMIN_EMAILS and
// whose mailbox is proven by a round trip of Perch's own. What an identity
// provider asserts never proves a mailbox, so it never makes an admin.
// Every grant and withdrawal, by any path, is audited: the store's and an
// admin's where they are made, the setting's whenever an account comes to
// qualify or stops (SyncListedAdmins, at start-up and after every proof or
// change of address).

// listedVia names PERCH_ADMIN_EMAILS as the actor and the way of a grant.
const listedVia = "PERCH_ADMIN_EMAILS"

// isAdmin reports whether u is a platform admin: granted in the store, or
// listed in PERCH_ADMIN_EMAILS with its mailbox proven, so that registering
// a listed address, or having an identity provider assert it, is not
// enough.
func (s *Server) isAdmin(u *perch.User) bool {
	return u.IsAdmin || u.EmailVerified && s.admins[perch.NormalizeEmail(u.Email)]
}

// syncListedAdmin audits, for r, the admin role that PERCH_ADMIN_EMAILS
// gives or takes from the user because their mailbox was just proven or
// their address changed. A failure is logged: the role itself follows the
// account's state whatever the record says.
func (s *Server) syncListedAdmin(r *http.Request, userID string) {
	granted, withdrawn, err := s.kernelDB.SyncListedAdmins(r.Context(), s.listedAdmins(), userID)
	if err != nil {
		s.log.Error("recording a platform admin by PERCH_ADMIN_EMAILS failed", "user_id", userID, "err", err, "request_id", requestID(r))
		return
	}
	for _, e := range listedAdminEntries(granted, withdrawn) {
		s.audit(r, e)
	}
}

// SyncListedAdmins audits the platform admins PERCH_ADMIN_EMAILS has made or
// unmade since the record was last brought up to date: at start-up, after
// the setting changed. Each is audited once, however many instances start.
func (s *Server) SyncListedAdmins(ctx context.Context) error {
	granted, withdrawn, err := s.kernelDB.SyncListedAdmins(ctx, s.listedAdmins(), "")
	if err != nil {
		return err
	}
	for _, e := range listedAdminEntries(granted, withdrawn) {
		s.record(ctx, e)
	}
	return nil
}

// listedAdminEntries are the audit entries of the setting's grants and
// withdrawals.
func listedAdminEntries(granted, withdrawn []*perch.User) []perch.AuditEntry {
	var out []perch.AuditEntry
	for _, change := range []struct {
		action string
		users  []*perch.User
	}{{perch.AuditAdminGranted, granted}, {perch.AuditAdminRevoked, withdrawn}} {
		for _, u := range change.users {
			out = append(out, perch.AuditEntry{Action: change.action, Actor: perch.AuditActor{Type: perch.ActorSystem, ID: listedVia},
				Target: userTarget(u.ID), OrgID: u.OrgID, Changes: map[string]any{"via": listedVia, "email": u.Email}})
		}
	}
	return out
}
