package server

import (
	"context"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/perch-dev/perch"
)

// maxUserAgent is how much of a User-Agent header an audit entry keeps.
const maxUserAgent = 512

// audit appends e to the audit log, completed from r: the actor (the
// signed-in caller, as an admin on /api/v1/admin routes, unless e names one),
// the organisation (the actor's, unless e names one), the client address,
// user agent and request id, and the time. Changes are redacted of anything
// that looks like a secret. Every audited handler calls it after its change
// is made; a failure to write is logged and counted, and the change stands.
func (s *Server) audit(r *http.Request, e perch.AuditEntry) {
	if p := principal(r); p != nil && e.Actor.Type == "" {
		u := p.User
		e.Actor = perch.AuditActor{Type: perch.ActorUser, ID: u.ID, Email: u.Email}
		if strings.HasPrefix(r.URL.Path, "/api/v1/admin/") && s.isAdmin(u) {
			e.Actor.Type = perch.ActorAdmin
		}
		if e.OrgID == "" && e.Actor.Type == perch.ActorUser {
			e.OrgID = u.OrgID
		}
	}
	if c := scimCallOf(r); c != nil && e.Actor.Type == "" {
		// Under /scim/v2 the organisation's identity provider acts, also in
		// the effects SCIM shares with the dashboard (team changes, roles).
		e.Actor = c.actor
		if e.OrgID == "" {
			e.OrgID = c.orgID
		}
	}
	if e.Actor.Type == "" {
		e.Actor.Type = perch.ActorUser
	}
	e.IP = s.clientIP(r).String()
	e.UserAgent = clip(r.UserAgent(), maxUserAgent)
	e.RequestID = requestID(r)
	e.At = s.now()
	s.record(r.Context(), e)
}

// record writes an audit entry made elsewhere (a job, the command line).
func (s *Server) record(ctx context.Context, e perch.AuditEntry) {
	e.Changes = perch.RedactChanges(e.Changes)
	if e.At.IsZero() {
		e.At = s.now()
	}
	if err := s.kernelDB.AppendAudit(context.WithoutCancel(ctx), &e); err != nil {
		s.metrics.auditFailures.Inc()
		s.log.Error("writing an audit entry failed", "action", e.Action, "actor", e.Actor.ID,
			"target", e.Target.Type+":"+e.Target.ID, "request_id", e.RequestID, "err", err)
	}
}

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// actorOf is u as the actor of an entry made before u is signed in
// (registration, sign-in, a mailed link).
func actorOf(u *perch.User) perch.AuditActor {
	return perch.AuditActor{Type: perch.ActorUser, ID: u.ID, Email: u.Email}
}

// userTarget is u as the target of an entry.
func userTarget(id string) perch.AuditTarget { return perch.AuditTarget{Type: "user", ID: id} }

// auditUser records action by the user with id userID, who is not signed in
// on this request (a refresh token, a mailed link): the entry names them
// and their organisation as the store has them.
func (s *Server) auditUser(r *http.Request, userID, action string, changes map[string]any) {
	e := perch.AuditEntry{Action: action, Actor: perch.AuditActor{Type: perch.ActorUser, ID: userID}, Target: userTarget(userID), Changes: changes}
	if u, err := s.kernelDB.User(r.Context(), userID); err == nil {
		e.Actor, e.OrgID = actorOf(u), u.OrgID
	}
	s.audit(r, e)
}
