package server

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// maskedTextFrame is a client-to-server text frame (RFC 6455 §5.2): FIN,
// opcode 1, masked, as every client frame must be.
func maskedTextFrame(payload []byte) []byte { return maskedFrame(1, payload) }

// maskedFrame is a client-to-server frame of opcode with FIN set.
func maskedFrame(opcode byte, payload []byte) []byte {
	if len(payload) > 125 {
		panic("test frames are short")
	}
	var mask [4]byte
	rand.Read(mask[:])
	f := append([]byte{0x80 | opcode, 0x80 | byte(len(payload))}, mask[:]...)
	for i, b := range payload {
		f = append(f, b^mask[i%4])
	}
	return f
}

// handshakeHeaders make a request a WebSocket handshake, for a.call.
var handshakeHeaders = []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}

// TestFramesSentWithTheHandshakeAreKept: a client that writes its upgrade
// request and its first frame in one TCP write has the frame read, not
// dropped or mangled.
func TestFramesSentWithTheHandshakeAreKept(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ts := a.live()
	ada := a.register("Ada")
	id := a.post(a.webhookToken(ada, "user", ""), "unread")
	watcher := dial(t, ts, ada.Access, "")
	watcher.ready()

	var key [16]byte
	rand.Read(key[:])
	receipt, _ := json.Marshal(map[string]any{"type": "read", "data": map[string][]string{"ids": {id}}})
	req := "GET /ws HTTP/1.1\r\nHost: " + strings.TrimPrefix(ts.URL, "http://") + "\r\n" +
		"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
		"Sec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key[:]) + "\r\n" +
		"Authorization: Bearer " + ada.Access + "\r\n\r\n"
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(append([]byte(req), maskedTextFrame(receipt)...)); err != nil { // one write
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", res, err)
	}
	// The receipt was read: the user's other client hears of it.
	for {
		f := watcher.next()
		if f.Type != "read" {
			continue
		}
		var d struct{ IDs []string }
		if json.Unmarshal(f.Data, &d) != nil || len(d.IDs) != 1 || d.IDs[0] != id {
			t.Fatalf("read frame %s", f.Data)
		}
		return
	}
}

// TestHandshakesCountAgainstTheUsersLimit: a WebSocket handshake spends the
// user's allowance like any request, and a user's concurrent replays are
// bounded.
func TestHandshakesCountAgainstTheUsersLimit(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) { o.Limits.User = perch.Limit{Count: 3, Period: time.Hour} })
	ts := a.live()
	ada := a.register("Ada")
	for range 3 {
		dial(t, ts, ada.Access, "").ready()
	}
	res := expect(t, a.call("GET", "/ws", ada.Access, nil), 429)
	if res.Header.Get("X-RateLimit-Remaining") != "0" || res.Header.Get("Retry-After") == "" {
		t.Fatalf("headers %v", res.Header)
	}
}

// pending is how many of user's replays are under way or waiting.
func (rs *replaySlots) pending(user string) int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if u := rs.users[user]; u != nil {
		return u.refs
	}
	return 0
}

// TestConcurrentReplaysAreBounded: a user's replays beyond the bound wait
// for a turn, and are refused when none comes in time.
func TestConcurrentReplaysAreBounded(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ts := a.live()
	ada := a.register("Ada")
	for range wsReplaysPerUser { // replays under way
		if err := a.srv.replays.acquire(t.Context(), ada.ID); err != nil {
			t.Fatal(err)
		}
	}
	a.srv.replays.wait = time.Millisecond
	res := expect(t, a.call("GET", "/ws?since=0", ada.Access, nil, handshakeHeaders...), 429)
	if res.Header.Get("Retry-After") == "" {
		t.Fatalf("no Retry-After: %v", res.Header)
	}
	dial(t, ts, ada.Access, "").ready() // no replay, no slot needed

	// One waits for its turn, and has it when a replay ends.
	a.srv.replays.wait = time.Minute
	waiting := make(chan *wsConn)
	go func() { waiting <- dial(t, ts, ada.Access, "0") }()
	for a.srv.replays.pending(ada.ID) != wsReplaysPerUser+1 { // the dial is waiting
		time.Sleep(time.Millisecond)
	}
	a.srv.replays.release(ada.ID)
	(<-waiting).ready()
	a.srv.replays.release(ada.ID)
	for a.srv.replays.underWay() != 0 { // the replay ends once ready is sent
		time.Sleep(time.Millisecond)
	}
}

// TestResumingFromAnUnknownIDReplaysWithAGap: a since newer than any id the
// server gave (another server's, or before a restore) must not silence the
// connection until the ids catch up.
func TestResumingFromAnUnknownIDReplaysWithAGap(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ts := a.live()
	ada := a.register("Ada")
	hook := a.webhookToken(ada, "user", "")
	first := a.post(hook, "kept")
	c := dial(t, ts, ada.Access, "999999")
	if n := c.next().notification(t); n.ID != first {
		t.Fatalf("replayed %v, want the oldest kept", n)
	}
	if replayed, gap := c.ready(); replayed != 1 || !gap {
		t.Fatalf("ready: replayed %d, gap %v; want 1, true", replayed, gap)
	}
	a.post(hook, "live")
	if n := c.next().notification(t); n.Title != "live" {
		t.Fatalf("got %v, want the live notification", n)
	}
}

// TestHandshakeRefusalsAreInTheErrorShape: a request to /ws that is not a
// WebSocket handshake, speaks another version, or comes from another site's
// page is refused before the upgrade in the error shape, like any error.
func TestHandshakeRefusalsAreInTheErrorShape(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ada := a.register("Ada")
	var key [16]byte
	rand.Read(key[:])
	handshake := func(more ...string) []string {
		return append([]string{"Connection", "Upgrade", "Upgrade", "websocket",
			"Sec-WebSocket-Key", base64.StdEncoding.EncodeToString(key[:])}, more...)
	}
	res := expect(t, a.call("GET", "/ws", ada.Access, nil), 426)
	if !strings.Contains(res.ErrorMessage(), "WebSocket client") {
		t.Fatalf("message %q does not say what is missing", res.ErrorMessage())
	}
	expect(t, a.call("GET", "/ws", ada.Access, nil, handshake("Sec-WebSocket-Version", "8")...), 426)
	expect(t, a.call("GET", "/ws", ada.Access, nil, handshake("Sec-WebSocket-Version", "13", "Origin", "https://evil.example")...), 403)
	// A key that is not 16 bytes of base64 is refused in the error shape
	// too.
	bad := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "short"}
	expect(t, a.call("GET", "/ws", ada.Access, nil, bad...), 400)
}

// rawSocket is a WebSocket client made by hand, to see every frame the
// server sends, control frames included.
type rawSocket struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dialRaw(t *testing.T, ts *httptest.Server, token string) *rawSocket {
	t.Helper()
	var key [16]byte
	rand.Read(key[:])
	host := strings.TrimPrefix(ts.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\nAuthorization: Bearer %s\r\n\r\n",
		host, base64.StdEncoding.EncodeToString(key[:]), token)
	s := &rawSocket{t: t, conn: conn, r: bufio.NewReader(conn)}
	if res, err := http.ReadResponse(s.r, nil); err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", res, err)
	}
	if op, p, err := s.next(); err != nil || op != 1 || !strings.Contains(string(p), `"ready"`) {
		t.Fatalf("want the ready frame, got %d %q %v", op, p, err)
	}
	return s
}

// next reads a frame. Server frames are unmasked, and under 64 KiB here
// (the ready frame, with the user's preferences, takes a 16-bit length).
func (s *rawSocket) next() (opcode byte, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(s.r, h[:]); err != nil {
		return 0, nil, err
	}
	n := int(h[1] & 0x7f)
	if n == 126 {
		var ext [2]byte
		if _, err := io.ReadFull(s.r, ext[:]); err != nil {
			return 0, nil, err
		}
		n = int(ext[0])<<8 | int(ext[1])
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(s.r, payload)
	return h[0] & 0x0f, payload, err
}

// closes reads until the server ends the connection and returns the
// payloads of the close frames it sent.
func (s *rawSocket) closes() [][]byte {
	var closes [][]byte
	for {
		op, p, err := s.next()
		if err != nil {
			return closes
		}
		if op == 8 {
			closes = append(closes, p)
		}
	}
}

// TestAClientsCloseIsAnsweredOnce: a client that starts the closing
// handshake gets one close frame back, with its code, and then the end of
// the connection; a second close frame is a protocol error to browsers.
func TestAClientsCloseIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ts := a.live()
	ada := a.register("Ada")
	s := dialRaw(t, ts, ada.Access)
	s.conn.Write(maskedFrame(8, []byte{0x03, 0xe9})) // close, 1001
	if closes := s.closes(); len(closes) != 1 || string(closes[0]) != "\x03\xe9" {
		t.Fatalf("close frames from the server: %q, want one with 1001", closes)
	}
}

// TestNothingFollowsTheServersClose: when the server closes a socket (1012
// here) and the client answers as RFC 6455 says, echoing the code, the
// server sends nothing more before it ends the connection.
func TestNothingFollowsTheServersClose(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ts := a.live()
	ada := a.register("Ada")
	s := dialRaw(t, ts, ada.Access)
	for a.srv.hub.Len() < 1 {
		time.Sleep(time.Millisecond)
	}
	a.srv.hub.DropAll(hub.ReasonLost)
	op, p, err := s.next()
	if err != nil || op != 8 || len(p) < 2 || p[0] != 0x03 || p[1] != 0xf4 {
		t.Fatalf("want a close frame with 1012, got %d %q %v", op, p, err)
	}
	s.conn.Write(maskedFrame(8, p[:2]))
	if closes := s.closes(); len(closes) != 0 {
		t.Fatalf("the server sent %q after its close frame", closes)
	}
}
