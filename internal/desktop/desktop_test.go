package desktop

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"go.uber.org/goleak"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// busConfig is a session bus without service activation, so that no
// notification daemon installed on the machine is started by a test.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// mustBus starts a private session bus (Debian's dbus-daemon) for the test
// and returns its address.
func mustBus(tb testing.TB) string {
	addr, _ := mustBusKillable(tb)
	return addr
}

// mustBusKillable is mustBus, with a way to end the bus early.
func mustBusKillable(tb testing.TB) (addr string, kill func()) {
	tb.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		testenv.SkipUnlessStrict(tb, "dbus-daemon not found (apt-get install dbus): the notifier is tested on a private session bus")
	}
	dir, err := os.MkdirTemp("", "perch-dbus-") // short: a socket path has ~100 bytes
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, busConfig, filepath.Join(dir, "bus")), 0o600); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-file="+conf, "--nofork", "--print-address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
	tb.Cleanup(func() {
		kill()
		if tb.Failed() {
			tb.Logf("dbus-daemon said: %s", stderr.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case addr = <-line:
		if addr == "" {
			tb.Fatal("dbus-daemon printed no address")
		}
		return addr, kill
	case <-time.After(10 * time.Second):
		tb.Fatal("dbus-daemon did not print its address")
	}
	return "", kill
}

// call is one Notify the fake server received.
type call struct {
	app, summary, body string
	actions            []string
	hints              map[string]dbus.Variant
	timeout            int32
}

// server is a notification server: what a desktop runs.
type server struct {
	conn  *dbus.Conn
	caps  []string
	calls chan call
	next  uint32
}

func (s *server) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.next++
	s.calls <- call{app, summary, body, actions, hints, timeout}
	return s.next, nil
}

func (s *server) GetCapabilities() ([]string, *dbus.Error) { return s.caps, nil }

func (s *server) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "perch-test", "perch", "1", "1.2", nil
}

func (s *server) CloseNotification(id uint32) *dbus.Error { return nil }

// mustServer exports a notification server on the bus at addr.
func mustServer(tb testing.TB, addr string, caps ...string) *server {
	tb.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	s := &server{conn: conn, caps: caps, calls: make(chan call, 16)}
	if err := conn.Export(s, path, service); err != nil {
		tb.Fatal(err)
	}
	reply, err := conn.RequestName(service, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		tb.Fatalf("owning %s: %v (%v)", service, reply, err)
	}
	return s
}

func mustNotifier(tb testing.TB, addr string) *Notifier {
	tb.Helper()
	n, err := Connect(addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { n.Close() })
	return n
}

func (s *server) next1(tb testing.TB) call {
	tb.Helper()
	select {
	case c := <-s.calls:
		return c
	case <-time.After(10 * time.Second):
		tb.Fatal("the server got no Notify")
	}
	return call{}
}

func TestNotifyBySeverity(t *testing.T) {
	t.Parallel()
	addr := mustBus(t)
	srv := mustServer(t, addr, "body", "actions")
	n := mustNotifier(t, addr)
	tests := []struct {
		severity string
		urgency  byte
	}{
		{perch.SeverityInfo, 0},
		{perch.SeverityWarning, 1},
		{perch.SeverityError, 2},
	}
	for i, tt := range tests {
		t.Run(tt.severity, func(t *testing.T) {
			id, err := n.Notify(t.Context(), Message{
				Summary: "Deploy " + tt.severity, Body: "api-1 <prod> & more\nCode",
				Urgency: UrgencyOf(tt.severity), Clickable: tt.severity == perch.SeverityError,
			})
			if err != nil {
				t.Fatal(err)
			}
			if id != uint32(i+1) {
				t.Errorf("id %d, want the server's %d", id, i+1)
			}
			c := srv.next1(t)
			if c.app != "Perch" || c.summary != "Deploy "+tt.severity || c.body != "api-1 <prod> & more\nCode" || c.timeout != -1 {
				t.Errorf("got %+v", c)
			}
			if u, ok := c.hints["urgency"].Value().(byte); !ok || u != tt.urgency {
				t.Errorf("urgency hint %v, want byte %d", c.hints["urgency"], tt.urgency)
			}
			wantActions := tt.severity == perch.SeverityError
			if got := strings.Join(c.actions, ","); (got == "default,Open") != wantActions {
				t.Errorf("actions %q", got)
			}
		})
	}
}

func TestBodyIsEscapedForMarkupServers(t *testing.T) {
	t.Parallel()
	addr := mustBus(t)
	srv := mustServer(t, addr, "body", "body-markup")
	n := mustNotifier(t, addr)
	if _, err := n.Notify(t.Context(), Message{Summary: "a < b", Body: "<b>not bold</b> & co"}); err != nil {
		t.Fatal(err)
	}
	if c := srv.next1(t); c.body != "&lt;b&gt;not bold&lt;/b&gt; &amp; co" || c.summary != "a < b" {
		t.Errorf("summary %q, body %q", c.summary, c.body)
	}
}

func TestClickIsReported(t *testing.T) {
	t.Parallel()
	addr := mustBus(t)
	srv := mustServer(t, addr, "actions")
	n := mustNotifier(t, addr)
	id, err := n.Notify(t.Context(), Message{Summary: "PR opened", Clickable: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.next1(t)
	// A click on another action, then on the notification itself.
	if err := srv.conn.Emit(path, service+".ActionInvoked", id, "dismiss"); err != nil {
		t.Fatal(err)
	}
	if err := srv.conn.Emit(path, service+".ActionInvoked", id, "default"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-n.Activated():
		if got != id {
			t.Errorf("activated %d, want %d", got, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the click was not reported")
	}
}

func TestNoServer(t *testing.T) {
	t.Parallel()
	addr := mustBus(t)
	n := mustNotifier(t, addr)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := n.Notify(ctx, Message{Summary: "nobody listens"}); err == nil {
		t.Error("Notify without a notification server succeeded")
	}
}

func TestSessionAddress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if a, err := SessionAddress(env(map[string]string{"DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus"})); err != nil || a != "unix:path=/run/user/1000/bus" {
		t.Errorf("from the variable: %q, %v", a, err)
	}
	if _, err := SessionAddress(env(map[string]string{"XDG_RUNTIME_DIR": dir})); err == nil {
		t.Error("no variable and no socket: want an error")
	}
	if _, err := SessionAddress(env(nil)); err == nil || !strings.Contains(err.Error(), "DBUS_SESSION_BUS_ADDRESS") {
		t.Errorf("nothing at all: %v", err)
	}
}

func TestHasTrayHost(t *testing.T) {
	t.Parallel()
	addr := mustBus(t)
	n := mustNotifier(t, addr)
	if has, err := n.HasTrayHost(t.Context()); err != nil || has {
		t.Fatalf("an empty bus has a tray: %v, %v", has, err)
	}
	panel, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer panel.Close()
	if _, err := panel.RequestName("org.kde.StatusNotifierWatcher", dbus.NameFlagDoNotQueue); err != nil {
		t.Fatal(err)
	}
	if has, err := n.HasTrayHost(t.Context()); err != nil || !has {
		t.Errorf("with a panel on the bus: %v, %v", has, err)
	}
}

func TestDoneWhenTheBusGoesAway(t *testing.T) {
	t.Parallel()
	addr, kill := mustBusKillable(t)
	n := mustNotifier(t, addr)
	select {
	case <-n.Done():
		t.Fatal("done while the bus is up")
	default:
	}
	kill() // the desktop session ends
	select {
	case <-n.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the bus went away")
	}
}
