package testenv

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// redisStart bounds how long a private redis-server may take to answer.
const redisStart = 10 * time.Second

// PrivateRedis is a redis-server of a test's own, for what a test does to
// the whole server (pausing its writes, stopping it) that must not reach
// the shared one other packages use at the same time.
type PrivateRedis struct {
	Addr string // 127.0.0.1:port
	cmd  *exec.Cmd
	done chan struct{}
}

// URL is the server's redis:// URL.
func (r *PrivateRedis) URL() string { return "redis://" + r.Addr + "/0" }

// Stop ends the server at once (SIGKILL), as a crash or a lost host would,
// and waits for it.
func (r *PrivateRedis) Stop() {
	r.cmd.Process.Kill()
	<-r.done
}

// StartRedis starts redis-server (Debian's redis-server package, which CI
// has) on a free loopback port, keeping nothing on disk, waits until it
// answers, and stops it when tb's test ends. Without the binary it skips
// tb (fails it under PERCH_TEST_STRICT).
func StartRedis(tb testing.TB) *PrivateRedis {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		SkipUnlessStrict(tb, "redis-server not found: apt-get install redis-server")
		return nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &PrivateRedis{Addr: "127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{})}
	r.cmd = exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--logfile", "")
	out := &lockedBuffer{}
	r.cmd.Stdout, r.cmd.Stderr = out, out
	if err := r.cmd.Start(); err != nil {
		tb.Fatalf("redis-server: %v", err)
	}
	go func() { r.cmd.Wait(); close(r.done) }()
	tb.Cleanup(func() {
		select {
		case <-r.done:
		default:
			r.Stop()
		}
	})
	deadline := time.Now().Add(redisStart)
	for {
		if c, err := net.DialTimeout("tcp", r.Addr, time.Second); err == nil {
			fmt.Fprint(c, "PING\r\n")
			buf := make([]byte, 7)
			c.SetReadDeadline(time.Now().Add(time.Second))
			n, _ := c.Read(buf)
			c.Close()
			if string(buf[:n]) == "+PONG\r\n" {
				return r
			}
		}
		select {
		case <-r.done:
			tb.Fatalf("redis-server ended: %s", out.Bytes())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redis-server did not answer within %s: %s", redisStart, out.Bytes())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
