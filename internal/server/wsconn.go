package server

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"sync"
	"time"
)

// Buffers of an upgraded connection. An idle WebSocket should cost little:
// clients send only small read receipts, and frames for the client are
// gathered by a batchWriter while they are being written, so the buffers
// that live as long as the connection can be tiny.
const (
	wsReadBuffer  = 128
	wsWriteBuffer = 64
	wsBatchFlush  = 64 << 10 // bytes gathered before a write to the socket
)

// leanUpgrade lets coder/websocket take over the connection with small
// buffers, and writes through a batchWriter, instead of the 4 KiB buffers
// net/http hands out. It also holds back the plain-text refusal
// websocket.Accept writes for a request it will not upgrade, so that the
// refusal can be answered in the error shape.
type leanUpgrade struct {
	http.ResponseWriter
	out     *batchWriter
	refused int          // the status of Accept's refusal
	reason  bytes.Buffer // and its text
}

func (u *leanUpgrade) WriteHeader(code int) {
	if code >= 400 {
		u.refused = code
		return
	}
	u.ResponseWriter.WriteHeader(code)
}

func (u *leanUpgrade) Write(b []byte) (int, error) {
	if u.refused != 0 {
		return u.reason.Write(b)
	}
	return u.ResponseWriter.Write(b)
}

func (u *leanUpgrade) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(u.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	u.out.conn = conn
	// A client may send frames in the same write as its handshake: net/http
	// has read them already. coder/websocket reads on from the connection
	// Hijack returns (it resets the reader onto it), so the bytes must be
	// in that connection, not only in the reader handed over.
	if n := brw.Reader.Buffered(); n > 0 {
		early, _ := brw.Reader.Peek(n)
		conn = &earlyConn{Conn: conn, early: bytes.Clone(early)}
	}
	return conn, bufio.NewReadWriter(bufio.NewReaderSize(conn, wsReadBuffer), bufio.NewWriterSize(u.out, wsWriteBuffer)), nil
}

// earlyConn is a connection whose first bytes were read before the upgrade;
// it gives them back before reading on.
type earlyConn struct {
	net.Conn
	early []byte
}

func (c *earlyConn) Read(p []byte) (int, error) {
	if len(c.early) > 0 {
		n := copy(p, c.early)
		c.early = c.early[n:]
		if len(c.early) == 0 {
			c.early = nil
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// batchWriter is what a connection's frames are written to. Between begin
// and end it gathers them in memory, so a burst of frames costs one write to
// the socket; otherwise (pongs, close frames) it writes straight through.
// Every write to the socket has a deadline of between timeout/2 and
// timeout.
type batchWriter struct {
	conn     net.Conn
	timeout  time.Duration
	mu       sync.Mutex
	deadline time.Time // of writes to conn
	batching bool
	buf      *[]byte
}

var batchBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func (b *batchWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.batching {
		*b.buf = append(*b.buf, p...)
		return len(p), nil
	}
	return b.write(p)
}

// write writes p to the socket. The deadline is moved on only when half of
// it has passed, which keeps a write from hanging for longer than timeout
// without resetting a timer for every frame.
func (b *batchWriter) write(p []byte) (int, error) {
	if now := time.Now(); b.deadline.Sub(now) < b.timeout/2 {
		b.deadline = now.Add(b.timeout)
		if err := b.conn.SetWriteDeadline(b.deadline); err != nil {
			return 0, err
		}
	}
	return b.conn.Write(p)
}

// begin starts gathering.
func (b *batchWriter) begin() {
	b.mu.Lock()
	b.batching = true
	b.buf = batchBuffers.Get().(*[]byte)
	b.mu.Unlock()
}

// full reports whether enough is gathered to be worth a write now.
func (b *batchWriter) full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(*b.buf) >= wsBatchFlush
}

// end writes what was gathered and stops gathering.
func (b *batchWriter) end() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batching = false
	buf := b.buf
	b.buf = nil
	var err error
	if len(*buf) > 0 {
		_, err = b.write(*buf)
	}
	if cap(*buf) <= wsBatchFlush*2 {
		*buf = (*buf)[:0]
		batchBuffers.Put(buf)
	}
	return err
}
