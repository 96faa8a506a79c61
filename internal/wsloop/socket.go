package wsloop

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lesismal/nbio"
	"github.com/lesismal/nbio/nbhttp/websocket"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/hub"
)

// WebSocket settings (docs/DESIGN.md, The WebSocket protocol).
const (
	wsQueue          = 4096 // frames a client may fall behind before it is cut off
	wsPingEvery      = 30 * time.Second
	wsPongWait       = 60 * time.Second
	wsReceiptsQueued = 16
	wsReadLimit      = 64 << 10
)

// Close codes (RFC 6455 §7.4). StatusTokenExpired closes a socket whose
// access token expired: renew the token and reconnect. It is a private code
// (§7.4.2), since 1008 means the credential is gone for good (revoked) and
// reconnecting cannot help.
const (
	StatusGoingAway      = 1001
	StatusProtocolError  = 1002
	StatusPolicy         = 1008
	StatusInternalError  = 1011
	StatusServiceRestart = 1012
	StatusTryAgainLater  = 1013
	StatusTokenExpired   = 4401
	// How long a closing socket waits for the client's close frame
	// before it drops the connection.
	wsCloseWait = 5 * time.Second
)

// closeStatus is how a connection is closed for each reason the hub drops a
// client; all but 1008 invite the client to reconnect.
var closeStatus = map[string]int{
	hub.ReasonSlow:     StatusTryAgainLater,
	hub.ReasonGrants:   StatusServiceRestart,
	hub.ReasonShutdown: StatusGoingAway,
	hub.ReasonLost:     StatusServiceRestart,
	hub.ReasonRevoked:  StatusPolicy,
	hub.ReasonExpired:  StatusTokenExpired,
	// An expired API token is gone for good, as a revoked one is.
	hub.ReasonTokenExpired: StatusPolicy,
}

// Session is who an authenticated connection is for.
type Session struct {
	Audience              perch.Audience
	SessionID, APITokenID string
	// Expires is when the access or API token the connection was opened
	// with ends (zero for an API token without expiry): the connection
	// ends with it, and the client renews an access token and reconnects
	// (4401); an API token's end is final (1008).
	Expires time.Time
}

// Refusal is Upgrade's error for a request the library would not upgrade,
// with the status and text it would have answered; nothing was written, so
// the handler answers it in its own error shape.
type Refusal struct {
	Status int
	Reason string
}

func (r *Refusal) Error() string { return "websocket handshake refused: " + r.Reason }

// ErrHijacked is Upgrade's error when the upgrade failed after the
// connection was taken from net/http: it is gone, and nothing can be
// answered.
var ErrHijacked = errors.New("websocket: the upgrade failed after the connection was taken")

// Upgrade upgrades r and moves the connection into the loop for sess. The
// socket is not in the hub yet, and its writes wait: the caller Starts it,
// replays what it must through Write, then Drains it, after which the
// loop's writers write whatever the hub queues.
func (p *Loop) Upgrade(w http.ResponseWriter, r *http.Request, sess Session) (*Socket, error) {
	so := &Socket{loop: p, expires: sess.Expires}
	so.writing.Store(true) // the replay writes first; live frames wait
	so.client = hub.NewClient(sess.Audience, wsQueue, so.wake)
	so.client.SessionID, so.client.APITokenID = sess.SessionID, sess.APITokenID
	up := p.upgrader // this connection's handlers
	up.OnMessage(func(_ *websocket.Conn, _ websocket.MessageType, data []byte) { so.received(data) })
	up.SetCloseHandler(so.peerClosed)
	up.OnClose(func(*websocket.Conn, error) { so.ended() })
	p.sockets.Add(1)
	h := &hijacker{ResponseWriter: w}
	conn, err := up.UpgradeAndTransferConnToPoller(h, r, nil)
	if err != nil {
		so.ended()
		switch {
		case h.refused != 0:
			return nil, &Refusal{Status: h.refused, Reason: h.reason.String()}
		case h.hijacked:
			return nil, errors.Join(ErrHijacked, err)
		}
		return nil, err
	}
	conn.SetReadDeadline(time.Now().Add(wsPongWait)) // until the first pong
	so.conn = conn
	return so, nil
}

// Socket is one connected client. While idle it is a file descriptor in
// the event loop, the library's connection, its hub entry and a ping timer:
// no goroutine. Frames are written by the loop's writers when the hub
// says they are waiting.
type Socket struct {
	loop    *Loop
	conn    *websocket.Conn
	client  *hub.Client
	ping    *time.Timer
	expires time.Time

	mu      sync.Mutex
	joined  bool        // in the hub, with its ping timer
	gone    bool        // the connection has ended
	closing atomic.Bool // this side sent a close frame

	receipts [][]byte // what the client sent, for its receive goroutine

	writing atomic.Bool // the replay or a writer is writing
	// Owned by whoever is writing.
	last   int64 // id of the newest notification the client has
	frames []hub.Frame
}

// Client is the socket's entry in the hub.
func (so *Socket) Client() *hub.Client { return so.client }

// Start puts the socket in the hub and starts its timer, unless the
// connection has ended already.
func (so *Socket) Start() bool {
	so.mu.Lock()
	defer so.mu.Unlock()
	if so.gone {
		return false
	}
	so.joined = true
	so.loop.hub.Add(so.client)
	so.ping = time.AfterFunc(so.untilTick(), so.tick)
	return true
}

// ended is called once the connection has ended, for whatever reason: it
// takes the client out of the hub.
func (so *Socket) ended() {
	so.mu.Lock()
	gone, joined := so.gone, so.joined
	so.gone = true
	so.mu.Unlock()
	if gone {
		return
	}
	if joined {
		so.ping.Stop()
		so.loop.hub.Remove(so.client)
	}
	so.loop.sockets.Done()
}

// CloseWith starts the closing handshake: the close frame, then the end of
// this side's stream (RFC 6455 §7.1.1: the server closes the TCP connection
// first). The client answers with its own close frame, upon which the
// library drops the connection; one that does not answer in time is
// dropped anyway. When the client has started the handshake already, its
// close frame has had its answer and there is nothing to send.
//
// Nothing may follow the close frame: a second one is a protocol error to
// a browser, and the library would answer a client's echo of 1012 or 1013
// (codes it does not know) with a 1002 of its own.
func (so *Socket) CloseWith(code int, reason string) {
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
			rc.Control(shutdownWrite)
		}
	}
}

// peerClosed answers a close frame from the client with one of the same
// code, unless it is the answer to this side's.
func (so *Socket) peerClosed(c *websocket.Conn, code int, reason string) {
	if so.closing.Swap(true) {
		return
	}
	if code == 1005 { // the client gave no code (RFC 6455 §7.1.5)
		c.WriteMessage(websocket.CloseMessage, nil)
		return
	}
	c.WriteClose(code, reason)
}

// SetLast counts every notification up to id as had by the client, for
// the replay: frames of them are not written again.
func (so *Socket) SetLast(id int64) { so.last = id }

// Last is the id of the newest notification written to the client.
func (so *Socket) Last() int64 { return so.last }

// wake is the hub's notify: frames are waiting, or the client was dropped.
// Unless the socket is being written already, it goes to the writers.
func (so *Socket) wake() {
	if so.writing.CompareAndSwap(false, true) {
		so.loop.submit(so)
	}
}

// Drain writes what is waiting, or closes the connection when the hub
// dropped the client. The caller that replays calls it once the replay is
// written; from then on the loop's writers call it.
func (so *Socket) Drain() {
	for {
		if reason := so.client.Dropped(); reason != "" {
			so.CloseWith(closeStatus[reason], reason)
			return // and stays the writer: nothing more is written
		}
		so.frames = so.client.Take(so.frames[:0])
		if len(so.frames) > 0 {
			if err := so.Write(so.frames); err != nil {
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

// Write sends frames, skipping notifications the client has already. A
// write never waits for the client: what its socket cannot take now is
// kept by the library, up to wsMaxUnsent, and sent as the client reads.
// Only the writer may call it: the replay before Drain, then Drain.
//
// The frames go out as the loop framed them once for every client
// (hub.Frame.Encoded), several in one write(2) when a burst is waiting, up
// to wsWriteChunk bytes at a time.
func (so *Socket) Write(frames []hub.Frame) error {
	raw, ok := so.conn.Conn.(*nbio.Conn)
	if !ok { // a connection the library writes for (see hijacker)
		return so.writeEach(frames)
	}
	var chunk *[]byte // frames gathered for one write, when there are several
	var first []byte  // the first frame, written as it is if it is alone
	for _, f := range frames {
		if !so.fresh(f) {
			continue
		}
		b := f.Encoded(so.loop.frame)
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
func (so *Socket) writeEach(frames []hub.Frame) error {
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
func (so *Socket) fresh(f hub.Frame) bool {
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
func (so *Socket) untilTick() time.Duration {
	d := wsPingEvery
	if !so.expires.IsZero() {
		d = min(d, so.expires.Sub(so.loop.now()))
	}
	return max(d, 0)
}

// tick runs on the connection's one timer: it ends the connection when its
// access token has expired, and otherwise pings. The client's pong, like
// anything it sends, moves the read deadline on (wsPongWait); a client that
// sends nothing for that long is dropped by the event loop.
func (so *Socket) tick() {
	if !so.expires.IsZero() && !so.loop.now().Before(so.expires) {
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
// own, which hands it to the loop's receive one message after another: a read
// receipt writes to the database, which the event loop, where this runs,
// must not wait for. A client of ours sends a receipt at a time; one that
// sends more than wsReceiptsQueued before they are done loses the rest.
func (so *Socket) received(data []byte) {
	so.mu.Lock()
	defer so.mu.Unlock()
	if len(so.receipts) >= wsReceiptsQueued || so.gone || so.loop.receive == nil {
		return
	}
	so.receipts = append(so.receipts, bytes.Clone(data))
	if len(so.receipts) == 1 {
		so.loop.sockets.Add(1) // Wait waits for the receipts under way
		go so.carryOut()
	}
}

// carryOut hands the queued messages to receive until none is left.
func (so *Socket) carryOut() {
	defer so.loop.sockets.Done()
	for {
		so.mu.Lock()
		data := so.receipts[0]
		so.mu.Unlock()
		so.loop.receive(&so.client.Audience, data)
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
