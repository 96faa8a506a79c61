package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// goodClient is one of a fault scenario's WebSocket clients, resuming as
// client.Listen does and keeping everything it receives (see faultRun).
type goodClient struct {
	user, home int // its user, and the instance it connects to first
	token      string
	ready      chan struct{} // closed at its first ready frame

	mu       sync.Mutex
	count    map[int64]int       // frames received per notification id
	first    map[int64]time.Time // when each id first arrived
	cursor   int64               // the newest id received, or the first ready's last_id
	resume   bool                // cursor is set: connect with ?since=
	disorder int                 // frames whose id was below one received before
	connects int
	gaps     int // ready frames that said some notifications are gone
	closes   map[string]int
}

func newGoodClient(user, home int, token string) *goodClient {
	return &goodClient{user: user, home: home, token: token, ready: make(chan struct{}),
		count: map[int64]int{}, first: map[int64]time.Time{}, closes: map[string]int{}}
}

// run keeps the client connected until ctx ends, reconnecting after any
// drop with a short backoff and full jitter, as client.Listen does.
func (c *goodClient) run(ctx context.Context, bases []string) {
	backoff := 50 * time.Millisecond
	var once sync.Once
	for ctx.Err() == nil {
		conn, err := c.dial(ctx, bases)
		if err == nil {
			backoff = 50 * time.Millisecond
			err = c.read(ctx, conn, func() { once.Do(func() { close(c.ready) }) })
			conn.CloseNow()
		}
		if ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		c.closes[endedBy(err)]++
		c.mu.Unlock()
		time.Sleep(mrand.N(backoff))
		backoff = min(2*backoff, time.Second)
	}
}

// dial connects to the client's own instance, or, while that refuses, to
// the next that does not.
func (c *goodClient) dial(ctx context.Context, bases []string) (*websocket.Conn, error) {
	c.mu.Lock()
	query := ""
	if c.resume {
		query = "?since=" + strconv.FormatInt(c.cursor, 10)
	}
	c.mu.Unlock()
	var err error
	for k := range bases {
		base := bases[(c.home+k)%len(bases)]
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var conn *websocket.Conn
		var res *http.Response
		conn, res, err = websocket.Dial(dctx, "ws"+strings.TrimPrefix(base, "http")+"/ws"+query,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + c.token}}})
		cancel()
		if err == nil {
			c.mu.Lock()
			c.connects++
			c.mu.Unlock()
			return conn, nil
		}
		if res != nil {
			return nil, fmt.Errorf("status %d", res.StatusCode)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, err
		}
	}
	return nil, err
}

// read records the frames of conn until it breaks.
func (c *goodClient) read(ctx context.Context, conn *websocket.Conn, ready func()) error {
	conn.SetReadLimit(1 << 20)
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		at := time.Now()
		var f struct {
			Type string `json:"type"`
			Data struct {
				ID     string `json:"id"`
				Gap    bool   `json:"gap"`
				LastID string `json:"last_id"`
			} `json:"data"`
		}
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		c.mu.Lock()
		switch f.Type {
		case "notification":
			id, _ := strconv.ParseInt(f.Data.ID, 10, 64)
			if id < c.cursor {
				c.disorder++
			}
			if c.count[id]++; c.count[id] == 1 {
				c.first[id] = at
			}
			c.cursor = max(c.cursor, id)
		case "ready":
			last, _ := strconv.ParseInt(f.Data.LastID, 10, 64)
			c.cursor, c.resume = max(c.cursor, last), true
			if f.Data.Gap {
				c.gaps++
			}
		}
		c.mu.Unlock()
		if f.Type == "ready" {
			ready()
		}
	}
}

// endedBy names how a connection ended: its close code, or the kind of
// error that broke it.
func endedBy(err error) string {
	if code := websocket.CloseStatus(err); code != -1 {
		return strconv.Itoa(int(code))
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case err != nil && strings.HasPrefix(err.Error(), "status "):
		return err.Error()
	}
	return "other"
}

// missing is how many of want the client has not received.
func (c *goodClient) missing(want []int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, id := range want {
		if c.count[id] == 0 {
			n++
		}
	}
	return n
}

// clientSummary is what one client received of what it should have.
type clientSummary struct {
	delivered          int             // distinct ids of its scope received
	lost, repeated     []int64         // of its scope, never received; of any, received more than once
	late               []time.Duration // per id received, in lateIDs' order
	lateIDs            []int64
	disorder, connects int
	gaps               int
	closes             map[string]int
}

// summary compares what the client received with want, the ids of its
// scope acknowledged at ackedAt; late are how long after its
// acknowledgement each arrived (0 when before: the frame may beat the
// answer to the sender).
func (c *goodClient) summary(want []int64, ackedAt map[int64]time.Time) clientSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := clientSummary{disorder: c.disorder, connects: c.connects, gaps: c.gaps, closes: c.closes}
	for _, id := range want {
		if c.count[id] == 0 {
			s.lost = append(s.lost, id)
		} else {
			s.delivered++
			s.late = append(s.late, max(0, c.first[id].Sub(ackedAt[id])))
			s.lateIDs = append(s.lateIDs, id)
		}
	}
	for id, n := range c.count {
		if n > 1 {
			s.repeated = append(s.repeated, id)
		}
	}
	return s
}

// badClients misbehave beside the good clients, on one instance and as
// one of the users whose events are posted (so that the hub has frames
// for them too): some never read, some send garbage, some connect and
// disconnect in a loop.
type badClients struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	neverRead      []net.Conn
	neverReadShut  atomic.Int64 // of those, closed by the server by the end
	garbageFrames  atomic.Int64 // connections that sent bytes that are no WebSocket frame
	garbageText    atomic.Int64 // connections that sent text frames that are no JSON
	churns         atomic.Int64 // connections opened and closed by the churning clients
	churnFailed    atomic.Int64
	mu             sync.Mutex
	garbageEndings map[string]int // how the garbage senders' connections ended
}

const (
	neverReaders    = 2
	garbageSenders  = 2 // of each kind
	churningClients = 4
)

func startBadClients(ctx context.Context, base, token string) *badClients {
	ctx, cancel := context.WithCancel(ctx)
	b := &badClients{cancel: cancel, garbageEndings: map[string]int{}}
	addr := strings.TrimPrefix(base, "http://")
	for range neverReaders {
		if conn, err := rawUpgrade(addr, token); err == nil {
			b.neverRead = append(b.neverRead, conn)
		}
	}
	for range garbageSenders {
		b.wg.Go(func() { b.sendGarbageFrames(ctx, addr, token) })
		b.wg.Go(func() { b.sendGarbageText(ctx, base, token) })
	}
	for i := range churningClients {
		b.wg.Go(func() { b.churn(ctx, base, token, i%2 == 0) })
	}
	return b
}

// stop ends the misbehaving clients and finds out whether the server cut
// off the ones that never read: reading their socket now drains what the
// server wrote and ends at its close, or times out if it is still open.
func (b *badClients) stop() {
	b.cancel()
	b.wg.Wait()
	for _, conn := range b.neverRead {
		conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := io.Copy(io.Discard, conn); !isTimeout(err) {
			b.neverReadShut.Add(1)
		}
		conn.Close()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (b *badClients) summary() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("%d never reading (cut off by the server by the end: %d); %d sending bytes that are no WebSocket frame (%d connections), %d sending text that is no JSON (%d connections), their connections ended by: %s; %d connecting and disconnecting in a loop (%d connections, %d failed)",
		len(b.neverRead), b.neverReadShut.Load(), garbageSenders, b.garbageFrames.Load(), garbageSenders, b.garbageText.Load(),
		countsString(b.garbageEndings), churningClients, b.churns.Load(), b.churnFailed.Load())
}

// rawUpgrade opens a WebSocket by hand and returns the connection right
// after the server's 101, with nothing of it read beyond the headers.
func rawUpgrade(addr, token string) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	key := make([]byte, 16)
	rand.Read(key)
	fmt.Fprintf(conn, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n",
		addr, base64.StdEncoding.EncodeToString(key), token)
	// Byte by byte up to the blank line: a buffered reader would take
	// frames beyond the headers that the caller should find on conn.
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var head []byte
	one := make([]byte, 1)
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		if _, err := conn.Read(one); err != nil {
			conn.Close()
			return nil, err
		}
		head = append(head, one[0])
	}
	conn.SetReadDeadline(time.Time{})
	if !strings.HasPrefix(string(head), "HTTP/1.1 101") {
		conn.Close()
		return nil, fmt.Errorf("upgrade refused: %s", strings.SplitN(string(head), "\r\n", 2)[0])
	}
	return conn, nil
}

// sendGarbageFrames upgrades, then writes random bytes that are no
// WebSocket framing, until the server closes the connection; and again.
func (b *badClients) sendGarbageFrames(ctx context.Context, addr, token string) {
	for ctx.Err() == nil {
		conn, err := rawUpgrade(addr, token)
		if err != nil {
			b.ended("upgrade failed")
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		b.garbageFrames.Add(1)
		closed := make(chan string, 1)
		go func() { closed <- serverClose(conn) }()
		junk := make([]byte, 1024)
		how := ""
		for how == "" {
			rand.Read(junk)
			junk[0] = 0x0f // a reserved opcode: no frame, whatever follows
			if _, err := conn.Write(junk); err != nil {
				select {
				case how = <-closed:
				case <-time.After(time.Second):
					how = "write failed"
				}
				break
			}
			select {
			case how = <-closed:
			case <-ctx.Done():
				how = "still open at the end"
			case <-time.After(50 * time.Millisecond):
			}
		}
		conn.Close()
		b.ended("garbage frames: " + how)
		sleepCtx(ctx, 20*time.Millisecond)
	}
}

// serverClose reads the server's frames until the connection ends and
// names how: the code of its close frame, or how reading stopped.
func serverClose(conn net.Conn) string {
	r := bufio.NewReader(conn)
	for {
		head := make([]byte, 2)
		if _, err := io.ReadFull(r, head); err != nil {
			return "closed without a close frame"
		}
		n := int64(head[1] & 0x7f)
		switch n {
		case 126:
			var l uint16
			if binary.Read(r, binary.BigEndian, &l) != nil {
				return "closed mid-frame"
			}
			n = int64(l)
		case 127:
			if binary.Read(r, binary.BigEndian, &n) != nil {
				return "closed mid-frame"
			}
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return "closed mid-frame"
		}
		if head[0]&0x0f == 8 { // close
			if len(payload) >= 2 {
				return "close " + strconv.Itoa(int(binary.BigEndian.Uint16(payload)))
			}
			return "close without a code"
		}
	}
}

// sendGarbageText connects as a client should, then sends text frames
// that are not JSON, until the server closes the connection; and again.
func (b *badClients) sendGarbageText(ctx context.Context, base, token string) {
	for ctx.Err() == nil {
		conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
		if err != nil {
			if ctx.Err() == nil {
				b.ended("upgrade failed")
			}
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		b.garbageText.Add(1)
		readErr := make(chan error, 1)
		go func() {
			for {
				if _, _, err := conn.Read(ctx); err != nil {
					readErr <- err
					return
				}
			}
		}()
		how := ""
		for how == "" {
			junk := make([]byte, 200)
			rand.Read(junk)
			if err := conn.Write(ctx, websocket.MessageText, []byte(base64.StdEncoding.EncodeToString(junk))); err != nil && ctx.Err() == nil {
				how = "write failed"
			}
			select {
			case err := <-readErr:
				how = "ended " + endedBy(err)
			case <-ctx.Done():
				how = "still open at the end"
			case <-time.After(50 * time.Millisecond):
			}
		}
		conn.CloseNow()
		b.ended("garbage text: " + how)
		sleepCtx(ctx, 20*time.Millisecond)
	}
}

// churn connects, waits for the ready frame, and disconnects, in a loop:
// politely (a close frame) or not (the socket just closed).
func (b *badClients) churn(ctx context.Context, base, token string, polite bool) {
	for ctx.Err() == nil {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, _, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(base, "http")+"/ws",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
		if err == nil {
			_, _, err = conn.Read(dctx) // the ready frame
			if polite {
				conn.Close(websocket.StatusNormalClosure, "")
			} else {
				conn.CloseNow()
			}
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		b.churns.Add(1)
		if err != nil {
			b.churnFailed.Add(1)
		}
		sleepCtx(ctx, 20*time.Millisecond)
	}
}

func (b *badClients) ended(how string) {
	b.mu.Lock()
	b.garbageEndings[how]++
	b.mu.Unlock()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
