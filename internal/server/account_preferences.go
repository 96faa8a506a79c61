package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// preferencesStore is what the preferences' handlers and the WebSocket
// (which follows them) need from storage.
type preferencesStore interface {
	Preferences(ctx context.Context, userID string) (*perch.Preferences, int64, error)
	SetPreferences(ctx context.Context, userID string, p *perch.Preferences) (int64, error)
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
	u := principal(r).User
	version, err := s.preferencesDB.SetPreferences(r.Context(), u.ID, p)
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
	s.audit(r, perch.AuditEntry{Action: perch.AuditPreferencesUpdated, Target: userTarget(u.ID), Changes: changes})
	m := perch.FanoutMessage{Kind: perch.FanoutPreferences, UserID: u.ID, Preferences: p, Version: version}
	if s.hub != nil {
		s.hub.Deliver(m) // the fan-out brings it again; the version makes that a no-op
	}
	if err := s.fanout.Publish(context.WithoutCancel(r.Context()), m); err != nil {
		s.log.Warn("publishing a change of preferences failed; clients on other instances follow it when they reconnect",
			"user", u.ID, "err", err)
	}
	return respond(w, http.StatusOK, p)
}
