// Package desktop raises desktop notifications through the freedesktop.org
// notification service (org.freedesktop.Notifications on the D-Bus session
// bus), as Linux and BSD desktops provide it: GNOME Shell, KDE Plasma,
// xfce4-notifyd, dunst, mako.
package desktop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/godbus/dbus/v5"

	"github.com/perch-dev/perch"
)

const (
	service = "org.freedesktop.Notifications"
	path    = dbus.ObjectPath("/org/freedesktop/Notifications")
	appName = "Perch"
)

// Urgency is the urgency hint of the Desktop Notifications Specification.
type Urgency byte

// The urgency levels.
const (
	Low      Urgency = 0
	Normal   Urgency = 1
	Critical Urgency = 2
)

// UrgencyOfPriority maps a notification's priority to an urgency: min and
// low are low, default normal, high and urgent critical (servers keep
// critical notifications until dismissed). A priority outside 1–5 (a
// server from before priorities) goes by the severity, UrgencyOf.
func UrgencyOfPriority(priority int, severity string) Urgency {
	switch {
	case priority < perch.PriorityMin || priority > perch.PriorityUrgent:
		return UrgencyOf(severity)
	case priority >= perch.PriorityHigh:
		return Critical
	case priority == perch.PriorityDefault:
		return Normal
	}
	return Low
}

// UrgencyOf maps a severity to an urgency: info is low, warning normal,
// error critical (servers keep critical notifications until dismissed).
func UrgencyOf(severity string) Urgency {
	switch severity {
	case perch.SeverityError:
		return Critical
	case perch.SeverityWarning:
		return Normal
	}
	return Low
}

// Message is one desktop notification.
type Message struct {
	Summary   string
	Body      string // plain text; escaped for servers that read markup
	Urgency   Urgency
	Clickable bool // offer the "default" action: see Notifier.Activated
	// Buttons are shown where the server draws actions (the "actions"
	// capability); a click on one is reported on Invoked with its Key.
	Buttons []Button
}

// Button is an action button of a desktop notification.
type Button struct {
	Key   string // reported on Invoked; not "default", which is the click on the notification
	Label string
}

// Invocation is a click on a button of a raised notification.
type Invocation struct {
	ID  uint32 // Notify's id of the notification
	Key string // the Button's Key
}

// Notifier raises desktop notifications on one bus connection.
type Notifier struct {
	conn      *dbus.Conn
	signals   chan *dbus.Signal
	activated chan uint32
	invoked   chan Invocation
	done      chan struct{}

	mu   sync.Mutex
	caps map[string]bool // the server's capabilities; nil until asked
}

// SessionAddress returns the session bus's address: DBUS_SESSION_BUS_ADDRESS,
// or the socket $XDG_RUNTIME_DIR/bus that systemd user sessions provide.
// getenv reads the environment.
func SessionAddress(getenv func(string) string) (string, error) {
	if a := getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return a, nil
	}
	if dir := getenv("XDG_RUNTIME_DIR"); dir != "" {
		sock := filepath.Join(dir, "bus")
		if fi, err := os.Stat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return "unix:path=" + sock, nil
		}
	}
	return "", errors.New("no D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is unset and there is no $XDG_RUNTIME_DIR/bus")
}

// Connect opens a connection of its own to the bus at address (see
// SessionAddress) and returns a Notifier on it. Close ends it.
func Connect(address string) (*Notifier, error) {
	conn, err := dbus.Connect(address)
	if err != nil {
		return nil, fmt.Errorf("connecting to the D-Bus session bus: %w", err)
	}
	// Action clicks come back as signals, to every client that asked.
	err = conn.AddMatchSignal(
		dbus.WithMatchObjectPath(path),
		dbus.WithMatchInterface(service),
		dbus.WithMatchMember("ActionInvoked"),
	)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("subscribing to notification clicks: %w", err)
	}
	n := &Notifier{conn: conn, signals: make(chan *dbus.Signal, 16), activated: make(chan uint32, 16),
		invoked: make(chan Invocation, 16), done: make(chan struct{})}
	conn.Signal(n.signals)
	go n.relay()
	return n, nil
}

// relay turns the server's ActionInvoked signals into ids on Activated
// ("default") and Invocations on Invoked (a button), until the connection
// closes (which closes signals).
func (n *Notifier) relay() {
	defer close(n.done)
	for sig := range n.signals {
		if sig.Name != service+".ActionInvoked" || len(sig.Body) != 2 {
			continue
		}
		id, ok1 := sig.Body[0].(uint32)
		action, ok2 := sig.Body[1].(string)
		switch {
		case !ok1 || !ok2 || action == "":
		case action == "default":
			select {
			case n.activated <- id:
			default: // nobody is reading: a click is not worth blocking the bus for
			}
		default:
			select {
			case n.invoked <- Invocation{ID: id, Key: action}:
			default:
			}
		}
	}
}

// Done is closed when the connection has ended: by Close, or because the
// bus went away (the desktop session ended).
func (n *Notifier) Done() <-chan struct{} { return n.done }

// Activated delivers the ids (from Notify) of notifications the user
// clicked. It is closed by Close.
func (n *Notifier) Activated() <-chan uint32 { return n.activated }

// Invoked delivers the clicks on notifications' Buttons. It is closed by
// Close.
func (n *Notifier) Invoked() <-chan Invocation { return n.invoked }

// Notify raises m and returns the server's id for it. The server decides how
// long it stays (the default timeout).
func (n *Notifier) Notify(ctx context.Context, m Message) (uint32, error) {
	caps := n.capabilities(ctx)
	body := m.Body
	if caps == nil || caps["body-markup"] {
		body = escape(body) // escaping is the safe guess when the server did not say
	}
	var actions []string
	if m.Clickable {
		actions = []string{"default", "Open"}
	}
	// Buttons only where they are drawn: elsewhere the server may show
	// nothing, or (some) every label as text.
	if caps["actions"] {
		for _, b := range m.Buttons {
			if b.Key != "" && b.Key != "default" {
				actions = append(actions, b.Key, b.Label)
			}
		}
	}
	hints := map[string]dbus.Variant{"urgency": dbus.MakeVariant(byte(m.Urgency))}
	var id uint32
	err := n.conn.Object(service, path).CallWithContext(ctx, service+".Notify", 0,
		appName, uint32(0), "", m.Summary, body, actions, hints, int32(-1),
	).Store(&id)
	if err != nil {
		return 0, fmt.Errorf("raising a desktop notification: %w", err)
	}
	return id, nil
}

// capabilities asks the server once what it does (GetCapabilities):
// "body-markup", where "<" and "&" in a body would be taken as tags, and
// "actions", where it draws buttons. nil when it could not be asked (and
// asking again next time is cheap).
func (n *Notifier) capabilities(ctx context.Context) map[string]bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.caps != nil {
		return n.caps
	}
	var caps []string
	if err := n.conn.Object(service, path).CallWithContext(ctx, service+".GetCapabilities", 0).Store(&caps); err != nil {
		return nil
	}
	n.caps = map[string]bool{}
	for _, c := range caps {
		n.caps[c] = true
	}
	return n.caps
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// HasTrayHost reports whether a system tray that shows StatusNotifierItems
// (a panel owning org.kde.StatusNotifierWatcher) is on the bus.
func (n *Notifier) HasTrayHost(ctx context.Context) (bool, error) {
	var has bool
	err := n.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, "org.kde.StatusNotifierWatcher").Store(&has)
	return has, err
}

// Close ends the connection.
func (n *Notifier) Close() error {
	err := n.conn.Close()
	<-n.done
	close(n.activated)
	close(n.invoked)
	return err
}
