package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lesismal/nbio"
)

// The floor of the fan-out figure: the same number of clients in this
// process, reading plain TCP, and a server that writes one message of a
// notification frame's size to every connection from as many goroutines as
// it has processors, with nothing else to do. What Perch adds to that is
// WebSocket framing (both ends), the hub, and storing the event first.

// rawMessage is about the size of the notification frames of fanout.
var rawMessage = bytes.Repeat([]byte("x"), 256)

// rawServe accepts plain TCP subscribers on addr and, for each POST to
// control, writes rawMessage to every one of them; a GET to control
// answers how many it has accepted.
func rawServe(addr, control string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return serveControl(control, func() []net.Conn {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(conns)
	}, func(c net.Conn) { c.Write(rawMessage) })
}

// serveControl serves a floor's control address: a GET answers how many
// clients the floor's server has (conns), and a POST sends one message to
// every one of them (send), from one goroutine per processor, after
// answering.
func serveControl[C any](control string, conns func() []C, send func(C)) error {
	return http.ListenAndServe(control, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		all := conns()
		if r.Method == http.MethodGet {
			fmt.Fprint(w, len(all))
			return
		}
		w.Write([]byte(`{"received":true}`))
		workers := runtime.GOMAXPROCS(0)
		for i := range workers {
			go func() {
				for j := i; j < len(all); j += workers {
					send(all[j])
				}
			}()
		}
	}))
}

// rawFanout connects n plain TCP clients to addr and times, over rounds, from
// a POST to control until every client has the whole message. The clients
// wait in an nbio engine configured as the WebSocket clients' is, and count
// in OnData on the poller goroutine, as those count in their message
// handler: the floor and Perch's figure differ by the server and the
// WebSocket framing, not by how this process reads.
func rawFanout(addr, control string, n, rounds int) error {
	var got atomic.Int64
	done := make(chan time.Time, 1)
	engine := nbio.NewEngine(nbio.Config{NPoller: pollers()})
	engine.Execute = inline
	engine.OnData(func(c *nbio.Conn, data []byte) {
		at := time.Now()
		have := c.Session().(*int) // bytes of a message not yet complete
		for *have += len(data); *have >= len(rawMessage); *have -= len(rawMessage) {
			if got.Add(1) == int64(n) {
				done <- at
			}
		}
	})
	if err := engine.Start(); err != nil {
		return err
	}
	defer engine.Stop()
	for range n {
		c, err := nbio.Dial("tcp", addr)
		if err != nil {
			return err
		}
		c.SetSession(new(int))
		if _, err := engine.AddConn(c); err != nil {
			return err
		}
	}
	// A dial is done once the kernel has queued the connection, which the
	// server may not have accepted yet: wait until it has them all.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res, err := http.Get(control)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if accepted, _ := strconv.Atoi(string(body)); accepted >= n {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the floor's server accepted %s of %d clients in 30s", body, n)
		}
	}
	fmt.Printf("connected %d plain TCP clients\n", n)
	times, err := timeRounds(rounds, n, &got, done, func(int) error {
		res, err := http.Post(control, "application/json", nil)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, res.Body)
		return res.Body.Close()
	})
	if err != nil {
		return err
	}
	fmt.Printf("floor, one message to all %d plain TCP clients: %s\n", n, spread(times))
	return nil
}
