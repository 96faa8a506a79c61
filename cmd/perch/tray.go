package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
	"github.com/perch-dev/perch/internal/creds"
	"github.com/perch-dev/perch/internal/desktop"
	trayui "github.com/perch-dev/perch/internal/tray"
)

// trayConsumer names the tray's resume point in the credentials store.
const trayConsumer = "tray"

// errNoTray is perch tray's answer in a build without the tray (trayBuiltIn):
// a macOS binary built without cgo, as the release's are.
var errNoTray = errors.New("this perch has no tray: it was built without cgo (CGO_ENABLED=0, as the release archives for macOS are), and the macOS menu bar needs cgo. " +
	"For the tray, build perch from source on the Mac, where cgo is on by default: install Go and Xcode's command line tools (xcode-select --install), then go build -o perch ./cmd/perch in a checkout. " +
	"perch listen works in this build meanwhile")

// tray runs the menu-bar app: `perch tray [--server URL]`. It follows the
// signed-in user's notifications, shows them in the tray icon's menu and
// raises a desktop notification for each new one, until Quit or a signal.
func tray(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if !trayBuiltIn {
		return errNoTray
	}
	c := newCLI(getenv, nil, stdout, stderr)
	fs := c.flags("tray", "perch tray [--server URL]")
	serverFlag := fs.String("server", "", "server URL (default: PERCH_SERVER, then the server of the default sign-in)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	st, err := c.store()
	if err != nil {
		return err
	}
	server, err := c.chosenServer(*serverFlag)
	if err != nil {
		return err
	}
	if server == "" {
		si, err := st.Get("")
		if err != nil {
			return errors.New("not signed in: run perch login first, or perch tray --server URL to sign in from the tray")
		}
		server = si.Server
	}

	notifier, err := traySession(getenv, stderr)
	if err != nil {
		return err
	}
	if notifier != nil {
		defer notifier.Close()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, quit := context.WithCancel(ctx)
	defer quit()
	if notifier != nil {
		go func() {
			select {
			case <-notifier.Done(): // the session bus went away: so did the desktop
				fmt.Fprintln(stderr, "perch tray: the desktop session ended")
				quit()
			case <-ctx.Done():
			}
		}()
	}
	return runSystray(newTrayApp(ctx, c, st, server, notifier), quit)
}

// traySession checks that there is a desktop to put an icon in, where that
// can be told: on Linux and the BSDs the icon (a StatusNotifierItem) and the
// desktop notifications both live on the D-Bus session bus, and without one
// systray would wait forever. It returns the desktop notifier there, or nil
// on systems without one.
func traySession(getenv func(string) string, stderr io.Writer) (*desktop.Notifier, error) {
	switch runtime.GOOS {
	case "darwin", "windows", "android", "ios":
		return nil, nil
	}
	if getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" && getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		return nil, errors.New("perch tray needs a desktop session: DISPLAY, WAYLAND_DISPLAY and DBUS_SESSION_BUS_ADDRESS are all unset (use perch listen in a terminal instead)")
	}
	addr, err := desktop.SessionAddress(getenv)
	if err != nil {
		return nil, fmt.Errorf("perch tray needs the desktop's D-Bus session bus for its icon: %w", err)
	}
	n, err := desktop.Connect(addr)
	if err != nil {
		return nil, fmt.Errorf("perch tray needs the desktop's D-Bus session bus for its icon: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ok, err := n.HasTrayHost(ctx); err == nil && !ok {
		// Not fatal: at log-in the panel may start after us, and systray
		// registers the icon when it does.
		fmt.Fprintln(stderr, "perch tray: no system tray is running (nothing owns org.kde.StatusNotifierWatcher on the session bus); the icon appears when one starts. GNOME needs the AppIndicator extension. Desktop notifications work meanwhile.")
	}
	return n, nil
}

// trayNotifier raises desktop notifications and reports clicks on them
// (*desktop.Notifier; tests fake it).
type trayNotifier interface {
	Notify(ctx context.Context, m desktop.Message) (uint32, error)
	Activated() <-chan uint32
	Invoked() <-chan desktop.Invocation
}

// trayApp is the tray without its drawing: the subscription feeding the
// model, the menu's actions, and desktop notifications. The UI redraws from
// model.View() whenever redraw has a value.
type trayApp struct {
	ctx      context.Context // the app's life: Quit ends it
	cli      *cli
	store    *creds.Store
	server   string
	model    *trayui.Model
	notifier trayNotifier // nil: none
	log      *log.Logger
	redraw   chan struct{} // cap 1: the view changed since the last draw
	wake     chan struct{} // cap 1: look for a sign-in now

	watchEvery   time.Duration // between looks at the credentials file (a sign-in stored or removed elsewhere)
	retryRefused time.Duration // before trying a server that refused for good (not 401) again

	mu      sync.Mutex
	closed  bool
	work    sync.WaitGroup
	client  *client.Client     // nil while signed out
	signIn  *creds.SignIn      // what client was made from
	stop    context.CancelFunc // ends the current subscription
	login   context.CancelFunc // ends a sign-in in the browser, while one runs
	raised  map[uint32]trayui.Popup
	order   []uint32 // of raised, oldest first
	warned  bool     // a failed desktop notification has been logged
	lastErr string   // the last id-store error logged
	offline string   // the last reason for being offline logged, until connected again
}

// newTrayApp returns the tray of server, which lives until ctx ends. n may
// be nil: no desktop notifications.
func newTrayApp(ctx context.Context, c *cli, st *creds.Store, server string, n *desktop.Notifier) *trayApp {
	a := &trayApp{
		ctx: ctx, cli: c, store: st, server: server, model: trayui.New(server, trayui.DefaultLimits),
		log:    log.New(c.stderr, "perch tray: ", log.LstdFlags),
		redraw: make(chan struct{}, 1), wake: make(chan struct{}, 1),
		watchEvery: time.Second, retryRefused: time.Minute,
		raised: map[uint32]trayui.Popup{},
	}
	if n != nil { // a nil *desktop.Notifier must stay a nil interface
		a.notifier = n
	}
	return a
}

// run follows the server until the app ends: while signed in, the
// subscription; while not, it waits for a sign-in to appear in the store
// (perch login, or Sign in from the menu). It returns once everything it
// started has ended.
func (a *trayApp) run() {
	ctx := a.ctx
	defer func() {
		a.mu.Lock()
		a.closed = true
		a.mu.Unlock()
		a.work.Wait()
	}()
	if a.notifier != nil {
		a.spawn(ctx, a.relayClicks)
	}
	var refused *creds.SignIn // the server refused it: wait for another one
	var broken string         // the last error reading the store, logged once
	for ctx.Err() == nil {
		seen := a.store.Version()
		si, err := a.store.Get(a.server)
		if err != nil || sameSignIn(si, refused) {
			if err != nil && !errors.Is(err, creds.ErrNotSignedIn) && err.Error() != broken {
				broken = err.Error()
				a.log.Printf("reading the sign-in: %v", err)
			}
			if refused == nil && a.model.View().Status != trayui.SignedOut {
				a.apply(a.model.SignOut(""))
			}
			a.waitForChange(ctx, seen)
			continue
		}
		refused = nil
		err = a.follow(ctx, si, seen)
		switch {
		case err == nil || ctx.Err() != nil: // signed out (here or elsewhere), or quitting
		case perch.ErrorCode(err) == perch.EUNAUTHORIZED:
			refused = si
			a.apply(a.model.SignOut("the server refused the sign-in"))
		default:
			a.apply(a.model.Disconnected(err, a.retryRefused))
			a.logOffline(err)
			a.idle(ctx, a.retryRefused)
		}
	}
}

// waitForChange waits until the credentials file is no longer the version
// seen (a sign-in stored or removed by perch login, perch logout or
// another tray), for a wake-up (Sign in from the menu), or for the end of
// ctx.
func (a *trayApp) waitForChange(ctx context.Context, seen creds.Version) {
	t := time.NewTicker(a.watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
			return
		case <-t.C:
			if !a.store.Version().Same(seen) {
				return
			}
		}
	}
}

// watchSignIn ends the subscription (stop) as soon as the sign-in it
// follows, si, stored when the credentials file was the version seen, is
// no longer the server's: signed out by perch logout or another tray, or
// another account signed in. A renewal (new tokens of the same sign-in)
// goes on.
func (a *trayApp) watchSignIn(ctx context.Context, si *creds.SignIn, seen creds.Version, stop context.CancelFunc) {
	t := time.NewTicker(a.watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := a.store.Version()
		if now.Same(seen) {
			continue
		}
		seen = now
		cur, err := a.store.Get(a.server)
		if errors.Is(err, creds.ErrNotSignedIn) || err == nil && !sameAccount(cur, si) {
			stop()
			return
		}
	}
}

// sameAccount reports whether two sign-ins are one account's, by one kind
// of credential, as a renewal leaves them.
func sameAccount(a, b *creds.SignIn) bool {
	return a.Email == b.Email && a.APIToken == b.APIToken && (a.RefreshToken == "") == (b.RefreshToken == "")
}

// logOffline logs why the tray is offline, err as it came (the menu says
// it in words), once per reason until it is connected again.
func (a *trayApp) logOffline(err error) {
	if err == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if msg := message(err); msg != a.offline {
		a.offline = msg
		a.log.Printf("offline from %s: %s", a.server, msg)
	}
}

// idle waits for d, a wake-up or the end of ctx.
func (a *trayApp) idle(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-a.wake:
	}
}

func sameSignIn(a, b *creds.SignIn) bool {
	return a != nil && b != nil && a.AccessToken == b.AccessToken && a.RefreshToken == b.RefreshToken && a.APIToken == b.APIToken
}

// follow listens with the sign-in si, read from the credentials file's
// version seen, until it is signed out, here or elsewhere (nil), ctx ends
// (nil) or the server refuses for good.
func (a *trayApp) follow(ctx context.Context, si *creds.SignIn, seen creds.Version) error {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := a.store.Client(si, a.cli.clientOpts...)
	a.mu.Lock()
	a.client, a.signIn, a.stop = c, si, cancel
	a.mu.Unlock()
	a.spawn(lctx, func(ctx context.Context) { a.watchSignIn(ctx, si, seen, cancel) })
	defer func() {
		a.mu.Lock()
		a.client, a.signIn, a.stop = nil, nil, nil
		a.mu.Unlock()
	}()
	a.apply(a.model.SignedIn())
	since := a.store.LastID(a.server, trayConsumer)
	return c.Listen(lctx, since, func(e client.Event) { a.handle(lctx, c, e) })
}

// handle feeds one event of the subscription to the model.
func (a *trayApp) handle(ctx context.Context, c *client.Client, e client.Event) {
	switch e.Type {
	case client.EventConnected:
		a.mu.Lock()
		a.offline = ""
		a.mu.Unlock()
		a.apply(a.model.Connected())
	case client.EventNotification:
		a.apply(a.model.Receive(e.Notification, e.Silent))
		if err := a.store.SetLastID(a.server, trayConsumer, e.Notification.ID); err != nil && err.Error() != a.lastErr {
			a.lastErr = err.Error() // Listen calls handle from one goroutine
			a.log.Printf("remembering where to resume: %v", err)
		}
	case client.EventReady:
		a.apply(a.model.Ready(e.Gap))
		if e.Preferences != nil {
			a.setSnooze(e.Preferences.SnoozeUntil)
		}
		// The replay brings what is new; the menu also wants what came
		// before, and the read state of it, which may have changed while
		// the tray was away. What is stored after the ready (e.LastID) may
		// be on the page already but is left to its frame, which raises it.
		upTo := e.LastID
		a.spawn(ctx, func(ctx context.Context) {
			page, err := c.Notifications(ctx, "", trayui.DefaultLimits.Total)
			if err != nil || ctx.Err() != nil {
				return // the next Ready tries again
			}
			a.apply(a.model.Merge(page, upTo))
		})
	case client.EventPreferences:
		// Snoozed or woken on another client (or here: the answer to the
		// PUT says the same).
		a.setSnooze(e.Preferences.SnoozeUntil)
	case client.EventRead:
		if a.model.ApplyRead(e.ReadIDs) {
			a.changed()
		}
	case client.EventDisconnected:
		a.apply(a.model.Disconnected(e.Err, e.RetryIn))
		a.logOffline(e.Err)
	}
}

// apply redraws and raises what a change of the model asks for.
func (a *trayApp) apply(ch trayui.Change) {
	if ch.Redraw {
		a.changed()
	}
	for _, p := range ch.Popups {
		a.raise(p)
	}
}

func (a *trayApp) changed() {
	select {
	case a.redraw <- struct{}{}:
	default: // a redraw is due already
	}
}

// maxRaised bounds the desktop notifications whose clicks are remembered.
const maxRaised = 100

func (a *trayApp) raise(p trayui.Popup) {
	if a.notifier == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	msg := desktop.Message{Summary: p.Summary, Body: p.Body, Urgency: desktop.UrgencyOfPriority(p.Priority, p.Severity), Clickable: true}
	for _, act := range p.Actions {
		msg.Buttons = append(msg.Buttons, desktop.Button{Key: act.ID, Label: act.Label})
	}
	id, err := a.notifier.Notify(ctx, msg)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		if !a.warned {
			a.warned = true
			a.log.Printf("desktop notifications do not work (is a notification daemon running?): %v", err)
		}
		return
	}
	a.raised[id] = p
	a.order = append(a.order, id)
	if len(a.order) > maxRaised {
		delete(a.raised, a.order[0])
		a.order = a.order[1:]
	}
}

// relayClicks opens what a clicked desktop notification is about, and runs
// the action of a clicked button.
func (a *trayApp) relayClicks(ctx context.Context) {
	clicks, buttons := a.notifier.Activated(), a.notifier.Invoked()
	for {
		select {
		case <-ctx.Done():
			return
		case b, ok := <-buttons:
			if !ok {
				buttons = nil // closed: clicks still come
				continue
			}
			a.mu.Lock()
			p, known := a.raised[b.ID]
			a.mu.Unlock()
			if known && p.ID != "" {
				a.runAction(p.ID, b.Key)
			}
		case id, ok := <-clicks:
			if !ok {
				return
			}
			a.mu.Lock()
			p, known := a.raised[id]
			a.mu.Unlock()
			switch {
			case !known:
			case p.ID != "":
				a.openItem(p.ID)
			default: // a summary of many
				a.openDashboard()
			}
		}
	}
}

// spawn runs fn in the background, tracked so that run waits for it; after
// run has ended it runs nothing.
func (a *trayApp) spawn(ctx context.Context, fn func(context.Context)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.work.Go(func() { fn(ctx) })
}

// session returns the signed-in client, or nil.
func (a *trayApp) session() *client.Client {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.client
}

// account is the address of the signed-in user, when known.
func (a *trayApp) account() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.signIn == nil {
		return ""
	}
	return a.signIn.Email
}

// openItem is a click on a notification: it is marked read, here and on
// the server, and its link opened.
func (a *trayApp) openItem(id string) {
	it, ok := a.model.Item(id)
	if !ok {
		return
	}
	if a.model.MarkRead(id) {
		a.changed()
		if c := a.session(); c != nil {
			a.spawn(a.ctx, func(ctx context.Context) {
				ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				if err := c.MarkRead(ctx, []string{id}); err != nil {
					a.log.Printf("marking %s read on the server: %s", id, message(err))
				}
			})
		}
	}
	if it.URL != "" {
		if err := a.cli.openBrowser(it.URL); err != nil {
			a.log.Printf("opening %s: %v", it.URL, err)
		}
	}
}

// markAllRead marks everything read, here and on the server.
func (a *trayApp) markAllRead() {
	if a.model.MarkAllRead() {
		a.changed()
	}
	if c := a.session(); c != nil {
		a.spawn(a.ctx, func(ctx context.Context) {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := c.MarkAllRead(ctx); err != nil {
				a.log.Printf("marking everything read on the server: %s", message(err))
			}
		})
	}
}

// togglePause pauses or resumes desktop notifications.
func (a *trayApp) togglePause() {
	if a.model.SetPaused(!a.model.Paused()) {
		a.changed()
	}
}

func (a *trayApp) openDashboard() {
	if err := a.cli.openBrowser(a.server + "/notifications"); err != nil {
		a.log.Printf("opening the dashboard: %v", err)
	}
}

// signOut forgets the sign-in here and ends it on the server (a session;
// an API token lives until it is deleted on the dashboard).
func (a *trayApp) signOut() {
	a.mu.Lock()
	c, si, stop := a.client, a.signIn, a.stop
	a.mu.Unlock()
	if si == nil {
		return
	}
	// Forgotten first, so that the subscription, once stopped, does not
	// start again with it.
	if _, err := a.store.Remove(si.Server); err != nil && !errors.Is(err, creds.ErrNotSignedIn) {
		a.log.Printf("forgetting the sign-in: %v", err)
		return
	}
	stop()
	a.apply(a.model.SignOut(""))
	if si.RefreshToken == "" {
		a.log.Print("signed out; the API token itself still works: delete it on the dashboard's API tokens page to end it")
		return
	}
	a.spawn(a.ctx, func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := c.Logout(ctx); err != nil {
			a.log.Printf("%s did not end the session (%s); it is forgotten here anyway", si.Server, message(err))
		}
	})
}

// signInFlow runs the desktop sign-in in the browser (as perch login does)
// and stores the sign-in, which the subscription then picks up. A second
// click while one runs starts it again.
func (a *trayApp) signInFlow() {
	lctx, cancel := context.WithCancel(a.ctx)
	a.mu.Lock()
	if a.login != nil {
		a.login()
	}
	a.login = cancel
	a.mu.Unlock()
	a.apply(a.model.SignOut("finish signing in in the browser"))
	a.spawn(lctx, func(ctx context.Context) {
		defer cancel()
		si, err := a.cli.browserLogin(ctx, a.server, trayClientName, true, func(start *client.DeviceStart) {
			a.apply(a.model.SignOut("finish signing in in the browser with the code " + start.UserCode))
		})
		switch {
		case ctx.Err() != nil:
			return // replaced by another click, or quitting
		case err != nil:
			a.apply(a.model.SignOut(message(err)))
			return
		}
		if err := a.store.Put(si); err != nil {
			a.apply(a.model.SignOut("storing the sign-in: " + err.Error()))
			return
		}
		select {
		case a.wake <- struct{}{}:
		default:
		}
	})
}
