package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsFake serves GET /ws by handing attempt n (from 0) to script, and every
// other path to rest when set. It records the since and Authorization of
// each attempt.
type wsFake struct {
	script func(n int, w http.ResponseWriter, r *http.Request)
	rest   http.Handler

	mu     sync.Mutex
	sinces []string
	auths  []string
}

func (f *wsFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/ws" {
		f.rest.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	n := len(f.sinces)
	f.sinces = append(f.sinces, r.URL.Query().Get("since"))
	f.auths = append(f.auths, r.Header.Get("Authorization"))
	f.mu.Unlock()
	f.script(n, w, r)
}

func (f *wsFake) attempts() (sinces, auths []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sinces...), append([]string(nil), f.auths...)
}

// listenClient is a client of f whose reconnections take milliseconds.
func listenClient(t *testing.T, f *wsFake, opts ...Option) *Client {
	t.Helper()
	c := New(mustServer(t, f).URL, opts...)
	c.minDelay, c.maxDelay = time.Millisecond, 4*time.Millisecond
	return c
}

// listen runs Listen until stop, given each event, says so. It fails the
// test when that takes more than a few seconds.
func listen(t *testing.T, c *Client, since string, stop func(Event) bool) ([]Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var events []Event
	err := c.Listen(ctx, since, func(e Event) {
		events = append(events, e)
		if stop(e) {
			cancel()
		}
	})
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Listen timed out; events: %v", summary(events))
	}
	return events, err
}

// summary is events in a form easy to compare.
func summary(events []Event) []string {
	var s []string
	for _, e := range events {
		switch e.Type {
		case EventNotification:
			s = append(s, "notification "+e.Notification.ID)
		case EventReady:
			s = append(s, fmt.Sprintf("ready %d %v", e.Replayed, e.Gap))
		case EventRead:
			s = append(s, "read "+strings.Join(e.ReadIDs, ","))
		default:
			s = append(s, string(e.Type))
		}
	}
	return s
}

func accept(w http.ResponseWriter, r *http.Request) *websocket.Conn {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		panic(err)
	}
	return conn
}

// send writes frames: a string as it is, anything else as JSON.
func send(conn *websocket.Conn, frames ...any) {
	for _, f := range frames {
		b, ok := f.(string)
		if !ok {
			j, _ := json.Marshal(f)
			b = string(j)
		}
		if err := conn.Write(context.Background(), websocket.MessageText, []byte(b)); err != nil {
			return // the client has gone: the test says what it missed
		}
	}
}

func note(id string) any {
	return map[string]any{"type": "notification", "data": map[string]any{"id": id, "title": "n" + id}}
}

func ready(replayed int, gap bool) any {
	return map[string]any{"type": "ready", "data": map[string]any{"replayed": replayed, "gap": gap}}
}

// holdOpen keeps conn up, answering pings, until the client goes.
func holdOpen(conn *websocket.Conn) {
	<-conn.CloseRead(context.Background()).Done()
	conn.CloseNow()
}

func isType(typ EventType, nth int) func(Event) bool {
	seen := 0
	return func(e Event) bool {
		if e.Type == typ {
			seen++
		}
		return seen == nth
	}
}

// refreshServer answers POST /api/v1/auth/refresh for refresh token prf_1
// with pac_2 and prf_2, or 401 when refuse is set.
func refreshServer(refreshes *atomic.Int32, refuse bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			RefreshToken string `json:"refresh_token"`
		}
		json.NewDecoder(r.Body).Decode(&in)
		if r.URL.Path != "/api/v1/auth/refresh" {
			http.NotFound(w, r)
			return
		}
		refreshes.Add(1)
		if refuse || in.RefreshToken != "prf_1" {
			writeError(w, 401, "unauthorized", "The refresh token is not valid.")
			return
		}
		writeJSON(w, 200, `{"data":{"access_token":"pac_2","refresh_token":"prf_2","token_type":"Bearer","expires_in":900}}`)
	})
}
