package server

import (
	"bytes"
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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lesismal/nbio"
	"github.com/lesismal/nbio/nbhttp/websocket"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/store"
)

// WebSocket settings (docs/DESIGN.md, The WebSocket protocol).
const (
	wsQueue          = 4096 // frames a client may fall behind before it is cut off
	wsPingEvery      = 30 * time.Second
	wsPongWait       = 60 * time.Second
	wsWriteTimeout   = 10 * time.Second // of a read receipt's database work
	wsReceiptsQueued = 16
	wsReadLimit      = 64 << 10
	replayPage       = 500
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

// Close codes (RFC 6455 §7.4). statusTokenExpired closes a socket whose
// access token expired: renew the token and reconnect. It is a private code
// (§7.4.2), since 1008 means the credential is gone for good (revoked) and
// reconnecting cannot help.
const (
	statusGoingAway      = 1001
	statusProtocolError  = 1002
	statusPolicy         = 1008
	statusInternalError  = 1011
	statusServiceRestart = 1012
	statusTryAgainLater  = 1013
	statusTokenExpired   = 4401
	// How long a closing socket waits for the client's close frame
	// before it drops the connection.
	wsCloseWait = 5 * time.Second
)

// closeStatus is how a connection is closed for each reason the hub drops a
// client; all of them invite the client to reconnect.
var closeStatus = map[string]int{
	hub.ReasonSlow:     statusTryAgainLater,
	hub.ReasonGrants:   statusServiceRestart,
	hub.ReasonShutdown: statusGoingAway,
	hub.ReasonLost:     statusServiceRestart,
	hub.ReasonRevoked:  statusPolicy,
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
	audience, err := s.store.Audience(r.Context(), u)
	if err != nil {
		return err
	}
	poller, err := s.wsPoller()
	if err != nil {
		return err
	}

	so := &socket{s: s, poller: poller, expires: p.ExpiresAt}
	so.writing.Store(true) // the replay writes first; live frames wait
	so.client = hub.NewClient(*audience, wsQueue, so.wake)
	so.client.SessionID, so.client.APITokenID = p.SessionID, p.APITokenID
	up := poller.upgrader // this connection's handlers
	up.OnMessage(func(_ *websocket.Conn, _ websocket.MessageType, data []byte) { so.received(data) })
	up.SetCloseHandler(so.peerClosed)
	up.OnClose(func(*websocket.Conn, error) { so.ended() })
	s.sockets.Add(1)
	h := &wsHijacker{ResponseWriter: w}
	conn, err := up.UpgradeAndTransferConnToPoller(h, r, nil)
	if err != nil {
		so.ended()
		switch {
		case h.refused != 0:
			return handshakeRefusal(w, h.refused, h.reason.String())
		case h.hijacked:
			s.log.Warn("websocket upgrade failed", "user", u.ID, "err", err)
			return nil // the connection is gone
		}
		return err
	}
	conn.SetReadDeadline(time.Now().Add(wsPongWait)) // until the first pong
	so.conn = conn
	if !so.start() {
		return nil // the connection ended already
	}

	// A revocation published between authenticating and joining the hub
	// found no client to end; looking again now that it is in the hub
	// closes that window.
	if _, err := s.principalFromRequest(r); err != nil {
		so.client.Revoke()
		so.drain() // the replay has not begun: this goroutine is the writer
		return nil
	}

	// Nothing of the request is kept: an idle connection would hold its
	// contexts for hours. The replay stops at its next write when the
	// connection ends, and its queries are bounded by the page size.
	if err := so.replay(context.Background(), audience, since); err != nil {
		if !clientGone(err) {
			s.log.Error("websocket replay failed", "user", u.ID, "err", err)
		}
		so.closeWith(statusInternalError, "replay failed")
		return nil
	}
	// What arrived during the replay is written now; after that, the
	// writers write whatever arrives.
	so.drain()
	return nil
}

// wsPoller is this instance's event loop for WebSockets, started with the
// first connection.
func (s *Server) wsPoller() (*wsPoller, error) {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	if s.ws == nil {
		p, err := newWSPoller()
		if err != nil {
			return nil, fmt.Errorf("websocket event loop: %w", err)
		}
		s.ws = p
	}
	return s.ws, nil
}

// stopWSPoller ends the event loop, if it was started.
func (s *Server) stopWSPoller() {
	s.wsMu.Lock()
	p := s.ws
	s.ws = nil
	s.wsMu.Unlock()
	if p != nil {
		p.stop()
	}
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

// socket is one connected client. While idle it is a file descriptor in
// the event loop, the library's connection, its hub entry and a ping timer:
// no goroutine. Frames are written by the poller's writers when the hub
// says they are waiting.
type socket struct {
	s      *Server
	poller *wsPoller
	conn   *websocket.Conn
	client *hub.Client
	ping   *time.Timer
	// When the access token the connection was opened with ends (zero for
	// an API token): the connection ends with it, and the client renews
	// the token and reconnects.
	expires time.Time

	mu      sync.Mutex
	joined  bool        // in the hub, with its ping timer
	gone    bool        // the connection has ended
	closing atomic.Bool // this side sent a close frame

	receipts [][]byte // what the client sent, for its receipt goroutine

	writing atomic.Bool // the replay or a writer is writing
	// Owned by whoever is writing.
	last   int64 // id of the newest notification the client has
	frames []hub.Frame
}

// start puts the socket in the hub and starts its timer, unless the
// connection has ended already.
func (so *socket) start() bool {
	so.mu.Lock()
	defer so.mu.Unlock()
	if so.gone {
		return false
	}
	so.joined = true
	so.s.hub.Add(so.client)
	so.ping = time.AfterFunc(so.untilTick(), so.tick)
	return true
}

// ended is called once the connection has ended, for whatever reason: it
// takes the client out of the hub.
func (so *socket) ended() {
	so.mu.Lock()
	gone, joined := so.gone, so.joined
	so.gone = true
	so.mu.Unlock()
	if gone {
		return
	}
	if joined {
		so.ping.Stop()
		so.s.hub.Remove(so.client)
	}
	so.s.sockets.Done()
}

// closeWith starts the closing handshake: the close frame, then the end of
// this side's stream (RFC 6455 §7.1.1: the server closes the TCP connection
// first). The client answers with its own close frame, upon which the
// library drops the connection; one that does not answer in time is
// dropped anyway. When the client has started the handshake already, its
// close frame has had its answer and there is nothing to send.
//
// Nothing may follow the close frame: a second one is a protocol error to
// a browser, and the library would answer a client's echo of 1012 or 1013
// (codes it does not know) with a 1002 of its own.
func (so *socket) closeWith(code int, reason string) {
	if so.closing.Swap(true) {
		return
	}
	if so.conn.WriteClose(code, reason) != nil {
		so.conn.Close()
		return
	}
	closeWrite(so.conn.Conn)
	so.conn.SetReadDeadline(time.Now().Add(wsCloseWait))
}

// closeWrite ends the stream this side sends on c (shutdown(2) SHUT_WR),
// which the client reads as the end of the connection; it still reads
// what the client sends.
func closeWrite(c net.Conn) {
	switch c := c.(type) {
	case interface{ CloseWrite() error }: // *net.TCPConn, earlyConn
		c.CloseWrite()
	case syscall.Conn: // the event loop's connections
		if rc, err := c.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_WR) })
		}
	}
}

// peerClosed answers a close frame from the client with one of the same
// code, unless it is the answer to this side's.
func (so *socket) peerClosed(c *websocket.Conn, code int, reason string) {
	if so.closing.Swap(true) {
		return
	}
	if code == 1005 { // the client gave no code (RFC 6455 §7.1.5)
		c.WriteMessage(websocket.CloseMessage, nil)
		return
	}
	c.WriteClose(code, reason)
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
// Unless the socket is being written already, it goes to the writers.
func (so *socket) wake() {
	if so.writing.CompareAndSwap(false, true) {
		so.poller.submit(so)
	}
}

// drain writes what is waiting, or closes the connection when the hub
// dropped the client.
func (so *socket) drain() {
	for {
		if reason := so.client.Dropped(); reason != "" {
			so.closeWith(closeStatus[reason], reason)
			return // and stays the writer: nothing more is written
		}
		so.frames = so.client.Take(so.frames[:0])
		if len(so.frames) > 0 {
			if err := so.write(so.frames); err != nil {
				so.conn.Close()
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

// write sends frames, skipping notifications the client has already. A
// write never waits for the client: what its socket cannot take now is
// kept by the library, up to wsMaxUnsent, and sent as the client reads.
//
// The frames go out as the poller framed them once for every client
// (hub.Frame.Encoded), several in one write(2) when a burst is waiting, up
// to wsWriteChunk bytes at a time.
func (so *socket) write(frames []hub.Frame) error {
	raw, ok := so.conn.Conn.(*nbio.Conn)
	if !ok { // a connection the library writes for (see wsHijacker)
		return so.writeEach(frames)
	}
	var chunk *[]byte // frames gathered for one write, when there are several
	var first []byte  // the first frame, written as it is if it is alone
	for _, f := range frames {
		if !so.fresh(f) {
			continue
		}
		b := f.Encoded(so.poller.frame)
		switch {
		case first == nil:
			first = b
			continue
		case chunk == nil:
			chunk = writeChunks.Get().(*[]byte)
			*chunk = append((*chunk)[:0], first...)
		case len(*chunk)+len(b) > wsWriteChunk:
			if _, err := raw.Write(*chunk); err != nil {
				writeChunks.Put(chunk)
				return err
			}
			*chunk = (*chunk)[:0]
		}
		*chunk = append(*chunk, b...)
	}
	var err error
	switch {
	case chunk != nil:
		_, err = raw.Write(*chunk) // the library copies what it cannot send now
		writeChunks.Put(chunk)
	case first != nil:
		_, err = raw.Write(first)
	}
	return err
}

// writeEach sends frames one message at a time through the library.
func (so *socket) writeEach(frames []hub.Frame) error {
	for _, f := range frames {
		if !so.fresh(f) {
			continue
		}
		if err := so.conn.WriteMessage(websocket.TextMessage, f.Data); err != nil {
			return err
		}
	}
	return nil
}

// fresh reports whether f is still to be sent, and counts it as sent: a
// notification the replay sent already is not sent again.
func (so *socket) fresh(f hub.Frame) bool {
	if f.ID == 0 {
		return true
	}
	if f.ID <= so.last {
		return false
	}
	so.last = f.ID
	return true
}

// writeChunks holds the buffers that bursts are gathered in.
var writeChunks = sync.Pool{New: func() any { b := make([]byte, 0, wsWriteChunk); return &b }}

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
// access token has expired, and otherwise pings. The client's pong, like
// anything it sends, moves the read deadline on (wsPongWait); a client that
// sends nothing for that long is dropped by the event loop.
func (so *socket) tick() {
	if !so.expires.IsZero() && !so.s.now().Before(so.expires) {
		so.client.Expire()
		return
	}
	if so.conn.WriteMessage(websocket.PingMessage, nil) != nil {
		so.conn.Close()
		return
	}
	so.ping.Reset(so.untilTick())
}

// received queues what the client sent for a goroutine of the socket's
// own, which carries out read receipts one after another: it writes to the
// database, which the event loop, where this runs, must not wait for.
// A client of ours sends a receipt at a time; one that sends more than
// wsReceiptsQueued before they are done loses the rest.
func (so *socket) received(data []byte) {
	so.mu.Lock()
	defer so.mu.Unlock()
	if len(so.receipts) >= wsReceiptsQueued || so.gone {
		return
	}
	so.receipts = append(so.receipts, bytes.Clone(data))
	if len(so.receipts) == 1 {
		so.s.sockets.Add(1) // Close waits for the receipts under way
		go so.carryOut()
	}
}

// carryOut carries out the queued receipts until none is left.
func (so *socket) carryOut() {
	defer so.s.sockets.Done()
	for {
		so.mu.Lock()
		data := so.receipts[0]
		so.mu.Unlock()
		so.receipt(data)
		so.mu.Lock()
		so.receipts = so.receipts[1:]
		left := len(so.receipts)
		if left == 0 {
			so.receipts = nil
		}
		so.mu.Unlock()
		if left == 0 {
			return
		}
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
