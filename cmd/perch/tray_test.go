package main

import (
	"context"
	"errors"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
	"github.com/perch-dev/perch/internal/creds"
	"github.com/perch-dev/perch/internal/desktop"
	trayui "github.com/perch-dev/perch/internal/tray"
)

// fakeDesktop is the desktop's notification server, as the tray sees it.
type fakeDesktop struct {
	mu      sync.Mutex
	raised  []desktop.Message
	clicks  chan uint32
	buttons chan desktop.Invocation // nil: no button is ever clicked
}

func (d *fakeDesktop) Notify(_ context.Context, m desktop.Message) (uint32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.raised = append(d.raised, m)
	return uint32(len(d.raised)), nil
}

func (d *fakeDesktop) Activated() <-chan uint32 { return d.clicks }

func (d *fakeDesktop) Invoked() <-chan desktop.Invocation { return d.buttons }

func (d *fakeDesktop) messages() []desktop.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.raised)
}

// openedURLs records what the tray opened in the browser.
type openedURLs struct {
	mu   sync.Mutex
	urls []string
}

func (o *openedURLs) open(u string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.urls = append(o.urls, u)
	return nil
}

func (o *openedURLs) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.urls)
}

// startTray runs the tray app, without systray, on the sign-in stored in
// dir; it stops when the test ends or stop is called.
func startTray(t *testing.T, dir, server string) (app *trayApp, d *fakeDesktop, opened *openedURLs, stop func()) {
	t.Helper()
	c, _, _ := testCLI(t, dir, nil)
	opened = &openedURLs{}
	c.openBrowser = opened.open
	st, err := creds.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	app = newTrayApp(ctx, c, st, server, nil)
	d = &fakeDesktop{clicks: make(chan uint32)}
	app.notifier = d
	app.watchEvery = 10e6 // 10 ms
	done := make(chan struct{})
	go func() { app.run(); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return app, d, opened, stop
}

func waitOnline(t *testing.T, app *trayApp) {
	t.Helper()
	eventually(t, "the tray to be online", func() bool { return app.model.View().Status == trayui.Online })
}

func readOnServer(t *testing.T, u *testUser, id string) bool {
	t.Helper()
	list, err := u.api.Notifications(t.Context(), "", 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list {
		if n.ID == id {
			return n.Read
		}
	}
	t.Fatalf("notification %s is not on the server", id)
	return false
}

// TestTrayRaisesWhatIsStoredAfterReady: a notification stored after the
// subscription's ready, whose frame has not reached the tray yet, is already
// in the history page the tray fetches on ready. The page must leave it to
// its frame, which raises it; taken from the page, it would never be raised.
func TestTrayRaisesWhatIsStoredAfterReady(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	dir := t.TempDir()
	u.signInTo(t, dir, base)
	c, _, _ := testCLI(t, dir, nil)
	st, err := creds.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	app := newTrayApp(t.Context(), c, st, base, nil)
	d := &fakeDesktop{clicks: make(chan uint32)}
	app.notifier = d

	// The subscription is ready with nothing to resume from ("0": the user
	// had no notification), and only then is one stored.
	app.handle(t.Context(), u.api, client.Event{Type: client.EventConnected})
	id := u.send(t, client.InboundEvent{Tab: "Incidents", Title: "Database down", Severity: perch.SeverityError})
	app.handle(t.Context(), u.api, client.Event{Type: client.EventReady, LastID: "0"})
	app.work.Wait() // the history page is merged
	list, err := u.api.Notifications(t.Context(), "", 50)
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("history %v, %v", list, err)
	}
	app.handle(t.Context(), u.api, client.Event{Type: client.EventNotification, Notification: list[0]})
	if got := d.messages(); len(got) != 1 || got[0].Summary != "Database down" {
		t.Fatalf("raised %+v, want the notification once", got)
	}
	if v := app.model.View(); v.Unread != 1 {
		t.Errorf("unread %d, want 1", v.Unread)
	}
}

func TestTrayFollowsTheServer(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	dir := t.TempDir()
	u.signInTo(t, dir, base)
	app, d, _, stop := startTray(t, dir, base)
	waitOnline(t, app)

	// A new notification: counted, in its tab, raised on the desktop.
	first := u.send(t, client.InboundEvent{Tab: "Incidents", Title: "Database down", Message: "primary unreachable", Severity: perch.SeverityError})
	eventually(t, "the notification", func() bool { return app.model.View().Unread == 1 })
	v := app.model.View()
	if v.Severity != perch.SeverityError || len(v.Tabs) != 1 || v.Tabs[0].Name != "Incidents" || v.Tabs[0].Items[0].ID != first {
		t.Errorf("view %+v", v)
	}
	if got := v.Tooltip(); got != "Perch — 1 unread" {
		t.Errorf("tooltip %q", got)
	}
	eventually(t, "a desktop notification", func() bool { return len(d.messages()) == 1 })
	want := desktop.Message{Summary: "Database down", Body: "primary unreachable\nIncidents", Urgency: desktop.Critical, Clickable: true}
	if got := d.messages()[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("raised %+v, want %+v", got, want)
	}
	eventually(t, "the resume point", func() bool { return app.store.LastID(base, trayConsumer) == first })

	// A click on it marks it read on the server.
	app.openItem(first)
	if app.model.View().Unread != 0 {
		t.Error("the clicked notification is still unread")
	}
	eventually(t, "the server to hear of the click", func() bool { return readOnServer(t, u, first) })

	// Another client reads one: the tray hears of it.
	second := u.send(t, client.InboundEvent{Title: "Deploy finished", Severity: perch.SeverityInfo})
	eventually(t, "the second notification", func() bool { return app.model.View().Unread == 1 })
	if err := u.api.MarkRead(t.Context(), []string{second}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the read frame", func() bool { return app.model.View().Unread == 0 })

	// Paused: counted, not raised.
	app.togglePause()
	third := u.send(t, client.InboundEvent{Title: "Disk at 91%", Severity: perch.SeverityWarning})
	eventually(t, "the paused notification", func() bool { return app.model.View().Unread == 1 })
	if n := len(d.messages()); n != 2 {
		t.Errorf("%d desktop notifications while paused, want still 2", n)
	}
	if v := app.model.View(); !v.Paused || !strings.HasSuffix(v.Tooltip(), "notifications paused") {
		t.Errorf("paused view: %q", v.Tooltip())
	}

	// Mark all read, here and there.
	app.markAllRead()
	if app.model.View().Unread != 0 {
		t.Error("still unread after Mark all read")
	}
	eventually(t, "the server to mark all read", func() bool { return readOnServer(t, u, third) })
	stop()

	// Away for a while: five notifications come in, and a new tray raises
	// one summary for them, shows the older ones too, and opens the
	// dashboard when the summary is clicked.
	for i := range 5 {
		u.send(t, client.InboundEvent{Tab: "Code", Title: "Push " + string(rune('a'+i)), Severity: perch.SeverityInfo})
	}
	app, d, opened, _ := startTray(t, dir, base)
	waitOnline(t, app)
	eventually(t, "the summary", func() bool { return len(d.messages()) == 1 })
	// Urgency goes by priority: these are of the default one (info).
	if got := d.messages()[0]; got.Summary != "5 new notifications" || got.Body != "Code 5" || got.Urgency != desktop.Normal {
		t.Errorf("summary %+v", got)
	}
	eventually(t, "the older notifications in the menu", func() bool {
		_, ok := app.model.Item(first)
		return ok && app.model.View().Unread == 5
	})
	d.clicks <- 1
	eventually(t, "the dashboard to open", func() bool { return slices.Equal(opened.list(), []string{base + "/notifications"}) })
}

func TestTraySignsOutAndIn(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Grace")
	// The tray's own session, so that signing it out leaves the test's.
	s, err := client.New(base).Login(t.Context(), "grace@example.com", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st, _ := creds.Open(dir)
	if err := st.Put(&creds.SignIn{Server: base, Email: "grace@example.com", AccessToken: s.AccessToken, RefreshToken: s.RefreshToken}); err != nil {
		t.Fatal(err)
	}
	app, _, _, _ := startTray(t, dir, base)
	waitOnline(t, app)
	if got := app.account(); got != "grace@example.com" {
		t.Errorf("account %q", got)
	}
	u.send(t, client.InboundEvent{Title: "Hello"})
	eventually(t, "the notification", func() bool { return app.model.View().Unread == 1 })

	app.signOut()
	if v := app.model.View(); v.Status != trayui.SignedOut || v.Unread != 0 || v.Tooltip() != "Perch — signed out" {
		t.Errorf("after signing out: %+v", v)
	}
	if _, err := st.Get(base); !errors.Is(err, creds.ErrNotSignedIn) {
		t.Errorf("the sign-in is still stored: %v", err)
	}
	eventually(t, "the session to end on the server", func() bool {
		status, _ := call(t, "POST", base+"/api/v1/auth/refresh", "", map[string]string{"refresh_token": s.RefreshToken})
		return status == 401
	})

	// perch login elsewhere: the tray picks the new sign-in up.
	if err := st.Put(&creds.SignIn{Server: base, Email: "grace@example.com", AccessToken: u.session.AccessToken, RefreshToken: u.session.RefreshToken}); err != nil {
		t.Fatal(err)
	}
	waitOnline(t, app)
	eventually(t, "the history after signing in again", func() bool { return app.model.View().Unread == 1 })
}

// TestTrayNoticesASignOutElsewhere: perch logout (or another tray's Sign
// out) forgets the sign-in in the credentials file; the tray, still
// connected with a session the server has not ended, notices at once from
// the file and shows itself signed out, rather than "Signed in as …" until
// its token runs out.
func TestTrayNoticesASignOutElsewhere(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	dir := t.TempDir()
	u.signInTo(t, dir, base)
	app, _, _, _ := startTray(t, dir, base)
	waitOnline(t, app)
	if app.account() == "" {
		t.Fatal("online without an account")
	}

	st, _ := creds.Open(dir)
	if _, err := st.Remove(base); err != nil { // what perch logout does here
		t.Fatal(err)
	}
	eventually(t, "the tray to show itself signed out", func() bool {
		return app.model.View().Status == trayui.SignedOut && app.account() == ""
	})
	if v := app.model.View(); v.Header() != "Signed out" || !v.Icon().Away {
		t.Errorf("signed out elsewhere: header %q, icon %+v", v.Header(), v.Icon())
	}

	// Signed in again elsewhere: followed again.
	u.signInTo(t, dir, base)
	waitOnline(t, app)
}

// TestTrayOfflineSaysSoInWords: with the server unreachable, the menu says
// that it cannot be reached and that it tries again, the icon is the away
// one, and the raw error goes to the log only.
func TestTrayOfflineSaysSoInWords(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() // nothing listens there once closed
	ln.Close()
	dir := t.TempDir()
	st, _ := creds.Open(dir)
	if err := st.Put(&creds.SignIn{Server: down, Email: "ada@example.com", APIToken: "pat_x"}); err != nil {
		t.Fatal(err)
	}
	c, _, stderr := testCLI(t, dir, nil)
	ctx, cancel := context.WithCancel(t.Context())
	app := newTrayApp(ctx, c, st, down, nil)
	done := make(chan struct{})
	go func() { app.run(); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	eventually(t, "the tray to be offline", func() bool { return app.model.View().Status == trayui.Offline })
	v := app.model.View()
	host := strings.TrimPrefix(down, "http://")
	if h := v.Header(); !strings.HasPrefix(h, "Can't reach "+host+" — retrying") || strings.Contains(h, "dial") {
		t.Errorf("offline, the menu says %q", h)
	}
	if !v.Icon().Away {
		t.Error("offline, the icon is the live one")
	}
	if !strings.Contains(v.Problem, "connect") {
		t.Errorf("the problem kept for the log is %q, want the dial's error", v.Problem)
	}
	eventually(t, "the raw error in the log", func() bool {
		return strings.Contains(stderr.String(), "offline from "+down+": ") && strings.Contains(stderr.String(), "connection refused")
	})
}

func TestTrayRefusesWithoutADesktop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"PERCH_CONFIG_DIR": dir}
	getenv := func(k string) string { return env[k] }
	var out, errOut strings.Builder

	err := tray(t.Context(), nil, getenv, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "perch login") {
		t.Errorf("without a sign-in or --server: %v", err)
	}
	err = tray(t.Context(), []string{"--server", "https://perch.example.com"}, getenv, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "needs a desktop session") {
		t.Errorf("without a display or session bus: %v", err)
	}
	env["DISPLAY"] = ":99"
	env["XDG_RUNTIME_DIR"] = dir // no bus socket in it
	err = tray(t.Context(), []string{"--server", "https://perch.example.com"}, getenv, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "D-Bus session bus") {
		t.Errorf("with a display but no session bus: %v", err)
	}
	if err := tray(t.Context(), []string{"-h"}, getenv, &out, &errOut); !errors.Is(err, errHelp) || !strings.Contains(errOut.String(), "perch tray [--server URL]") {
		t.Errorf("-h: %v\n%s", err, errOut.String())
	}
}
