// Package wsloop holds this instance's WebSocket connections in an event
// loop (lesismal/nbio): an idle connection is a descriptor in epoll and a
// few small structs, not a goroutine. The /ws handler authenticates a
// request and hands it to Loop.Upgrade, with the client's audience; the
// loop joins it to the hub, writes what the hub queues for it, pings it,
// and hands what the client sends to the handler's callback.
package wsloop

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/lesismal/nbio"
	"github.com/lesismal/nbio/logging"
	"github.com/lesismal/nbio/nbhttp"
	"github.com/lesismal/nbio/nbhttp/websocket"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/hub"
)

// Limits of the loop that holds upgraded connections.
const (
	// Bytes a connection may have waiting to be sent beyond what its
	// socket's kernel buffer holds; past that the client is too slow, and
	// the connection is cut (a close frame could not reach it anyway).
	wsMaxUnsent = 1 << 20
	// Frames a connection that did not go to the loop (see hijacker)
	// may have queued in the library's writer.
	wsMaxQueued = 4096
	// Sockets a writer takes from the ready list at a time.
	wsWriterBatch = 64
	// Bytes of waiting frames gathered into one write.
	wsWriteChunk = 64 << 10
)

// Loop holds this instance's upgraded WebSocket connections in
// nbio's event loop: an idle connection is a file descriptor in epoll and a
// few small structs, not a goroutine. A goroutine is taken only while a
// connection's frames are being read (the library's handler pool) or
// written (the writers below, a fixed number of them).
type Loop struct {
	hub     *hub.Hub
	now     func() time.Time
	receive func(a *perch.Audience, data []byte)

	engine   *nbhttp.Engine
	upgrader websocket.Upgrader // the settings each connection's is copied from

	// The loop's settle barrier (see settle): a socket pair whose one end
	// is in the loop.
	barrier  sync.Mutex
	knock    net.Conn      // written to by settle
	answered chan struct{} // by the loop, once it reads the knock
	done     chan struct{} // closed by stop

	// framing is the library connection frame writes through, over out.
	framing struct {
		sync.Mutex
		conn *websocket.Conn
		out  frameBuffer
	}

	mu      sync.Mutex
	ready   []*Socket // sockets with frames waiting, for the writers
	wake    *sync.Cond
	stopped bool
	writers sync.WaitGroup

	sockets  sync.WaitGroup // connections being served, and their receipts
	stopOnce sync.Once
}

var quietLibrary sync.Once

// Start starts the event loop and its writers. Connections join h; now is
// the clock their access tokens expire by (nil: time.Now); receive is given
// each message a client sends, with the client's audience, one after
// another per connection on a goroutine of the connection's own (never in
// the event loop, which must not wait for the database), and a client that
// sends more than a few before they are done loses the rest. Stop ends
// them.
func Start(h *hub.Hub, now func() time.Time, receive func(a *perch.Audience, data []byte)) (*Loop, error) {
	if now == nil {
		now = time.Now
	}
	quietLibrary.Do(func() { logging.SetLogger(libraryLog{}) })
	engine := nbhttp.NewEngine(nbhttp.Config{
		Name: "perch-ws",
		// One event loop: it only reads what clients send (pongs and
		// receipts), and one loop is what settle has to wait for.
		NPoller:                 1,
		MaxWriteBufferSize:      wsMaxUnsent,
		ReleaseWebsocketPayload: true,
		SupportServerOnly:       true,
		// What a client sends is handled in the event loop itself, where
		// the library also closes a connection whose client hung up. A
		// connection closed elsewhere (a pool goroutine answering a close
		// frame, say) frees its descriptor while the loop may still hold
		// an event of it, which the loop would then apply to a new
		// connection given the same descriptor. Read receipts, which write
		// to the database, are handed to a goroutine (socket.receipt).
		ServerExecutor: func(f func()) { f() },
	})
	engine.Engine.OnData(checkMasked)
	if err := engine.Start(); err != nil {
		return nil, err
	}
	p := &Loop{hub: h, now: now, receive: receive, engine: engine, answered: make(chan struct{}, 1), done: make(chan struct{})}
	if err := p.startBarrier(); err != nil {
		engine.Stop()
		return nil, err
	}
	p.wake = sync.NewCond(&p.mu)
	p.upgrader = *websocket.NewUpgrader()
	p.upgrader.Engine = engine
	p.upgrader.MessageLengthLimit = wsReadLimit
	p.upgrader.KeepaliveTime = wsPongWait // every frame from the client, pongs included, moves the read deadline on
	p.upgrader.CheckOrigin = nil          // checked by the handler, before the upgrade, in its error shape
	p.upgrader.BlockingModAsyncWrite = true
	p.upgrader.BlockingModSendQueueMaxSize = wsMaxQueued
	for range runtime.GOMAXPROCS(0) {
		p.writers.Go(p.write)
	}
	return p, nil
}

// checkMasked is the loop's handler of what a connection sends: what the
// library's would do (hand the bytes to the connection's own handler), once
// the frames in them are known to be masked. On an unmasked frame the
// connection is closed with 1002 (RFC 6455 §5.1), and nothing that came
// with it or comes after is read: a client that breaks the protocol is not
// listened to further. It runs in the loop, the one goroutine that reads the
// loop's connections, which is what the state kept in the connection's
// session (clientFrames) relies on.
func checkMasked(c *nbio.Conn, data []byte) {
	if ws, ok := c.Session().(*websocket.Conn); ok {
		frames, _ := ws.Session().(*clientFrames)
		if frames == nil {
			frames = &clientFrames{}
			ws.SetSession(frames)
		}
		if frames.refused {
			return
		}
		if !frames.masked(data) {
			// Written as one frame, which no other write interleaves with;
			// the client reads it and then the end of the stream, and the
			// connection ends once the client closes its side or the
			// deadline passes.
			c.Write(unmaskedClose)
			closeWrite(c)
			c.SetReadDeadline(time.Now().Add(wsCloseWait))
			return
		}
	}
	c.DataHandler()(c, data)
}

// startBarrier puts one end of a socket pair in the loop, for settle, and
// has every connection added to the loop settle first.
//
// Why: the loop takes events from epoll in batches, by descriptor number.
// A connection closed outside the loop (a write that finds the client gone
// closes it in the writing goroutine) frees its number while the loop may
// still hold an event of it, a hang-up say; a new connection given the same
// number and added before the loop gets to that event would be closed by
// it. Adding a connection only once every batch taken before its number
// was given out is done makes that impossible.
func (p *Loop) startBarrier() error {
	inside, knock, err := barrierPair()
	if err != nil {
		return err
	}
	p.knock = knock
	nbc, err := nbio.NBConn(inside)
	if err != nil {
		p.knock.Close()
		return err
	}
	nbc.OnData(func(*nbio.Conn, []byte) {
		select {
		case p.answered <- struct{}{}:
		default:
		}
	})
	if _, err := p.engine.AddConn(nbc); err != nil {
		p.knock.Close()
		return err
	}
	p.engine.Engine.OnOpen(func(c *nbio.Conn) {
		if c != nbc {
			p.settle()
		}
	})
	return nil
}

// settle returns once the loop has dealt with every event it had taken
// when settle was called: it knocks on the pair and waits for the loop to
// read the knock, which comes in a later batch.
func (p *Loop) settle() {
	p.barrier.Lock()
	defer p.barrier.Unlock()
	if _, err := p.knock.Write([]byte{0}); err != nil {
		return
	}
	select {
	case <-p.answered:
	case <-p.done:
	}
}

// frame returns data as the WebSocket text message the library would write:
// a server's frames are not masked, so these bytes are the same for every
// connection, and one notification is framed once for all its clients.
func (p *Loop) frame(data []byte) []byte {
	f := &p.framing
	f.Lock()
	defer f.Unlock()
	if f.conn == nil {
		f.conn = websocket.NewServerConn(&p.upgrader, &f.out, "", false, false)
	}
	f.out.bytes = make([]byte, 0, len(data)+wsMaxHeader)
	f.conn.WriteMessage(websocket.TextMessage, data)
	framed := f.out.bytes
	f.out.bytes = nil
	return framed
}

// wsMaxHeader is the longest header of a server's (unmasked) frame.
const wsMaxHeader = 10

// frameBuffer is the connection frame has the library write to.
type frameBuffer struct {
	net.Conn // nil: the library's writer only calls Write
	bytes    []byte
}

func (b *frameBuffer) Write(p []byte) (int, error) {
	b.bytes = append(b.bytes, p...)
	return len(p), nil
}

// submit hands so to a writer: it has frames waiting or must be closed.
func (p *Loop) submit(so *Socket) {
	p.mu.Lock()
	p.ready = append(p.ready, so)
	p.mu.Unlock()
	p.wake.Signal()
}

// write is one writer: it drains sockets as they become ready. Writes to
// the loop's connections never block (what the socket cannot take now
// waits in the library, up to wsMaxUnsent), so two writers keep up with
// every socket of the instance, and a slow one holds up no other.
func (p *Loop) write() {
	var batch []*Socket
	for {
		p.mu.Lock()
		for len(p.ready) == 0 && !p.stopped {
			p.wake.Wait()
		}
		if len(p.ready) == 0 {
			p.mu.Unlock()
			return
		}
		// A few at a time: one event to many sockets is shared between
		// the writers, without a trip through the lock for each socket.
		n := min(len(p.ready), wsWriterBatch)
		batch = append(batch[:0], p.ready[:n]...)
		clear(p.ready[:n])
		if p.ready = p.ready[n:]; len(p.ready) == 0 {
			p.ready = nil // let a large fan-out's queue go
		}
		p.mu.Unlock()
		// Let whatever is delivering run first: a group commit's
		// notifications reach the hub one by one, and a socket drained
		// after them all gets them in one write rather than one each.
		runtime.Gosched()
		for _, so := range batch {
			so.Drain()
		}
		clear(batch)
	}
}

// Wait returns once every connection has ended and its read receipts are
// carried out, or ctx ends.
func (p *Loop) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { p.sockets.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop ends the writers, once what is ready is written, and the event
// loop, which closes whatever connections are left. Calls after the first
// do nothing.
func (p *Loop) Stop() { p.stopOnce.Do(p.stop) }

func (p *Loop) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.wake.Broadcast()
	p.writers.Wait()
	close(p.done)
	p.engine.Stop()
	p.knock.Close()
}

// libraryLog sends nbio's log lines to slog: its errors as warnings (a
// client's broken frame is not this server's error), the rest as debug.
type libraryLog struct{}

func (libraryLog) Debug(string, ...any)         {}
func (libraryLog) Info(string, ...any)          {}
func (libraryLog) Warn(format string, v ...any) { slog.Warn("websocket: " + fmt.Sprintf(format, v...)) }
func (libraryLog) Error(format string, v ...any) {
	slog.Warn("websocket: " + fmt.Sprintf(format, v...))
}
