package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/lesismal/nbio/nbhttp"
	"github.com/lesismal/nbio/nbhttp/websocket"
)

// wsMessage is the WebSocket floor's message: a notification frame of about
// the size of Perch's, which the clients count as they count Perch's.
var wsMessage = func() []byte {
	m := `{"type":"notification","data":{"id":"1","title":"floor","message":"`
	end := `"}}`
	return []byte(m + strings.Repeat("x", max(0, 256-len(m)-len(end))) + end)
}()

// wsServe is the WebSocket floor's server: it accepts WebSocket clients on
// addr (any path), answers each with a ready frame, and for each POST to
// control sends wsMessage to every one of them, as a server that does
// nothing else would: the library frames and writes each message, from one
// goroutine per processor. A GET to control answers how many it has.
func wsServe(addr, control string) error {
	var mu sync.Mutex
	var conns []*websocket.Conn
	up := websocket.NewUpgrader()
	up.OnClose(func(c *websocket.Conn, _ error) {
		mu.Lock()
		defer mu.Unlock()
		if i := slices.Index(conns, c); i >= 0 {
			conns = slices.Delete(conns, i, i+1)
		}
	})
	engine := nbhttp.NewEngine(nbhttp.Config{
		Network: "tcp",
		Addrs:   []string{addr},
		NPoller: pollers(),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"ready","data":{}}`))
		}),
	})
	if err := engine.Start(); err != nil {
		return err
	}
	defer engine.Stop()
	return serveControl(control, func() []*websocket.Conn {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(conns)
	}, func(c *websocket.Conn) { c.WriteMessage(websocket.TextMessage, wsMessage) })
}

// wsFanout times the WebSocket floor: n of the same clients as fanout's,
// connected to wsServe at base, and one message to all of them per round.
func wsFanout(base, control string, n, rounds int) error {
	ws, got, done, err := countingClients(base, "", n)
	if err != nil {
		return err
	}
	defer ws.close()
	fmt.Printf("connected %d WebSocket clients to the floor's server\n", n)
	times, err := timeRounds(rounds, n, got, done, func(int) error {
		res, err := http.Post(control, "application/json", nil)
		if err != nil {
			return err
		}
		return res.Body.Close()
	})
	if err != nil {
		return err
	}
	fmt.Printf("WebSocket floor, one message to all %d clients: %s\n", n, spread(times))
	return nil
}
