package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
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
//
// Each reading waits for a garbage collection that began after the clients
// were connected and pinged: an idle server has one at least every two
// minutes (the runtime forces one), and the resident memory it then settles
// at is what the connections hold. Read at any other moment, RSS also holds
// the garbage made by connecting them, as much as the collector's heap goal
// allows, and two readings taken at different points of the collector's
// cycle differ by up to that goal, whatever the connections cost.
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
		gcs, err := collections(base)
		if err != nil {
			return reading{}, err
		}
		for start := time.Now(); ; {
			time.Sleep(2 * time.Second)
			now, err := collections(base)
			if err != nil {
				return reading{}, err
			}
			if now > gcs {
				break
			}
			if time.Since(start) > gcWait {
				return reading{}, fmt.Errorf("no garbage collection in the server within %s", gcWait)
			}
		}
		// Settled: no change of more than 1% over 3 s, or 60 s at most.
		var r reading
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

// many connects n idle clients to one server from source addresses
// 127.0.0.2, 127.0.0.3, ... (perAddr clients each, as each client takes an
// ephemeral port of its address), waits until every one has been pinged,
// reads the server's resident memory, and then counts the clients still
// connected. The clients are spread over as many processes of this program
// (many-part) as its open-file limit requires.
func many(base, token string, n, pid, perAddr int, pingWait time.Duration) error {
	if pid == 0 {
		return fmt.Errorf("-pid is required")
	}
	if n > 250*perAddr {
		return fmt.Errorf("%d clients at %d per address need more than 127.0.0.2 to 127.0.0.251", n, perAddr)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	// A dial holds two descriptors for a moment (nbio duplicates the
	// socket's), and a process has a few of its own.
	perProcess := int(lim.Cur) - 2*dialsAtOnce - 100
	if perProcess <= 0 {
		return fmt.Errorf("an open-file limit of %d leaves no room for clients", lim.Cur)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var parts []*manyProcess
	defer func() {
		for _, p := range parts {
			p.stop()
		}
	}()
	for first := 0; first < n; first += perProcess {
		count := min(perProcess, n-first)
		p, err := startPart(self, "-base", base, "-token", token, "-clients", strconv.Itoa(count),
			"-first", strconv.Itoa(first), "-per-address", strconv.Itoa(perAddr), "-ping-wait", pingWait.String())
		if err != nil {
			return err
		}
		parts = append(parts, p)
	}
	fmt.Printf("many: %d clients, at most %d per source address from 127.0.0.2 (addresses: %d), in %d generator processes (open-file limit %d each)\n",
		n, perAddr, (n+perAddr-1)/perAddr, len(parts), lim.Cur)
	// Each part reports once its clients are connected and pinged, or its
	// wait is over.
	var connected, pinged, connectMS int
	for _, p := range parts {
		f, err := p.report()
		if err != nil {
			return err
		}
		connected += f["connected"]
		pinged += f["pinged"]
		connectMS = max(connectMS, f["connect_ms"])
	}
	kib, err := rss(pid)
	if err != nil {
		return err
	}
	var open, pings int
	for _, p := range parts {
		f, err := p.report()
		if err != nil {
			return err
		}
		open += f["open"]
		pings += f["pings"]
	}
	fmt.Printf("many: clients connected in %.1f s; %d pings answered\n", float64(connectMS)/1000, pings)
	fmt.Printf("many: asked %d, connected %d, pinged %d, still connected %d; server RSS %.1f MiB, %.1f KiB per connection\n",
		n, connected, pinged, open, float64(kib)/1024, float64(kib)/float64(max(open, 1)))
	return nil
}

// manyPart is one process of many's: it connects n clients, numbered from
// first among all of many's, each from its source address, waits for their
// pings and reports; then it reports again for every line on its input, and
// ends (closing its clients) when the input does.
func manyPart(base, token string, n, first, perAddr int, pingWait time.Duration) error {
	ws, err := newWSClients(nil)
	if err != nil {
		return err
	}
	defer ws.close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	failed, err := ws.connect(ctx, base, n, func(int) string { return token }, func(i int) net.Addr {
		return &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+(first+i)/perAddr))}
	})
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "many-part: %d of %d clients failed to connect, the first with: %v\n", failed, n, err)
	}
	connectMS := time.Since(start).Milliseconds()
	ws.waitPinged(pingWait)
	report := func() {
		fmt.Printf("part connected=%d pinged=%d open=%d pings=%d connect_ms=%d\n",
			ws.connected.Load(), ws.pinged.Load(), ws.open.Load(), ws.pings.Load(), connectMS)
	}
	report()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		report()
	}
	return nil
}

// manyProcess is a running many-part.
type manyProcess struct {
	cmd      *exec.Cmd
	in       io.WriteCloser
	out      *bufio.Scanner
	reported bool
}

func startPart(self string, args ...string) (*manyProcess, error) {
	cmd := exec.Command(self, append([]string{"many-part"}, args...)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &manyProcess{cmd: cmd, in: in, out: bufio.NewScanner(out)}, nil
}

// report reads the part's figures: the first report comes unasked, once
// its clients are connected and pinged; later ones are figures of the
// moment.
func (p *manyProcess) report() (map[string]int, error) {
	if p.reported {
		fmt.Fprintln(p.in)
	}
	p.reported = true
	for p.out.Scan() {
		line, ok := strings.CutPrefix(p.out.Text(), "part ")
		if !ok { // not a report: a library's log line
			fmt.Fprintln(os.Stderr, p.out.Text())
			continue
		}
		f := map[string]int{}
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			f[k], _ = strconv.Atoi(v)
		}
		return f, nil
	}
	return nil, fmt.Errorf("many-part ended before it reported: %v", p.out.Err())
}

// stop ends the part: its input closes, and it closes its clients.
func (p *manyProcess) stop() {
	p.in.Close()
	p.cmd.Wait()
}

// gcWait is how long idle waits for the server's next garbage collection:
// the runtime forces one when two minutes have passed without.
const gcWait = 150 * time.Second

// collections reads how many garbage collections the server has completed,
// from its /metrics.
func collections(base string) (float64, error) {
	f, err := metrics(base, "go_gc_duration_seconds_count")
	return f["go_gc_duration_seconds_count"], err
}

// goMemoryInUse reads the server's heap and goroutine stack bytes in use
// from its /metrics.
func goMemoryInUse(base string) (heap, stacks float64, err error) {
	f, err := metrics(base, "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes")
	return f["go_memstats_heap_inuse_bytes"], f["go_memstats_stack_inuse_bytes"], err
}

// metrics reads the named figures from the server's /metrics; every one
// must be there.
func metrics(base string, names ...string) (map[string]float64, error) {
	res, err := http.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	found := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		for _, name := range names {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return nil, err
				}
				found[name] = f
			}
		}
	}
	if len(found) != len(names) {
		return nil, fmt.Errorf("/metrics lacks some of %s", strings.Join(names, ", "))
	}
	return found, nil
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
