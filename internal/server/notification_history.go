package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/store"
)

// notificationStore is what the history and read-state handlers need from
// storage.
type notificationStore interface {
	Audience(ctx context.Context, u *perch.User) (*perch.Audience, error)
	MarkRead(ctx context.Context, u *perch.User, ids []string, all bool) ([]string, error)
	Notifications(ctx context.Context, a *perch.Audience, since string, limit int) ([]*perch.Notification, error)
	ReplayStart(ctx context.Context, since string) (after int64, gap bool, err error)
	User(ctx context.Context, id string) (*perch.User, error)
}

var _ notificationStore = (*store.Store)(nil)

// History page sizes.
const (
	defaultHistoryLimit = 50
	maxHistoryLimit     = 500
)

// listNotifications: ?since=<id> pages forward (oldest first); without it,
// the newest page.
func (s *Server) listNotifications(w http.ResponseWriter, r *http.Request) error {
	limit := defaultHistoryLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxHistoryLimit {
			return perch.Errorf(perch.EBADREQUEST, "limit must be a whole number from 1 to %d.", maxHistoryLimit)
		}
		limit = n
	}
	a, err := s.notificationDB.Audience(r.Context(), principal(r).User)
	if err != nil {
		return err
	}
	list, err := s.notificationDB.Notifications(r.Context(), a, r.URL.Query().Get("since"), limit)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, list)
}

// markRead takes {"ids": [...]} or {"all": true}; every client of the user
// hears of it.
func (s *Server) markRead(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		IDs []string `json:"ids"`
		All bool     `json:"all"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	if !in.All && len(in.IDs) == 0 {
		return perch.Problems{"ids": `give the ids to mark read, or "all": true`}.Err()
	}
	if len(in.IDs) > maxHistoryLimit {
		return perch.Errorf(perch.EBADREQUEST, "At most %d ids at once.", maxHistoryLimit)
	}
	marked, err := s.readAndTell(r.Context(), principal(r).User, in.IDs, in.All)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, map[string][]string{"ids": marked})
}

// readAndTell marks notifications read and tells the user's clients.
func (s *Server) readAndTell(ctx context.Context, u *perch.User, ids []string, all bool) ([]string, error) {
	marked, err := s.notificationDB.MarkRead(ctx, u, ids, all)
	if err != nil || len(marked) == 0 {
		return marked, err
	}
	if err := s.fanout.Publish(ctx, perch.FanoutMessage{Kind: perch.FanoutRead, UserID: u.ID, IDs: marked}); err != nil {
		s.log.Warn("publishing read state failed", "user", u.ID, "err", err)
	}
	return marked, nil
}

// grantsChanged tells the user's connected clients whose audience is not
// the user's new one to reconnect, so that they receive by their new
// organisation and teams from then on.
func (s *Server) grantsChanged(ctx context.Context, userID string) {
	s.tokens.forget() // here at once; other instances when the message arrives
	m := perch.FanoutMessage{Kind: perch.FanoutGrants, UserID: userID}
	if u, err := s.notificationDB.User(ctx, userID); err == nil {
		// Without it (the user is gone, or the store failed), every client
		// of the user reconnects.
		m.Audience, _ = s.notificationDB.Audience(ctx, u)
	}
	if err := s.fanout.Publish(ctx, m); err != nil {
		s.log.Warn("publishing a change of grants failed", "user", userID, "err", err)
	}
}

// revoked ends, on every instance, the WebSockets opened with the sign-ins
// and API tokens of userID that were just revoked. This instance's are
// ended at once, whether or not the message can be published.
func (s *Server) revoked(ctx context.Context, userID string, sessions, apiTokens []string) {
	if userID == "" || len(sessions)+len(apiTokens) == 0 {
		return
	}
	m := perch.FanoutMessage{Kind: perch.FanoutRevoked, UserID: userID, Sessions: sessions, APITokens: apiTokens}
	s.hub.Deliver(m)
	if err := s.fanout.Publish(context.WithoutCancel(ctx), m); err != nil {
		s.log.Error("publishing a revocation failed; other instances keep those WebSockets open",
			"user", userID, "err", err)
	}
}

// tokensChanged makes every instance look webhook tokens up afresh, after a
// token was deleted or its creator's role changed.
func (s *Server) tokensChanged(ctx context.Context) {
	s.tokens.forget()
	if err := s.fanout.Publish(ctx, perch.FanoutMessage{Kind: perch.FanoutTokens}); err != nil {
		s.log.Warn("publishing a change of webhook tokens failed", "err", err)
	}
}

// Deliver is this instance's fan-out subscriber: it keeps the token cache
// true and hands everything to the WebSocket hub.
func (s *Server) Deliver(m perch.FanoutMessage) {
	switch m.Kind {
	case perch.FanoutGrants, perch.FanoutTokens:
		s.tokens.forget()
	case perch.FanoutWorkflows:
		s.flows.forget(m.OrgID)
		return
	}
	s.hub.Deliver(m)
}

// Lost is called when fan-out may have missed messages (a subscriber fell
// behind retention): cached tokens and workflows are forgotten and clients
// reconnect to replay from the store, which tells them of any gap.
func (s *Server) Lost() {
	s.tokens.forget()
	s.flows.forget("")
	s.hub.DropAll(hub.ReasonLost)
}
