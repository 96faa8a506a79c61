package server

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

// unmaskedTextFrame is a text frame as only a server may send it: FIN,
// opcode 1, no mask. From a client it is a protocol error.
func unmaskedTextFrame(payload string) []byte {
	return append([]byte{0x81, byte(len(payload))}, payload...)
}

// wantProtocolErrorClose reads what the server sends until it ends the
// connection, and fails t unless that was one close frame with 1002.
func wantProtocolErrorClose(t *testing.T, s *rawSocket) {
	t.Helper()
	closes := s.closes()
	if len(closes) != 1 || len(closes[0]) < 2 || binary.BigEndian.Uint16(closes[0]) != 1002 {
		t.Fatalf("close frames from the server: %q, want one with 1002 and then the end of the connection", closes)
	}
}

// TestAnUnmaskedClientFrameClosesWithProtocolError: RFC 6455 §5.1, a server
// must close the connection on a frame from the client that is not masked;
// it says why with 1002, and the client leaves the hub.
func TestAnUnmaskedClientFrameClosesWithProtocolError(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ts := a.live()
	ada := a.register("Ada")
	s := dialRaw(t, ts, ada.Access)
	s.conn.Write(unmaskedTextFrame(`{"type":"read","data":{"ids":["1"]}}`))
	wantProtocolErrorClose(t, s)
	testenv.Eventually(t, 10*time.Second, func() bool { return a.srv.hub.Len() == 0 }, "the client is still in the hub")
}

// TestAnUnmaskedFrameSentWithTheHandshakeClosesWithProtocolError: a frame
// in the same TCP write as the upgrade request is read apart from the event
// loop (see wsHijacker); it is checked all the same.
func TestAnUnmaskedFrameSentWithTheHandshakeClosesWithProtocolError(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ts := a.live()
	ada := a.register("Ada")
	var key [16]byte
	rand.Read(key[:])
	host := strings.TrimPrefix(ts.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := fmt.Sprintf("GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\nAuthorization: Bearer %s\r\n\r\n",
		host, base64.StdEncoding.EncodeToString(key[:]), ada.Access)
	if _, err := conn.Write(append([]byte(req), unmaskedTextFrame(`{"type":"read","data":{"ids":["1"]}}`)...)); err != nil { // one write
		t.Fatal(err)
	}
	s := &rawSocket{t: t, conn: conn, r: bufio.NewReader(conn)}
	if res, err := http.ReadResponse(s.r, nil); err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", res, err)
	}
	wantProtocolErrorClose(t, s)
}
