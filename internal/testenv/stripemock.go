package testenv

import (
	"bytes"
	"context"
	"go/build"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// stripeMockInstall is how the pinned stripe-mock is installed.
const stripeMockInstall = "go install github.com/stripe/stripe-mock@v0.203.0"

// stripeMockStart bounds how long stripe-mock may take to load Stripe's
// OpenAPI description and answer.
const stripeMockStart = 30 * time.Second

// StripeMock starts stripe-mock (on PATH, or in GOBIN or GOPATH's bin) on a
// port of the loopback interface the system chooses, waits until it
// answers, stops it when tb's test ends, and answers its base URL
// (http://127.0.0.1:<port>). Without the binary it skips tb (fails it under
// PERCH_TEST_STRICT).
func StripeMock(tb testing.TB) string {
	tb.Helper()
	bin := stripeMockBinary()
	if bin == "" {
		SkipUnlessStrict(tb, "stripe-mock not found: %s", stripeMockInstall)
		return ""
	}
	// Both listeners are asked for: given only -http-addr, stripe-mock also
	// opens HTTPS on every interface at the fixed port 12112, and two test
	// packages would fight over it.
	out := &lockedBuffer{}
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		tb.Fatalf("stripe-mock: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	listening := regexp.MustCompile(`Listening for HTTP at address: (127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(stripeMockStart)
	var base string
	for base == "" {
		if m := listening.FindSubmatch(out.Bytes()); m != nil {
			base = "http://" + string(m[1])
			continue
		}
		select {
		case <-exited:
			tb.Fatalf("stripe-mock exited before listening:\n%s", out.Bytes())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("stripe-mock did not listen within %v:\n%s", stripeMockStart, out.Bytes())
		}
	}
	for !stripeMockAnswers(base) {
		select {
		case <-exited:
			tb.Fatalf("stripe-mock exited before answering:\n%s", out.Bytes())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("stripe-mock at %s did not answer within %v:\n%s", base, stripeMockStart, out.Bytes())
		}
	}
	return base
}

// stripeMockBinary answers the path of stripe-mock, or "" when it is not
// installed where `go install` puts it or on PATH.
func stripeMockBinary() string {
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p
	}
	var dirs []string
	if gobin := os.Getenv("GOBIN"); gobin != "" {
		dirs = append(dirs, gobin)
	}
	for _, gopath := range filepath.SplitList(build.Default.GOPATH) {
		dirs = append(dirs, filepath.Join(gopath, "bin"))
	}
	for _, dir := range dirs {
		p := filepath.Join(dir, "stripe-mock")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// probeClient keeps no idle connection to stripe-mock once it answered, so
// that leak checks of the packages using it see none.
var probeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// stripeMockAnswers reports whether stripe-mock answers an API request
// (with any status: a test key it has not seen is fine).
func stripeMockAnswers(base string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/customers", nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer sk_test_123")
	resp, err := probeClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Bytes answers a copy of what was written so far.
func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
