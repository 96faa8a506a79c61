package wsloop

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
)

// hijacker is the ResponseWriter the WebSocket library upgrades through.
// It holds back the plain-text refusal the library would write for a
// request it will not upgrade, so that the refusal is answered in the error
// shape, and it keeps the frames a client sent in the same write as its
// handshake.
type hijacker struct {
	http.ResponseWriter
	refused  int          // the status of the library's refusal
	reason   bytes.Buffer // and its text
	hijacked bool         // the connection is the library's now
}

func (h *hijacker) WriteHeader(code int) {
	if code >= 400 {
		h.refused = code
		return
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *hijacker) Write(b []byte) (int, error) {
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
func (h *hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
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
// it gives them back before reading on. The library reads it with a
// goroutine of its own, not in the event loop, so it checks here that the
// client's frames are masked (see clientFrames).
type earlyConn struct {
	net.Conn
	early  []byte
	frames clientFrames
}

// errUnmasked ends the library's reading of a connection whose client sent
// an unmasked frame.
var errUnmasked = errors.New("websocket: a client frame is not masked")

func (c *earlyConn) Read(p []byte) (n int, err error) {
	if len(c.early) > 0 {
		n = copy(p, c.early)
		c.early = c.early[n:]
		if len(c.early) == 0 {
			c.early = nil
		}
	} else {
		n, err = c.Conn.Read(p)
	}
	if !c.frames.masked(p[:n]) {
		// One write of the whole frame, which no other write interleaves
		// with; the library closes the connection on the error.
		c.Conn.Write(unmaskedClose)
		closeWrite(c.Conn)
		return 0, errUnmasked
	}
	return n, err
}

// CloseWrite ends the stream this side sends, as the connection's own does.
func (c *earlyConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// clientFrames follows the frames a client sends, across reads, to check
// that each is masked: RFC 6455 §5.1 says a server must close the
// connection on a frame that is not, and the library does not check. It
// reads each frame's header as it comes and skips its payload; the library
// parses the same bytes afterwards.
type clientFrames struct {
	header  [14]byte // the header being read: 2 bytes, up to 8 of length, 4 of mask
	have    int      // bytes of it read so far
	payload uint64   // bytes of the current frame's payload still to come
	refused bool     // an unmasked frame came: nothing more is read
}

// masked reads data and reports whether every frame begun so far is
// masked; once one is not, it reports false for good.
func (f *clientFrames) masked(data []byte) bool {
	for len(data) > 0 && !f.refused {
		if f.payload > 0 {
			n := min(f.payload, uint64(len(data)))
			f.payload -= n
			data = data[n:]
			continue
		}
		f.header[f.have] = data[0]
		f.have++
		data = data[1:]
		if f.have < 2 {
			continue
		}
		if f.header[1]&0x80 == 0 { // the mask bit
			f.refused = true
			break
		}
		size := 2 + 4
		switch f.header[1] & 0x7f {
		case 126:
			size += 2
		case 127:
			size += 8
		}
		if f.have < size {
			continue
		}
		switch n := f.header[1] & 0x7f; n {
		case 126:
			f.payload = uint64(binary.BigEndian.Uint16(f.header[2:4]))
		case 127:
			f.payload = binary.BigEndian.Uint64(f.header[2:10])
		default:
			f.payload = uint64(n)
		}
		f.have = 0
	}
	return !f.refused
}

// unmaskedClose is the close frame that answers an unmasked frame: 1002,
// protocol error (RFC 6455 §7.4.1), unmasked as a server's frames are.
var unmaskedClose = func() []byte {
	reason := "frames from a client must be masked"
	f := []byte{0x88, byte(2 + len(reason))}
	f = binary.BigEndian.AppendUint16(f, StatusProtocolError)
	return append(f, reason...)
}()
