package server

import (
	"cmp"
	"context"
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
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/store"
)

// WebSocket settings of DESIGN.md §7.
const (
	wsQueue        = 4096 // frames a client may fall behind before it is cut off
	wsPingEvery    = 30 * time.Second
	wsPongWait     = 60 * time.Second
	wsWriteTimeout = 10 * time.Second
	wsReadLimit    = 64 << 10
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

// statusTokenExpired closes a socket whose access token expired: renew the
// token and reconnect. A private code (RFC 6455 §7.4.2), since 1008 means
// the credential is gone for good (revoked) and reconnecting cannot help.
const statusTokenExpired websocket.StatusCode = 4401

// closeStatus is how a connection is closed for each reason the hub drops a
// client; all of them invite the client to reconnect.
var closeStatus = map[string]websocket.StatusCode{
	hub.ReasonSlow:     websocket.StatusTryAgainLater,
	hub.ReasonGrants:   websocket.StatusServiceRestart,
	hub.ReasonShutdown: websocket.StatusGoingAway,
	hub.ReasonLost:     websocket.StatusServiceRestart,
	hub.ReasonRevoked:  websocket.StatusPolicyViolation,
	hub.ReasonExpired:  statusTokenExpired,
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
	since := r.URL.Query().Get("since")
	if since != "" {
		if _, err := store.ParseNotificationID(since); err != nil {
			return err
		}
	}
	u := p.User
	// A handshake is a request like any other, and a replay can be large.
	if err := s.allowRate(w, r, s.opts.UserLimit, userKey(u.ID), 1); err != nil {
		return err
	}
	// Checked here, as coder/websocket's Accept would, so that a refusal is
	// in the error shape rather than the library's plain text.
	if err := s.checkWebSocketOrigin(r); err != nil {
		return err
	}
	if !isWebSocketHandshake(r) {
		w.Header().Set("Upgrade", "websocket")
		w.Header().Set("Sec-WebSocket-Version", "13")
		return perch.Errorf(perch.EUPGRADE, "This is Perch's WebSocket: connect with a WebSocket client (version 13), e.g. perch listen.")
	}
	if since != "" {
		if err := s.replays.acquire(r.Context(), u.ID); err != nil {
			w.Header().Set("Retry-After", "1")
			return err
		}
		defer s.replays.release(u.ID)
	}
	audience, err := s.store.Audience(r.Context(), u)
	if err != nil {
		return err
	}
	up := &leanUpgrade{ResponseWriter: w, out: &batchWriter{timeout: wsWriteTimeout}}
	conn, err := websocket.Accept(up, r, &websocket.AcceptOptions{OriginPatterns: s.originPatterns()})
	if err != nil {
		if up.refused != 0 {
			return handshakeRefusal(w, up.refused, up.reason.String())
		}
		return nil // Accept has answered the request
	}
	conn.SetReadLimit(wsReadLimit)
	// Nothing of the request is kept: an idle connection would hold its
	// contexts for hours. The replay stops at its next write when the
	// connection ends, and its queries are bounded by the page size.
	ctx := context.Background()
	so := &socket{s: s, conn: conn, out: up.out, expires: p.ExpiresAt}
	so.writing.Store(true) // the replay writes first; live frames wait
	so.client = hub.NewClient(*audience, wsQueue, so.wake)
	so.client.SessionID, so.client.APITokenID = p.SessionID, p.APITokenID
	so.ping = time.AfterFunc(so.untilTick(), so.tick)
	s.sockets.Add(1)
	s.hub.Add(so.client)
	go so.read()

	// A revocation published between authenticating and joining the hub
	// found no client to end; looking again now that it is in the hub
	// closes that window.
	if _, err := s.principalFromRequest(r); err != nil {
		so.client.Revoke()
		so.drain() // the replay has not begun: this goroutine is the writer
		return nil
	}

	if err := so.replay(ctx, audience, since); err != nil {
		if !errors.Is(err, net.ErrClosed) {
			s.log.Error("websocket replay failed", "user", u.ID, "err", err)
		}
		conn.Close(websocket.StatusInternalError, "replay failed")
		return nil
	}
	// Live frames are written by a goroutine of their own, started now for
	// what arrived during the replay and again whenever more arrive: an idle
	// connection keeps only its reader.
	go so.drain()
	return nil
}

// handshakeRefusal is the error for a request websocket.Accept refused
// with status and reason: not a handshake, another version of the protocol
// (400), or a page of another site (403).
func handshakeRefusal(w http.ResponseWriter, status int, reason string) error {
	w.Header().Del("Connection") // Accept's, for a 426
	reason = strings.TrimSpace(reason)
	switch status {
	case http.StatusUpgradeRequired:
		w.Header().Set("Upgrade", "websocket")
		return perch.Errorf(perch.EUPGRADE, "/ws takes a WebSocket handshake (RFC 6455): %s.", reason)
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

// socket is one connected client. While idle it costs one goroutine, the
// reader, and a few hundred bytes of buffers: the writer runs only while
// frames are waiting, and pings are timers.
type socket struct {
	s      *Server
	conn   *websocket.Conn
	out    *batchWriter
	client *hub.Client
	ping   *time.Timer
	// When the access token the connection was opened with ends (zero for
	// an API token): the connection ends with it, and the client renews
	// the token and reconnects.
	expires time.Time

	writing atomic.Bool // the replay or a drain goroutine is writing
	// Owned by whoever is writing.
	last   int64 // id of the newest notification the client has
	frames []hub.Frame
}

// replay sends what the user missed after since and the ready frame. Without
// since nothing is replayed, but the newest visible id still counts as had:
// the ready frame tells the client, so it can resume from there.
func (so *socket) replay(ctx context.Context, a *perch.Audience, since string) error {
	st := so.s.store
	replayed, gap := 0, false
	if since != "" {
		var err error
		if so.last, gap, err = st.ReplayStart(ctx, since); err != nil {
			return err
		}
		for cursor := strconv.FormatInt(so.last, 10); ; {
			page, err := st.Notifications(ctx, a, cursor, replayPage)
			if err != nil {
				return err
			}
			frames := so.frames[:0]
			for _, n := range page {
				frames = append(frames, hub.NotificationFrame(n))
				cursor = n.ID
			}
			if err := so.write(frames); err != nil {
				return err
			}
			replayed += len(page)
			if len(page) < replayPage {
				break
			}
		}
		so.frames = nil
	} else {
		newest, err := st.Notifications(ctx, a, "", 1)
		if err != nil {
			return err
		}
		if len(newest) == 1 {
			so.last, _ = store.ParseNotificationID(newest[0].ID)
		}
	}
	return so.write([]hub.Frame{hub.ReadyFrame(replayed, gap, so.last)})
}

// wake is the hub's notify: frames are waiting, or the client was dropped.
func (so *socket) wake() {
	if so.writing.CompareAndSwap(false, true) {
		go so.drain()
	}
}

// drain writes what is waiting, then ends; or closes the connection when the
// hub dropped the client.
func (so *socket) drain() {
	for {
		if reason := so.client.Dropped(); reason != "" {
			so.conn.Close(closeStatus[reason], reason)
			return // and stays the writer: nothing more is written
		}
		so.frames = so.client.Take(so.frames[:0])
		if len(so.frames) > 0 {
			if err := so.write(so.frames); err != nil {
				so.conn.CloseNow()
				return
			}
			continue
		}
		if cap(so.frames) > 64 {
			so.frames = nil
		}
		so.writing.Store(false)
		// A frame queued between Take and Store has woken no one.
		if !so.client.Pending() || !so.writing.CompareAndSwap(false, true) {
			return
		}
	}
}

// write sends frames in as few socket writes as it can, skipping
// notifications the client has already.
func (so *socket) write(frames []hub.Frame) error {
	so.out.begin()
	for _, f := range frames {
		if f.ID != 0 {
			if f.ID <= so.last {
				continue // the replay sent it already
			}
			so.last = f.ID
		}
		// The context has no deadline: this only fills the batch, and
		// the batch's write to the socket has one.
		if err := so.conn.Write(context.Background(), websocket.MessageText, f.Data); err != nil {
			so.out.end()
			return err
		}
		if so.out.full() {
			if err := so.out.end(); err != nil {
				return err
			}
			so.out.begin()
		}
	}
	return so.out.end()
}

// untilTick is how long the timer waits: a ping period, or less when the
// access token ends sooner.
func (so *socket) untilTick() time.Duration {
	d := wsPingEvery
	if !so.expires.IsZero() {
		d = min(d, so.expires.Sub(so.s.now()))
	}
	return max(d, 0)
}

// tick runs on the connection's one timer: it ends the connection when its
// access token has expired, and otherwise pings; a peer that does not answer
// a ping in time is gone, and its connection is closed.
func (so *socket) tick() {
	if !so.expires.IsZero() && !so.s.now().Before(so.expires) {
		so.client.Expire()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), wsPongWait)
	err := so.conn.Ping(ctx)
	cancel()
	if err != nil {
		so.conn.CloseNow()
		return
	}
	so.ping.Reset(so.untilTick())
}

// read reads what the client sends (read receipts) and, by reading, lets
// pings, pongs and close frames through. When the connection ends, for whatever
// reason, it takes the client out of the hub.
func (so *socket) read() {
	defer func() {
		so.ping.Stop()
		so.s.hub.Remove(so.client)
		so.conn.CloseNow()
		so.s.sockets.Done()
	}()
	for {
		_, data, err := so.conn.Read(context.Background())
		if err != nil {
			return
		}
		so.receipt(data)
	}
}

// receipt carries out a read receipt from the client; anything else a
// client may send is ignored.
func (so *socket) receipt(data []byte) {
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
	u := &perch.User{ID: so.client.Audience.UserID, OrgID: so.client.Audience.OrgID, CreatedAt: so.client.Audience.Joined}
	if _, err := so.s.readAndTell(ctx, u, in.Data.IDs, false); err != nil {
		so.s.log.Warn("websocket read receipt failed", "user", u.ID, "err", err)
	}
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
// own host (which coder/websocket always admits).
func (s *Server) originPatterns() []string {
	if u, err := url.Parse(s.opts.BaseURL); err == nil && u.Host != "" {
		return []string{u.Host}
	}
	return nil
}
