package server

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
)

// wsHijacker is the ResponseWriter the WebSocket library upgrades through.
// It holds back the plain-text refusal the library would write for a
// request it will not upgrade, so that the refusal is answered in the error
// shape, and it keeps the frames a client sent in the same write as its
// handshake.
type wsHijacker struct {
	http.ResponseWriter
	refused  int          // the status of the library's refusal
	reason   bytes.Buffer // and its text
	hijacked bool         // the connection is the library's now
}

func (h *wsHijacker) WriteHeader(code int) {
	if code >= 400 {
		h.refused = code
		return
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *wsHijacker) Write(b []byte) (int, error) {
	if h.refused != 0 {
		return h.reason.Write(b)
	}
	return h.ResponseWriter.Write(b)
}

// Hijack hands over the plain connection, which the library moves into its
// event loop. A client may have sent frames in the same write as its
// handshake, which net/http has read already: the connection then goes
// over with those bytes in front (earlyConn), which the library cannot
// move into the event loop, so it reads that one connection with a
// goroutine of its own. Clients that wait for the handshake's answer, as
// RFC 6455 §4.1 says they must, never cost one.
func (h *wsHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.hijacked = true
	if n := brw.Reader.Buffered(); n > 0 {
		early, _ := brw.Reader.Peek(n)
		conn = &earlyConn{Conn: conn, early: bytes.Clone(early)}
	}
	return conn, brw, nil
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

// CloseWrite ends the stream this side sends, as the connection's own does.
func (c *earlyConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
