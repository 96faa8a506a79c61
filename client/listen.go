package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/perch-dev/perch"
)

// maxFrame bounds one frame from the server.
const maxFrame = 1 << 20

// EventType says what an Event reports.
type EventType string

// The events of Listen.
const (
	EventConnected    EventType = "connected"    // a connection is up; the replay follows
	EventReady        EventType = "ready"        // the replay is done: Replayed, Gap
	EventNotification EventType = "notification" // Notification
	EventRead         EventType = "read"         // another client of the user marked ReadIDs read
	EventPreferences  EventType = "preferences"  // the user's Preferences changed (on any client)
	EventDisconnected EventType = "disconnected" // Err broke the connection, or the attempt; RetryIn
)

// Event is one thing that happened on Listen's subscription.
type Event struct {
	Type         EventType
	Notification *perch.Notification // EventNotification
	// Silent (EventNotification): the user's preferences say it should not
	// pop up: show it, but raise no desktop notification.
	Silent bool
	// Preferences: the user's, at EventReady (what this connection's
	// frames follow; nil from a server without preferences) and
	// EventPreferences.
	Preferences *perch.Preferences
	Replayed    int           // EventReady: notifications replayed since the resume point
	Gap         bool          // EventReady: some missed notifications are gone for good
	LastID      string        // EventReady: where Listen resumes from now ("0" when the user has none)
	ReadIDs     []string      // EventRead
	Err         error         // EventDisconnected
	RetryIn     time.Duration // EventDisconnected: the wait before the next attempt
}

// Listen subscribes to the user's notifications over the WebSocket (GET
// /ws), calling fn with each Event in order, from one goroutine. fn should
// return quickly: the connection is read between calls.
//
// since is the id of the last notification the caller has ("" for none): the
// server first replays what came after it. Listen keeps the subscription up
// until ctx ends: when a connection drops or cannot be made it reports
// EventDisconnected, waits (exponential backoff with full jitter) and
// connects again, resuming after the last notification it delivered, so that
// nothing is missed or repeated. A notification whose id is not greater than
// the last one delivered is dropped as a duplicate. An upgrade refused with
// 401 renews an access token and connects again at once.
//
// Listen returns nil when ctx ends, and an error only when connecting again
// cannot help: EUNAUTHORIZED (no renewable credential), EFORBIDDEN,
// EBADREQUEST, ENOTFOUND or EMETHOD from the server.
func (c *Client) Listen(ctx context.Context, since string, fn func(Event)) error {
	s := &stream{c: c, fn: fn, last: since}
	b := &backoff{min: c.minDelay, max: c.maxDelay, jitter: c.jitter}
	refreshed := false // since the last connection: a second 401 is final
	for {
		token, refreshable := c.credential()
		began := time.Now()
		connected, err := s.connect(ctx, token)
		if ctx.Err() != nil {
			return nil
		}
		if connected {
			refreshed = false
			if time.Since(began) >= c.stableAfter {
				b.reset()
			}
		}
		if perch.ErrorCode(err) == perch.EUNAUTHORIZED && refreshable && !refreshed {
			rerr := c.refreshAfter(ctx, token)
			if rerr == nil {
				refreshed = true
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			err = rerr
		}
		if final(err) {
			return err
		}
		d := b.next()
		fn(Event{Type: EventDisconnected, Err: err, RetryIn: d})
		if !sleep(ctx, d) {
			return nil
		}
	}
}

// final reports whether the server refused in a way that trying again
// cannot change.
func final(err error) bool {
	switch perch.ErrorCode(err) {
	case perch.EUNAUTHORIZED, perch.EFORBIDDEN, perch.EBADREQUEST, perch.ENOTFOUND, perch.EMETHOD:
		return true
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// wsURL is the address of the WebSocket, resuming after since.
func (c *Client) wsURL(since string) string {
	u := c.base + "/ws"
	if rest, ok := strings.CutPrefix(u, "https://"); ok {
		u = "wss://" + rest
	} else if rest, ok := strings.CutPrefix(u, "http://"); ok {
		u = "ws://" + rest
	}
	if since != "" {
		u += "?since=" + url.QueryEscape(since)
	}
	return u
}

// stream is the state that Listen carries from one connection to the next.
type stream struct {
	c    *Client
	fn   func(Event)
	last string // id of the last notification delivered, or the resume point
}

// connect makes one connection and reads it until it breaks. A refused
// upgrade is the server's *perch.Error.
func (s *stream) connect(ctx context.Context, token string) (connected bool, err error) {
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	conn, res, err := websocket.Dial(ctx, s.c.wsURL(s.last), &websocket.DialOptions{HTTPClient: s.c.http, HTTPHeader: h})
	if err != nil {
		if res != nil && res.StatusCode != http.StatusSwitchingProtocols {
			return false, responseError(res)
		}
		return false, err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxFrame)
	s.fn(Event{Type: EventConnected})

	hbCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var dead error
	wg.Go(func() { dead = s.c.heartbeat(hbCtx, conn) })
	err = s.read(ctx, conn)
	stop()
	wg.Wait()
	if dead != nil {
		err = dead
	}
	return true, err
}

// heartbeat pings the server, whose silence would otherwise go unnoticed
// (a laptop waking from sleep on a dead connection), and closes conn when a
// pong is late. It returns why it closed conn, or nil once ctx ends.
func (c *Client) heartbeat(ctx context.Context, conn *websocket.Conn) error {
	t := time.NewTicker(c.pingEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, c.pingTimeout)
		err := conn.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			conn.CloseNow()
			return fmt.Errorf("perch: the server did not answer a ping within %s: %w", c.pingTimeout, err)
		}
	}
}

// read hands the frames of conn to fn until the connection breaks. Reading
// is also what answers the server's pings. Reads take no context, which
// would cost each frame a cancellation hook: the connection is closed when
// ctx ends instead, and frames are read into one reused buffer.
func (s *stream) read(ctx context.Context, conn *websocket.Conn) error {
	stop := context.AfterFunc(ctx, func() { conn.CloseNow() })
	defer stop()
	var buf bytes.Buffer
	for {
		typ, r, err := conn.Reader(context.Background())
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return err
		}
		if typ == websocket.MessageText {
			s.handle(buf.Bytes())
		}
	}
}

// frame is a WebSocket message (notification, ready, read or preferences),
// decoded in one pass whatever its type:
// data holds the members of every kind, which do not clash.
type frame struct {
	Type string `json:"type"`
	Data struct {
		perch.Notification                    // "notification"
		Silent             bool               `json:"silent"`   // "notification", optional
		Replayed           int                `json:"replayed"` // "ready"
		Gap                bool               `json:"gap"`
		LastID             string             `json:"last_id"`     // "ready", optional: where the live stream starts
		ReadyPreferences   *perch.Preferences `json:"preferences"` // "ready"
		IDs                []string           `json:"ids"`         // "read"
		perch.Preferences                     // "preferences"
	} `json:"data"`
}

// handle reports one frame. Frames it does not understand are skipped, so
// that the server can add kinds.
func (s *stream) handle(b []byte) {
	var f frame
	if json.Unmarshal(b, &f) != nil {
		return
	}
	switch f.Type {
	case "notification":
		n := f.Data.Notification
		if n.ID == "" || !after(n.ID, s.last) {
			return
		}
		s.last = n.ID
		s.fn(Event{Type: EventNotification, Notification: &n, Silent: f.Data.Silent})
	case "ready":
		if f.Data.LastID != "" && after(f.Data.LastID, s.last) {
			s.last = f.Data.LastID
		}
		if s.last == "" {
			// Nothing yet: resume from before the first, or a reconnection
			// without since would replay nothing and lose what came between.
			s.last = "0"
		}
		s.fn(Event{Type: EventReady, Replayed: f.Data.Replayed, Gap: f.Data.Gap, LastID: s.last, Preferences: f.Data.ReadyPreferences})
	case "read":
		s.fn(Event{Type: EventRead, ReadIDs: f.Data.IDs})
	case "preferences":
		p := f.Data.Preferences
		if p.Muted == nil {
			p.Muted = []perch.Mute{}
		}
		s.fn(Event{Type: EventPreferences, Preferences: &p})
	}
}

// after reports whether notification id comes after last. IDs are decimal
// integers that grow over time, compared as numbers; an id that is not one
// cannot be judged and counts as new.
func after(id, last string) bool {
	if last == "" {
		return true
	}
	a, errA := strconv.ParseUint(id, 10, 64)
	b, errB := strconv.ParseUint(last, 10, 64)
	if errA != nil || errB != nil {
		return id != last
	}
	return a > b
}
