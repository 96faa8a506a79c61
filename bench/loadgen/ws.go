package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lesismal/nbio"
	"github.com/lesismal/nbio/nbhttp"
	"github.com/lesismal/nbio/nbhttp/websocket"
)

// The generator's WebSocket clients wait in nbio's poller, not in a
// goroutine and a blocking reader each: an idle client costs this process a
// socket and a few small structs, so tens of thousands of them are cheap and
// the generator takes less of the machine from the server it measures.

// dialTimeout bounds one client's handshake and its wait for ready.
const dialTimeout = 10 * time.Second

// dialsAtOnce is how many handshakes are under way at once: enough to keep
// the server busy, few enough not to overflow its accept queue.
const dialsAtOnce = 200

// pollers is how many goroutines read the generator's sockets, WebSocket
// and plain TCP alike, so that Perch's fan-out and its floor are read by the
// same machinery.
func pollers() int { return runtime.GOMAXPROCS(0) }

// inline runs a handler on the poller goroutine that read its frame, as the
// floor's OnData runs: the handlers here only look at a few bytes, and a hop
// to another goroutine per frame would be the generator's cost, not the
// server's.
func inline(f func()) { f() }

// wsClients is a set of clients on one nbio engine, and what they have
// seen.
type wsClients struct {
	engine  *nbhttp.Engine
	options *websocket.Options
	onFrame func(frame []byte, at time.Time) // nil: notifications are not looked at

	connected  atomic.Int64 // clients whose ready frame arrived
	pinged     atomic.Int64 // clients that received at least one ping
	pings      atomic.Int64 // pings received by all clients
	open       atomic.Int64 // clients connected now
	openPinged atomic.Int64 // clients connected now that have been pinged
}

// wsClient is one client's state. The engine runs one connection's
// handlers one at a time, so its fields need no lock.
type wsClient struct {
	ready  chan struct{} // closed when the first frame (ready) arrives
	live   bool
	pinged bool
}

func newWSClients(onFrame func(frame []byte, at time.Time)) (*wsClients, error) {
	engine := nbhttp.NewEngine(nbhttp.Config{
		NPoller:        pollers(),
		ServerExecutor: inline,
		ClientExecutor: inline,
		// A frame's payload goes back to the library's pool once its
		// handler returns (message keeps none of it), rather than to the
		// garbage collector: thousands of clients' frames are this
		// process's allocation, which the floor's clients do not make.
		ReleaseWebsocketPayload: true,
	})
	// The frames come from the server under test; checking that they are
	// UTF-8 would be a cost per frame in this process that a fan-out's
	// figure would carry and the plain-TCP floor would not.
	engine.CheckUtf8 = func([]byte) bool { return true }
	if err := engine.Start(); err != nil {
		return nil, err
	}
	ws := &wsClients{engine: engine, options: websocket.NewOptions(), onFrame: onFrame}
	// No read deadline: the server decides when a quiet client is gone.
	ws.options.KeepaliveTime = 0
	ws.options.OnMessage(ws.message)
	// nbio's default ping handler answers with a pong; one of our own
	// replaces it, so it must answer too.
	ws.options.SetPingHandler(func(c *websocket.Conn, data string) {
		cl := c.Session().(*wsClient)
		ws.pings.Add(1)
		if !cl.pinged {
			cl.pinged = true
			ws.pinged.Add(1)
			ws.openPinged.Add(1)
		}
		c.WriteMessage(websocket.PongMessage, []byte(data))
	})
	ws.options.OnClose(func(c *websocket.Conn, err error) {
		cl := c.Session().(*wsClient)
		if cl.live {
			ws.open.Add(-1)
		}
		if cl.pinged {
			ws.openPinged.Add(-1)
		}
	})
	return ws, nil
}

func (ws *wsClients) message(c *websocket.Conn, _ websocket.MessageType, data []byte) {
	at := time.Now()
	cl := c.Session().(*wsClient)
	if !cl.live {
		cl.live = true
		ws.connected.Add(1)
		ws.open.Add(1)
		close(cl.ready)
		return
	}
	if ws.onFrame != nil && bytes.HasPrefix(data, []byte(`{"type":"notification"`)) {
		ws.onFrame(data, at)
	}
}

// close ends every client.
func (ws *wsClients) close() { ws.engine.Stop() }

// connect opens n clients to base, dialsAtOnce at a time, client i signing
// in with token(i) from source address local(i) (local nil: the system's
// choice), and returns once each is live (its ready frame arrived) or has
// failed. Dials not started when ctx ends are failures too. It returns the
// number of failures and the first failure's error.
func (ws *wsClients) connect(ctx context.Context, base string, n int, token func(i int) string, local func(i int) net.Addr) (int, error) {
	u, err := url.Parse(base + "/ws")
	if err != nil {
		return n, err
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	var first sync.Once
	var firstErr error
	sem := make(chan struct{}, dialsAtOnce)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var from net.Addr
			if local != nil {
				from = local(i)
			}
			err := ctx.Err()
			if err == nil {
				err = ws.dial(u, token(i), from)
			}
			if err != nil {
				failed.Add(1)
				first.Do(func() { firstErr = err })
			}
		})
	}
	wg.Wait()
	return int(failed.Load()), firstErr
}

// dial opens one client from local and waits for its ready frame.
//
// It is websocket.Dialer's handshake with one difference: nbio v1.6.8's
// Dialer dials with net.Dial and takes no dial function, while many needs a
// source address per client, which nbhttp.ClientConn's Dial allows. The
// framing, the pings' answers and the closing stay nbio's.
func (ws *wsClients) dial(u *url.URL, token string, local net.Addr) error {
	key := make([]byte, 16)
	rand.Read(key)
	challenge := base64.StdEncoding.EncodeToString(key)
	req := &http.Request{
		Method: "GET", URL: &url.URL{Scheme: "http", Host: u.Host, Path: u.Path},
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: u.Host,
		Header: http.Header{
			"Upgrade":               {"websocket"},
			"Connection":            {"Upgrade"},
			"Sec-Websocket-Key":     {challenge},
			"Sec-Websocket-Version": {"13"},
			"Authorization":         {"Bearer " + token},
		},
	}
	cl := &wsClient{ready: make(chan struct{})}
	failed := make(chan error, 1)
	d := &net.Dialer{LocalAddr: local, Timeout: dialTimeout}
	if local != nil {
		d.Control = spreadSocket
	}
	cc := &nbhttp.ClientConn{Engine: ws.engine, Dial: d.Dial}
	cc.Do(req, func(res *http.Response, conn net.Conn, err error) {
		if err == nil {
			err = ws.upgrade(res, conn, challenge, cl)
		}
		if err != nil {
			select {
			case failed <- err:
			default:
			}
		}
	})
	timer := time.NewTimer(dialTimeout)
	defer timer.Stop()
	select {
	case <-cl.ready:
		return nil
	case err := <-failed:
		cc.CloseWithError(err)
		return err
	case <-timer.C:
		err := errors.New("no ready frame within " + dialTimeout.String())
		cc.CloseWithError(err)
		return err
	}
}

// spreadSocket prepares the socket of a client with a source address of its
// own. IP_BIND_ADDRESS_NO_PORT (Linux 4.2) has it take its port at connect,
// where any port not already used towards the same server will do, rather
// than at bind, where the kernel looks for one that no socket of the address
// uses. A linger of zero closes it with a reset, leaving no TIME_WAIT that
// would hold its port for a minute after the run: a run right after another
// would find the ports of its addresses still taken.
func spreadSocket(_, _ string, c syscall.RawConn) error {
	const ipBindAddressNoPort = 24 // linux/in.h
	var err error
	if cerr := c.Control(func(fd uintptr) {
		err = errors.Join(
			syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1),
			syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1}))
	}); cerr != nil {
		return cerr
	}
	return err
}

// upgrade checks the server's answer to the handshake and hands the
// connection from the HTTP parser to a WebSocket one, as
// websocket.Dialer.DialContext does. It runs on the poller goroutine, before
// any byte after the answer is parsed.
func (ws *wsClients) upgrade(res *http.Response, conn net.Conn, challenge string, cl *wsClient) error {
	if res.StatusCode != http.StatusSwitchingProtocols {
		return fmt.Errorf("handshake: status %d", res.StatusCode)
	}
	if res.Header.Get("Sec-Websocket-Accept") != acceptKey(challenge) ||
		!strings.EqualFold(res.Header.Get("Upgrade"), "websocket") {
		return errors.New("handshake: not a WebSocket answer")
	}
	nbc, ok := conn.(*nbio.Conn)
	if !ok {
		return fmt.Errorf("handshake: connection is a %T", conn)
	}
	parser, ok := nbc.Session().(*nbhttp.Parser)
	if !ok {
		return errors.New("handshake: no HTTP parser on the connection")
	}
	wsc := websocket.NewClientConn(ws.options, conn, "", false, false)
	wsc.Engine = parser.Engine
	wsc.Execute = parser.Execute
	wsc.SetSession(cl)
	parser.ParserCloser = wsc
	nbc.SetSession(wsc)
	return nil
}

// acceptKey is the Sec-WebSocket-Accept a server answers challenge with
// (RFC 6455 §4.2.2).
func acceptKey(challenge string) string {
	h := sha1.Sum([]byte(challenge + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// waitPinged waits until every client still connected has received a ping
// (the server pings each every 30 s), or for d at most.
func (ws *wsClients) waitPinged(d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(200 * time.Millisecond) {
		if ws.openPinged.Load() >= ws.open.Load() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
