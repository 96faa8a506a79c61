package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
	"github.com/perch-dev/perch/internal/creds"
)

// TestListenSurvivesAKill runs perch listen --json as a real process, kills
// it (SIGKILL) between notifications, sends more while it is down, and
// starts it again: across both runs every notification sent is printed
// once, in order.
func TestListenSurvivesAKill(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL and SIGINT are Unix signals")
	}
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	dir := t.TempDir()
	_, pat, err := u.api.CreateAPIToken(t.Context(), "listen")
	if err != nil {
		t.Fatal(err)
	}
	c, _, _ := testCLI(t, dir, nil)
	if err := dispatch(t.Context(), "login", []string{"--server", base, "--token", pat}, c); err != nil {
		t.Fatal(err)
	}
	st, _ := creds.Open(dir)

	var sent []string
	send := func(n int) {
		for range n {
			c, stdout, _ := testCLI(t, t.TempDir(), map[string]string{"PERCH_SERVER": base, "PERCH_WEBHOOK_TOKEN": u.webhook})
			if err := dispatch(t.Context(), "send", []string{"--title", fmt.Sprintf("event %d", len(sent))}, c); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, strings.TrimSpace(stdout.String()))
		}
	}
	var printed []string
	read := func(p *listenProcess, n int) {
		t.Helper()
		for range n {
			select {
			case line, ok := <-p.lines:
				if !ok {
					t.Fatalf("perch listen stopped; stderr:\n%s", p.stderr)
				}
				var got perch.Notification
				if err := json.Unmarshal([]byte(line), &got); err != nil || got.ID == "" || !strings.HasPrefix(got.Title, "event ") {
					t.Fatalf("line %q: %v", line, err)
				}
				printed = append(printed, got.ID)
			case <-time.After(20 * time.Second):
				t.Fatalf("waiting for a line; printed %v, sent %v; stderr:\n%s", printed, sent, p.stderr)
			}
		}
	}

	p := startListen(t, dir, base)
	send(3)
	read(p, 3)
	// Killed once what it printed is recorded: nothing is in flight, and
	// the next run must carry on from exactly here.
	eventually(t, "the resume point", func() bool { return st.LastID(base, "listen") == printed[len(printed)-1] })
	p.cmd.Process.Kill()
	if rest := p.drain(); len(rest) > 0 {
		t.Fatalf("printed after the resume point was recorded: %q", rest)
	}
	p.cmd.Wait()

	send(4) // while nobody listens

	p = startListen(t, dir, base)
	read(p, 4) // the replay
	send(3)    // live
	read(p, 3)
	p.cmd.Process.Signal(os.Interrupt)
	if rest := p.drain(); len(rest) > 0 {
		t.Fatalf("extra lines %q", rest)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("perch listen after SIGINT: %v (exit 0 expected); stderr:\n%s", err, p.stderr)
	}

	if !slices.Equal(printed, sent) {
		t.Fatalf("printed %v\nsent    %v", printed, sent)
	}
	for i := 1; i < len(printed); i++ {
		a, _ := strconv.Atoi(printed[i-1])
		b, _ := strconv.Atoi(printed[i])
		if a >= b {
			t.Fatalf("ids out of order: %v", printed)
		}
	}
}

// listenProcess is perch listen --json running as a child process.
type listenProcess struct {
	cmd    *exec.Cmd
	lines  chan string // stdout, closed at its end
	stderr *syncBuffer
}

// startListen starts perch listen --json with the credentials in dir and
// waits until it is subscribed.
func startListen(t *testing.T, dir, server string) *listenProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "listen", "--json", "--server", server)
	cmd.Env = append(os.Environ(), "PERCH_RUN_MAIN=1", "PERCH_CONFIG_DIR="+dir)
	p := &listenProcess{cmd: cmd, lines: make(chan string, 100), stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			p.drain()
			cmd.Wait()
		}
	})
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	p.stderr.waitFor(t, "listening for notifications from "+server)
	return p
}

// drain returns what the process printed until its stdout closed.
func (p *listenProcess) drain() []string {
	var rest []string
	for line := range p.lines {
		rest = append(rest, line)
	}
	return rest
}

func TestListenFiltersAndFormats(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	dir := t.TempDir()
	st := u.signInTo(t, dir, base)
	c, stdout, stderr := testCLI(t, dir, nil)
	stop := background(t, c, "listen", "--tab", "deploys", "--min-severity", "warning")
	stderr.waitFor(t, "listening for notifications from "+base)

	u.send(t, client.InboundEvent{Title: "one", Tab: "Deploys"}) // info: below the floor
	u.send(t, client.InboundEvent{Title: "two", Tab: "Deploys", Severity: "warning", Message: "first line\nsecond line"})
	u.send(t, client.InboundEvent{Title: "three", Tab: "Billing", Severity: "error"}) // another tab
	last := u.send(t, client.InboundEvent{Title: "four", Tab: "Deploys", Severity: "error"})
	// Filtered notifications move the filter's own resume point on too.
	filtered := consumerName("", "Deploys", severityRank[perch.SeverityWarning])
	eventually(t, "the resume point", func() bool { return st.LastID(base, filtered) == last })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := st.LastID(base, resumeConsumer); got != "" {
		t.Fatalf("the filtered listen moved the unfiltered resume point to %q", got)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	want := []string{`  [warning] Deploys: two — first line second line`, `  [error, high] Deploys: four`}
	if len(lines) != len(want) {
		t.Fatalf("printed:\n%s", stdout)
	}
	for i, l := range lines {
		if stamp, rest, _ := strings.Cut(l, "  "); rest != want[i][2:] || len(stamp) != len("2006-01-02 15:04:05") {
			t.Errorf("line %q, want a time then %q", l, want[i])
		}
	}
}

// TestListenFiltersKeepTheirOwnResumePoints: a filtered listen passes over
// what it hides, so a later unfiltered listen (or one of another filter, or
// another --name) still shows it.
func TestListenFiltersKeepTheirOwnResumePoints(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	dir := t.TempDir()
	u.signInTo(t, dir, base)
	runs := 0
	run := func(args ...string) []string {
		t.Helper()
		c, stdout, stderr := testCLI(t, dir, nil)
		stop := background(t, c, append([]string{"listen", "--json"}, args...)...)
		stderr.waitFor(t, "listening for notifications from "+base)
		runs++
		sentinel := fmt.Sprintf("sentinel %d", runs)
		u.send(t, client.InboundEvent{Title: sentinel, Tab: "Deploys", Severity: "error"})
		stdout.waitFor(t, `"title":"`+sentinel+`"`)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		var titles []string
		for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			var n perch.Notification
			json.Unmarshal([]byte(line), &n)
			if !strings.HasPrefix(n.Title, "sentinel") {
				titles = append(titles, n.Title)
			}
		}
		return titles
	}
	// Each keeps a resume point from its first run on.
	run("--tab", "deploys")
	run()
	u.send(t, client.InboundEvent{Title: "deploy", Tab: "Deploys", Severity: "error"})
	u.send(t, client.InboundEvent{Title: "invoice", Tab: "Billing"})
	if got := run("--tab", "deploys"); !slices.Equal(got, []string{"deploy"}) {
		t.Fatalf("the filtered listen showed %q", got)
	}
	// The unfiltered listen resumes from its own point: the invoice the
	// filter hid is there (and the deploy, and the filter's sentinel).
	if got := run(); !slices.Equal(got, []string{"deploy", "invoice"}) {
		t.Fatalf("the unfiltered listen showed %q", got)
	}
	// A name of its own starts where nothing was recorded: from now.
	if got := run("--name", "ci"); len(got) != 0 {
		t.Fatalf("a new --name showed %q", got)
	}
	c, _, _ := testCLI(t, dir, nil)
	if err := dispatch(t.Context(), "listen", []string{"--name", "no/slashes"}, c); err == nil || !strings.Contains(err.Error(), "--name") {
		t.Fatalf("a bad --name: %v", err)
	}
}

func TestListenExec(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("the command is written for sh")
	}
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	dir := t.TempDir()
	st := u.signInTo(t, dir, base)
	c, stdout, stderr := testCLI(t, dir, nil)
	stop := background(t, c, "listen", "--exec",
		`echo "$PERCH_ID|$PERCH_TITLE|$PERCH_MESSAGE|$PERCH_SEVERITY|$PERCH_TAB|$PERCH_SOURCE|$PERCH_URL|$PERCH_PRIORITY|$PERCH_TAGS|$PERCH_CREATED_AT"; test "$PERCH_TITLE" != bad`)
	stderr.waitFor(t, "listening for notifications from "+base)

	one := u.send(t, client.InboundEvent{Title: "one", Message: "it's \"quoted\"", Tab: "Ops", Severity: "warning", Priority: "high", Tags: []string{"rocket", "api"}})
	bad := u.send(t, client.InboundEvent{Title: "bad"})
	two := u.send(t, client.InboundEvent{Title: "two"})
	eventually(t, "the resume point", func() bool { return st.LastID(base, "listen") == two })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("command output:\n%s", stdout)
	}
	for i, want := range [][]string{
		{one, "one", `it's "quoted"`, "warning", "Ops", "inbound", "", "high", "rocket,api"},
		{bad, "bad", "", "info", "Inbound", "inbound", "", "default", ""},
		{two, "two", "", "info", "Inbound", "inbound", "", "default", ""},
	} {
		got := strings.Split(lines[i], "|")
		if len(got) != 10 || !slices.Equal(got[:9], want) {
			t.Errorf("line %q, want %q and a time", lines[i], want)
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, got[9]); err != nil {
			t.Errorf("PERCH_CREATED_AT: %v", err)
		}
	}
	if !strings.Contains(stderr.String(), "--exec failed for notification "+bad+": exit status 1") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// A sign-in the server no longer honours ends listen with an error that
// says what to do.
func TestListenSignedOut(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	dir := t.TempDir()
	st, _ := creds.Open(dir)
	st.Put(&creds.SignIn{Server: base, AccessToken: "pac_revoked", RefreshToken: "prf_revoked"})
	c, _, _ := testCLI(t, dir, nil)
	err := dispatch(t.Context(), "listen", nil, c)
	if err == nil || !strings.Contains(err.Error(), "not signed in to "+base+" any more") || !strings.Contains(err.Error(), "run perch login --server "+base) {
		t.Fatalf("listen: %v", err)
	}
	c, _, _ = testCLI(t, t.TempDir(), nil)
	if err := dispatch(t.Context(), "listen", nil, c); err == nil || !strings.Contains(err.Error(), "not signed in") {
		t.Fatalf("listen without a sign-in: %v", err)
	}
}

// TestListenReportsALongDisconnection cuts the way to the server for longer
// than quietFor: listen says so once, says when it is back, and goes on.
func TestListenReportsALongDisconnection(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	proxy := startProxy(t, base)
	dir := t.TempDir()
	u.signInTo(t, dir, proxy.url)
	c, stdout, stderr := testCLI(t, dir, nil)
	c.quietFor = 20 * time.Millisecond
	stop := background(t, c, "listen")
	stderr.waitFor(t, "listening for notifications from "+proxy.url)

	proxy.cut()
	stderr.waitFor(t, "disconnected from "+proxy.url+`: .+; reconnecting…\n`)
	proxy.restore()
	stderr.waitFor(t, "reconnected to "+proxy.url+"\n")
	u.send(t, client.InboundEvent{Title: "after the outage"})
	stdout.waitFor(t, `\[info\] Inbound: after the outage`)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(stderr.String(), "disconnected from"); n != 1 {
		t.Errorf("disconnection told %d times:\n%s", n, stderr)
	}
}

// tcpProxy forwards connections to a server until cut, which breaks them
// all and refuses new ones until restore.
type tcpProxy struct {
	url    string
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, base string) *tcpProxy {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{url: "http://" + ln.Addr().String(), ln: ln, target: u.Host, conns: map[net.Conn]bool{}}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *tcpProxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		if p.down { // cut while dialling
			p.mu.Unlock()
			in.Close()
			out.Close()
			continue
		}
		p.conns[in], p.conns[out] = true, true
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		p.wg.Go(func() { pipe(out, in) })
		p.wg.Go(func() { pipe(in, out) })
	}
}

func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *tcpProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}
