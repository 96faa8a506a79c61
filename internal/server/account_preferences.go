package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/store"
)

// preferencesStore is what the preferences' handlers and the WebSocket
// (which follows them) need from storage.
type preferencesStore interface {
	Preferences(ctx context.Context, userID string) (*perch.Preferences, int64, error)
	SetPreferences(ctx context.Context, userID string, p *perch.Preferences) (int64, error)
	User(ctx context.Context, id string) (*perch.User, error)
}

var _ preferencesStore = (*store.Store)(nil)

// preferences answers the caller's preferences: the defaults (nothing
// muted, the rest null) until they store some.
func (s *Server) preferences(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.preferencesDB.Preferences(r.Context(), principal(r).User.ID)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, p)
}

// updatePreferences replaces the caller's preferences (a field left out is
// its default), after checking every field, and has every client of theirs
// on every instance follow them: this instance's at once, the others'
// through the fan-out (kind preferences), each with a preferences frame.
func (s *Server) updatePreferences(w http.ResponseWriter, r *http.Request) error {
	var in perch.PreferencesInput
	if err := decode(r, &in); err != nil {
		return err
	}
	p, err := in.Preferences(s.now())
	if err != nil {
		return err
	}
	if err := s.storePreferences(r, perch.AuditActor{}, principal(r).User.ID, p); err != nil {
		return err
	}
	return respond(w, http.StatusOK, p)
}

// storePreferences stores p as userID's preferences, audits the change
// (by actor, or the caller when actor is empty), and has every client of
// the user on every instance follow them: this instance's at once, the
// others' through the fan-out (kind preferences), each with a preferences
// frame.
func (s *Server) storePreferences(r *http.Request, actor perch.AuditActor, userID string, p *perch.Preferences) error {
	version, err := s.preferencesDB.SetPreferences(r.Context(), userID, p)
	if err != nil {
		return err
	}
	// As plain JSON values, so that the audit log's redaction looks into
	// the text of every mute.
	changes := map[string]any{}
	if b, err := json.Marshal(p); err == nil {
		json.Unmarshal(b, &changes)
	}
	changes["version"] = version
	e := perch.AuditEntry{Action: perch.AuditPreferencesUpdated, Target: userTarget(userID), Changes: changes, Actor: actor}
	if actor.Type != "" {
		if u, err := s.preferencesDB.User(r.Context(), userID); err == nil {
			e.OrgID = u.OrgID
		}
	}
	s.audit(r, e)
	m := perch.FanoutMessage{Kind: perch.FanoutPreferences, UserID: userID, Preferences: p, Version: version}
	if s.hub != nil {
		s.hub.Deliver(m) // the fan-out brings it again; the version makes that a no-op
	}
	if err := s.fanout.Publish(context.WithoutCancel(r.Context()), m); err != nil {
		s.log.Warn("publishing a change of preferences failed; clients on other instances follow it when they reconnect",
			"user", userID, "err", err)
	}
	return nil
}

// errBadUnreadUnsubscribe answers a token this server did not sign, or
// whose user is gone.
var errBadUnreadUnsubscribe = perch.Errorf(perch.ENOTFOUND,
	"This unsubscribe link is not valid. Sign in and turn the mail of unread notifications off in your preferences instead.")

// unsubscribeUnread turns off the unread mail of the user its link names:
// RFC 8058's one-click POST (List-Unsubscribe), with no credential but the
// link's token (mail.UnreadUnsubscribePurpose). The rest of the
// preferences stay; it may be repeated.
func (s *Server) unsubscribeUnread(w http.ResponseWriter, r *http.Request) error {
	token := r.URL.Query().Get("token")
	if token == "" {
		return perch.Errorf(perch.EBADREQUEST, "The unsubscribe link has no token.")
	}
	if s.opts.Secrets == nil {
		return errBadUnreadUnsubscribe
	}
	userID, ok := s.opts.Secrets.LinkTokenID(mail.UnreadUnsubscribePurpose, token)
	if !ok {
		return errBadUnreadUnsubscribe
	}
	u, err := s.preferencesDB.User(r.Context(), userID)
	if perch.ErrorCode(err) == perch.ENOTFOUND {
		return errBadUnreadUnsubscribe
	}
	if err != nil {
		return err
	}
	p, _, err := s.preferencesDB.Preferences(r.Context(), u.ID)
	if err != nil {
		return err
	}
	if p.EmailUnread != nil {
		p.EmailUnread = nil
		if err := s.storePreferences(r, actorOf(u), u.ID, p); err != nil {
			return err
		}
	}
	return respond(w, http.StatusOK, map[string]any{"unsubscribed": true, "email": u.Email})
}
