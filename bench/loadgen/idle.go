package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// idle measures what one more idle connection costs the server: it
// connects warm clients, waits until each has been pinged and reads the
// server's memory, then connects n more and does the same, and divides the
// difference by n. The warm clients take up what the server set free before
// (the sign-up's password hash alone is 19 MiB, reused by the first
// connections without growing the process), which would otherwise flatter
// the figure. Memory is read twice: resident, once it has settled, and the
// Go heap and goroutine stacks in use, from the server's own metrics.
// Reading after the first ping counts what a ping leaves behind (a pong
// table, a timer).
func idle(base, token string, n, warm, pid int, pingWait time.Duration) error {
	if pid == 0 {
		return fmt.Errorf("-pid is required")
	}
	ws, err := newWSClients(nil)
	if err != nil {
		return err
	}
	defer ws.close()
	type reading struct {
		rss          int64 // KiB
		heap, stacks float64
	}
	measure := func(clients int) (reading, error) {
		if err := connectAll(ws, base, clients, func(int) string { return token }); err != nil {
			return reading{}, err
		}
		if !ws.waitPinged(pingWait) {
			return reading{}, fmt.Errorf("%d of %d clients pinged within %s", ws.openPinged.Load(), ws.open.Load(), pingWait)
		}
		// Settled: no change of more than 1% over 3 s, or 60 s at most.
		var r reading
		var err error
		for prev, start := int64(0), time.Now(); time.Since(start) < time.Minute; prev = r.rss {
			time.Sleep(3 * time.Second)
			if r.rss, err = rss(pid); err != nil {
				return r, err
			}
			if prev > 0 && math.Abs(float64(r.rss-prev)) < 0.01*float64(prev) {
				break
			}
		}
		r.heap, r.stacks, err = goMemoryInUse(base)
		return r, err
	}
	before, err := measure(warm)
	if err != nil {
		return err
	}
	after, err := measure(n)
	if err != nil {
		return err
	}
	if open := ws.open.Load(); open != int64(warm+n) {
		return fmt.Errorf("only %d of %d clients are still connected", open, warm+n)
	}
	perConn := func(before, after float64) float64 { return (after - before) / 1024 / float64(n) }
	fmt.Printf("idle connections: %d, then %d more, every one pinged (%d pings answered); server RSS %d KiB -> %d KiB: %.1f KiB per connection (Go heap %.1f KiB and goroutine stacks %.1f KiB in use per connection)\n",
		warm, n, ws.pings.Load(), before.rss, after.rss, float64(after.rss-before.rss)/float64(n), perConn(before.heap, after.heap), perConn(before.stacks, after.stacks))
	return nil
}

// goMemoryInUse reads the server's heap and goroutine stack bytes in use
// from its /metrics.
func goMemoryInUse(base string) (heap, stacks float64, err error) {
	res, err := http.Get(base + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, 0, err
	}
	found := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		for _, name := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes"} {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return 0, 0, err
				}
				found[name] = f
			}
		}
	}
	if len(found) != 2 {
		return 0, 0, fmt.Errorf("/metrics has no go_memstats heap and stack figures")
	}
	return found["go_memstats_heap_inuse_bytes"], found["go_memstats_stack_inuse_bytes"], nil
}

// rss reads a process's resident memory in KiB.
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}
