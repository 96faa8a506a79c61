package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/perch-dev/perch"
)

// frame is a server-to-client WebSocket frame.
type frame struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

func (f frame) notification(tb testing.TB) perch.Notification {
	tb.Helper()
	var n perch.Notification
	if f.Type != "notification" || json.Unmarshal(f.Data, &n) != nil {
		tb.Fatalf("frame %s %s is not a notification", f.Type, f.Data)
	}
	return n
}

// wsConn is a test's WebSocket client: a reader goroutine puts frames on a
// channel until the connection ends, then records how it ended.
type wsConn struct {
	tb     testing.TB
	conn   *websocket.Conn
	frames chan frame
	closed chan error
}

// live serves the API on a real listener, which WebSockets need.
func (a *api) live() *httptest.Server {
	a.t.Helper()
	ts := httptest.NewServer(a.srv)
	a.t.Cleanup(func() {
		a.srv.Close(context.Background())
		ts.Close()
	})
	return ts
}

// dial connects to /ws as the holder of token, resuming after since.
func dial(tb testing.TB, ts *httptest.Server, token, since string) *wsConn {
	tb.Helper()
	u := "ws" + strings.TrimPrefix(ts.URL, "http") + "/ws"
	if since != "" {
		u += "?since=" + since
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	conn.SetReadLimit(1 << 20)
	c := &wsConn{tb: tb, conn: conn, frames: make(chan frame, 10000), closed: make(chan error, 1)}
	go func() {
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				c.closed <- err
				close(c.frames)
				return
			}
			var f frame
			json.Unmarshal(data, &f)
			c.frames <- f
		}
	}()
	tb.Cleanup(func() { conn.CloseNow() })
	return c
}

// next returns the next frame, failing the test after ten seconds.
func (c *wsConn) next() frame {
	c.tb.Helper()
	select {
	case f, ok := <-c.frames:
		if !ok {
			c.tb.Fatalf("connection ended: %v", <-c.closed)
		}
		return f
	case <-time.After(10 * time.Second):
		c.tb.Fatal("no frame within 10s")
	}
	return frame{}
}

// ready reads the ready frame that ends a replay, and returns its data.
func (c *wsConn) ready() (replayed int, gap bool) {
	c.tb.Helper()
	f := c.next()
	var d struct {
		Replayed int  `json:"replayed"`
		Gap      bool `json:"gap"`
	}
	if f.Type != "ready" || json.Unmarshal(f.Data, &d) != nil {
		c.tb.Fatalf("want ready, got %s %s", f.Type, f.Data)
	}
	return d.Replayed, d.Gap
}

// until collects notification titles up to and including the one titled
// sentinel.
func (c *wsConn) until(sentinel string) []string {
	c.tb.Helper()
	var titles []string
	for {
		f := c.next()
		if f.Type != "notification" {
			continue
		}
		n := f.notification(c.tb)
		if n.Title == sentinel {
			return titles
		}
		titles = append(titles, n.Title)
	}
}

// closeStatus waits for the server to end the connection and returns the
// close status it gave.
func (c *wsConn) closeStatus() websocket.StatusCode {
	c.tb.Helper()
	for {
		select {
		case _, ok := <-c.frames:
			if !ok {
				return websocket.CloseStatus(<-c.closed)
			}
		case <-time.After(10 * time.Second):
			c.tb.Fatal("the connection was not closed within 10s")
		}
	}
}

// post sends an inbound event with the webhook token (anonymous when "").
func (a *api) post(token, title string) string {
	a.t.Helper()
	path := "/webhooks/inbound"
	if token != "" {
		path += "?token=" + token
	}
	res := expect(a.t, a.call("POST", path, "", map[string]string{"title": title}), 200)
	return res.Body["ids"].([]any)[0].(string)
}

// webhookToken makes an inbound token of scope for acc.
func (a *api) webhookToken(acc *account, scope, teamID string) string {
	a.t.Helper()
	body := map[string]string{"label": scope, "sender": "inbound", "scope": scope, "team_id": teamID}
	return expect(a.t, a.call("POST", "/api/v1/webhook-tokens", acc.Access, body), 201).Data()["raw_token"].(string)
}
