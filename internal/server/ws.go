package server

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/wsloop"
)

// WebSocket settings of the handler (docs/DESIGN.md, The WebSocket
// protocol); the connection's own are the event loop's (internal/wsloop).
const (
	wsWriteTimeout = 10 * time.Second // of a read receipt's database work
	replayPage     = 500
	// Replays (?since=) one user may have under way at once on an
	// instance, and how long a further one waits for its turn before it is
	// refused. A client replays once per connection, so two keep up with a
	// user's devices reconnecting together; more at once would only make
	// the server read and send history over and over.
	wsReplaysPerUser = 2
	wsReplayWait     = 10 * time.Second
)

// replaySlots bounds the replays under way per user.
type replaySlots struct {
	mu    sync.Mutex
	users map[string]*userReplays
	wait  time.Duration // 0: wsReplayWait
}

type userReplays struct {
	sem  chan struct{} // a token per replay under way
	refs int           // replays under way or waiting
}

// acquire waits for one of user's replay slots, for as long as ctx and the
// wait allow; past that it is rate_limited.
func (rs *replaySlots) acquire(ctx context.Context, user string) error {
	rs.mu.Lock()
	if rs.users == nil {
		rs.users = map[string]*userReplays{}
	}
	u := rs.users[user]
	if u == nil {
		u = &userReplays{sem: make(chan struct{}, wsReplaysPerUser)}
		rs.users[user] = u
	}
	u.refs++
	rs.mu.Unlock()

	t := time.NewTimer(cmp.Or(rs.wait, wsReplayWait))
	defer t.Stop()
	select {
	case u.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
	case <-t.C:
	}
	rs.done(user, u)
	return perch.Errorf(perch.ERATELIMITED, "%d replays of yours are under way; connect again once they are done.", wsReplaysPerUser)
}

// release gives back a slot that acquire gave.
func (rs *replaySlots) release(user string) {
	rs.mu.Lock()
	u := rs.users[user]
	rs.mu.Unlock()
	<-u.sem
	rs.done(user, u)
}

func (rs *replaySlots) done(user string, u *userReplays) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if u.refs--; u.refs == 0 {
		delete(rs.users, user)
	}
}

// underWay is how many users have replays under way or waiting.
func (rs *replaySlots) underWay() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.users)
}

// websocket serves GET /ws: authenticate (401 before any upgrade), join the
// hub, replay from ?since= out of the store, say ready, then relay live
// frames. Joining the hub before reading the store is what closes the gap
// between replay and live delivery; frames the replay already sent are
// skipped by id.
func (s *Server) websocket(w http.ResponseWriter, r *http.Request) error {
	p, err := s.authenticated(w, r)
	if err != nil {
		return err
	}
	if err := perch.AuthorizePrincipal(p, perch.ReadNotifications); err != nil {
		return err
	}
	since := r.URL.Query().Get("since")
	if since != "" {
		if _, err := store.ParseNotificationID(since); err != nil {
			return err
		}
	}
	u := p.User
	// A handshake is a request like any other, and a replay can be large.
	if err := s.allowRate(w, r, s.opts.Limits.User, userKey(u.ID), 1); err != nil {
		return err
	}
	// Checked here, before the library sees the request, so that a
	// refusal is in the error shape rather than its plain text.
	if err := s.checkWebSocketOrigin(r); err != nil {
		return err
	}
	if !isWebSocketHandshake(r) {
		w.Header().Set("Upgrade", "websocket")
		w.Header().Set("Sec-WebSocket-Version", "13")
		return perch.Errorf(perch.EUPGRADE, "This is Perch's WebSocket: connect with a WebSocket client (version 13), e.g. perch listen.")
	}
	if key, err := base64.StdEncoding.DecodeString(r.Header.Get("Sec-WebSocket-Key")); err != nil || len(key) != 16 {
		return perch.Errorf(perch.EBADREQUEST, "/ws takes a WebSocket handshake (RFC 6455): Sec-WebSocket-Key must be 16 bytes in base64.")
	}
	if since != "" {
		if err := s.replays.acquire(r.Context(), u.ID); err != nil {
			w.Header().Set("Retry-After", "1")
			return err
		}
		defer s.replays.release(u.ID)
	}
	audience, err := s.notificationDB.Audience(r.Context(), u)
	if err != nil {
		return err
	}
	prefs, version, err := s.preferencesDB.Preferences(r.Context(), u.ID)
	if err != nil {
		return err
	}
	if s.wsErr != nil {
		return s.wsErr
	}
	so, err := s.ws.Upgrade(w, r, wsloop.Session{
		Audience:   *audience,
		SessionID:  p.SessionID,
		APITokenID: p.APITokenID,
		Expires:    p.ExpiresAt,
	})
	if err != nil {
		var refused *wsloop.Refusal
		switch {
		case errors.As(err, &refused):
			return handshakeRefusal(w, refused.Status, refused.Reason)
		case errors.Is(err, wsloop.ErrHijacked):
			s.log.Warn("websocket upgrade failed", "user", u.ID, "err", err)
			return nil // the connection is gone
		}
		return err
	}
	// The preferences are the client's before it joins the hub, so that
	// the first live frame is silent when it should be.
	so.Client().SetPreferences(version, prefs, s.now())
	if !so.Start() {
		return nil // the connection ended already
	}

	// A revocation published between authenticating and joining the hub
	// found no client to end; looking again now that it is in the hub
	// closes that window.
	if _, err := s.principalFromRequest(r); err != nil {
		so.Client().Revoke()
		so.Drain() // the replay has not begun: this goroutine is the writer
		return nil
	}

	// A change of preferences announced between reading them and joining
	// the hub found no client to tell; reading them again closes that
	// window (an older version than the client holds is not taken).
	if prefs, version, err := s.preferencesDB.Preferences(r.Context(), u.ID); err == nil {
		so.Client().SetPreferences(version, prefs, s.now())
	}

	// Nothing of the request is kept: an idle connection would hold its
	// contexts for hours. The replay stops at its next write when the
	// connection ends, and its queries are bounded by the page size.
	if err := s.replay(context.Background(), so, audience, since); err != nil {
		if !clientGone(err) {
			s.log.Error("websocket replay failed", "user", u.ID, "err", err)
		}
		so.CloseWith(wsloop.StatusInternalError, "replay failed")
		return nil
	}
	// What arrived during the replay is written now; after that, the
	// loop's writers write whatever arrives.
	so.Drain()
	return nil
}

// handshakeRefusal is the error for a request the library refused with
// status and reason, in case one passes the checks made before it.
func handshakeRefusal(w http.ResponseWriter, status int, reason string) error {
	w.Header().Del("Connection")
	reason = strings.TrimSpace(reason)
	switch status {
	case http.StatusBadRequest:
		return perch.Errorf(perch.EBADREQUEST, "/ws takes a WebSocket handshake (RFC 6455): %s.", reason)
	case http.StatusForbidden:
		return perch.Errorf(perch.EFORBIDDEN, "The live feed does not accept connections from this page's origin (%s).", reason)
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", http.MethodGet)
		return perch.Errorf(perch.EMETHOD, "A WebSocket handshake is a GET request.")
	}
	return fmt.Errorf("websocket handshake refused: %d %s", status, reason)
}

// replay sends what the user missed after since and the ready frame. Without
// since nothing is replayed, but the newest visible id still counts as had:
// the ready frame tells the client, so it can resume from there.
func (s *Server) replay(ctx context.Context, so *wsloop.Socket, a *perch.Audience, since string) error {
	st := s.notificationDB
	replayed, gap := 0, false
	if since != "" {
		var last int64
		var err error
		if last, gap, err = st.ReplayStart(ctx, since); err != nil {
			return err
		}
		so.SetLast(last)
		var frames []hub.Frame
		for cursor := strconv.FormatInt(last, 10); ; {
			page, err := st.Notifications(ctx, a, cursor, replayPage)
			if err != nil {
				return err
			}
			frames = frames[:0]
			now := s.now()
			for _, n := range page {
				frames = append(frames, so.Client().NotificationFrame(n, now))
				cursor = n.ID
			}
			if err := so.Write(frames); err != nil {
				return err
			}
			replayed += len(page)
			if len(page) < replayPage {
				break
			}
		}
	} else {
		newest, err := st.Notifications(ctx, a, "", 1)
		if err != nil {
			return err
		}
		if len(newest) == 1 {
			last, _ := store.ParseNotificationID(newest[0].ID)
			so.SetLast(last)
		}
	}
	return so.Write([]hub.Frame{hub.ReadyFrame(replayed, gap, so.Last(), so.Client().Preferences())})
}

// receipt carries out a read receipt from a client whose audience is a;
// anything else a client may send is ignored.
func (s *Server) receipt(a *perch.Audience, data []byte) {
	var in struct {
		Type string `json:"type"`
		Data struct {
			IDs []string `json:"ids"`
		} `json:"data"`
	}
	if json.Unmarshal(data, &in) != nil || in.Type != "read" || len(in.Data.IDs) == 0 || len(in.Data.IDs) > maxHistoryLimit {
		return // not something a client of ours sends
	}
	ctx, cancel := context.WithTimeout(context.Background(), wsWriteTimeout)
	defer cancel()
	// The connection keeps the user's audience only, not the whole account:
	// an idle connection should cost little.
	u := &perch.User{ID: a.UserID, OrgID: a.OrgID, CreatedAt: a.Joined}
	if _, err := s.readAndTell(ctx, u, in.Data.IDs, false); err != nil {
		s.log.Warn("websocket read receipt failed", "user", u.ID, "err", err)
	}
}

// clientGone reports whether a write failed because the client is gone,
// which is how a connection usually ends, not a failure.
func clientGone(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// isWebSocketHandshake reports whether r asks for a WebSocket (RFC 6455
// §4.2.1): an upgrade to websocket, version 13, with a key.
func isWebSocketHandshake(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket") &&
		r.Header.Get("Sec-WebSocket-Version") == "13" && r.Header.Get("Sec-WebSocket-Key") != ""
}

// headerHasToken reports whether the comma-separated values of header name
// hold token, in any case.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// checkWebSocketOrigin refuses a browser's handshake from a page of another
// site: a WebSocket is not bound by the same-origin policy, and the
// session cookie goes along. Clients that are not browsers send no Origin.
func (s *Server) checkWebSocketOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err == nil && (strings.EqualFold(u.Host, r.Host) || slices.ContainsFunc(s.originPatterns(), func(h string) bool { return strings.EqualFold(u.Host, h) })) {
		return nil
	}
	return perch.Errorf(perch.EFORBIDDEN, "WebSocket connections from pages of %s are refused.", origin)
}

// originPatterns admits browsers on the public address besides the request's
// own host.
func (s *Server) originPatterns() []string {
	if u, err := url.Parse(s.opts.BaseURL); err == nil && u.Host != "" {
		return []string{u.Host}
	}
	return nil
}
