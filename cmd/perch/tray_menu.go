//go:build !darwin || cgo

package main

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"time"

	"fyne.io/systray"

	"github.com/perch-dev/perch"
	trayui "github.com/perch-dev/perch/internal/tray"
)

// trayBuiltIn: systray is pure Go on Linux, the BSDs and Windows, and uses
// cgo on macOS, where this file is built only with cgo (tray_nocgo.go is the
// other case).
const trayBuiltIn = true

// runSystray shows app in the system tray until Quit is chosen (which calls
// quit) or the app's context ends. systray allows one run per process.
func runSystray(app *trayApp, quit context.CancelFunc) error {
	ctx := app.ctx
	m := &trayMenu{app: app}
	// Before Run: the title becomes the icon's id, which panels remember
	// settings by (on macOS it would be text beside the icon instead).
	if runtime.GOOS != "darwin" {
		systray.SetTitle("Perch")
	}
	v := app.model.View()
	systray.SetIcon(trayui.Icon(v.Icon()))
	systray.SetTooltip(v.Tooltip())

	var wg sync.WaitGroup
	ready := make(chan struct{})
	onReady := func() {
		defer close(ready)
		m.build()
		wg.Go(app.run)
		wg.Go(func() { m.loop(ctx) })
	}
	go func() {
		<-ctx.Done()
		systray.Quit()
	}()
	systray.Run(onReady, quit)
	quit()
	<-ready
	wg.Wait()
	return nil
}

// Room in the menu: tabs with the newest notifications, and the newest
// notifications of each (trayui.DefaultLimits).
var (
	menuTabs  = trayui.DefaultLimits.MenuTabs
	menuItems = trayui.DefaultLimits.MenuItems
)

// trayMenu draws the model's View into a menu of fixed slots, built once
// and updated in place: a slot is retitled, shown or hidden, never removed,
// so that its click channel lives as long as the menu.
type trayMenu struct {
	app *trayApp

	mu    sync.Mutex
	drawn trayui.View // what the slots show: clicks are read against it

	header, empty                  *menuSlot
	tabs                           []*menuTab
	markAll, pause, dashboard      *menuSlot
	snooze, snoozeHour             *menuSlot
	snoozeMorning, snoozeOff       *menuSlot
	account, signIn, signOut, quit *menuSlot
	icon                           trayui.IconState
	tooltip                        string
}

type menuTab struct {
	*menuSlot
	items []*menuSlot
	// acts are the slots of each item's actions, under it in the tab's
	// submenu (perch.MaxActions per item).
	acts [][]*menuSlot
}

// menuSlot is a menu item and what it shows, so that only changes go over
// the bus.
type menuSlot struct {
	item    *systray.MenuItem
	title   string
	hidden  bool
	icon    string
	checked bool
}

func newSlot(item *systray.MenuItem, title string) *menuSlot {
	return &menuSlot{item: item, title: title}
}

func (s *menuSlot) set(title string) {
	if s.title != title {
		s.title = title
		s.item.SetTitle(mnemonicSafe(title))
	}
}

func (s *menuSlot) show(on bool) {
	if s.hidden == !on {
		return
	}
	s.hidden = !on
	if on {
		s.item.Show()
	} else {
		s.item.Hide()
	}
}

// menuIcons says whether menu items show the severity as an icon; menus on
// Windows take icons in another format, and mark items with text instead.
var menuIcons = runtime.GOOS != "windows"

// setIcon gives the slot the mark of a severity (read or not).
func (s *menuSlot) setIcon(severity string, read bool) {
	key := severity
	if read {
		key = "read"
	}
	if s.icon == key || !menuIcons {
		return
	}
	s.icon = key
	s.item.SetIcon(trayui.ItemIcon(severity, read))
}

func (s *menuSlot) check(on bool) {
	if s.checked == on {
		return
	}
	s.checked = on
	if on {
		s.item.Check()
	} else {
		s.item.Uncheck()
	}
}

// mnemonicSafe keeps an underscore in a title from being read as a keyboard
// mnemonic by D-Bus menus.
func mnemonicSafe(title string) string {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return title
	}
	return strings.ReplaceAll(title, "_", "__")
}

// onClick calls fn for each click of s.
func onClick(s *menuSlot, fn func()) {
	go func() {
		for range s.item.ClickedCh {
			fn()
		}
	}()
}

func (m *trayMenu) build() {
	a := m.app
	m.header = newSlot(systray.AddMenuItem("Connecting…", ""), "Connecting…")
	m.header.item.Disable()
	systray.AddSeparator()
	for t := range menuTabs {
		tab := &menuTab{menuSlot: newSlot(systray.AddMenuItem("", ""), "")}
		for i := range menuItems {
			s := newSlot(tab.item.AddSubMenuItem("", "Open, and mark read"), "")
			s.show(false)
			onClick(s, func() { m.clickItem(t, i) })
			tab.items = append(tab.items, s)
			var acts []*menuSlot
			for k := range perch.MaxActions {
				as := newSlot(tab.item.AddSubMenuItem("", ""), "")
				as.show(false)
				onClick(as, func() { m.clickAction(t, i, k) })
				acts = append(acts, as)
			}
			tab.acts = append(tab.acts, acts)
		}
		tab.show(false)
		m.tabs = append(m.tabs, tab)
	}
	m.empty = newSlot(systray.AddMenuItem("No notifications yet", ""), "No notifications yet")
	m.empty.item.Disable()
	systray.AddSeparator()
	m.markAll = newSlot(systray.AddMenuItem("Mark all read", ""), "Mark all read")
	onClick(m.markAll, a.markAllRead)
	m.pause = newSlot(systray.AddMenuItemCheckbox("Pause notifications", "Keep counting, without desktop notifications", false), "Pause notifications")
	onClick(m.pause, a.togglePause)
	// Snooze is the user's preference, on the server: every client of
	// theirs goes quiet, not only this tray.
	m.snooze = newSlot(systray.AddMenuItem("Snooze", "Quiet on every device: the server marks notifications silent"), "Snooze")
	m.snoozeHour = newSlot(m.snooze.item.AddSubMenuItem("For 1 hour", ""), "For 1 hour")
	onClick(m.snoozeHour, func() { a.snooze(time.Now().Add(time.Hour)) })
	m.snoozeMorning = newSlot(m.snooze.item.AddSubMenuItem("Until tomorrow morning", ""), "Until tomorrow morning")
	onClick(m.snoozeMorning, func() { a.snooze(perch.NextMorning(time.Now())) })
	m.snoozeOff = newSlot(m.snooze.item.AddSubMenuItem("Off", ""), "Off")
	onClick(m.snoozeOff, func() { a.snooze(time.Time{}) })
	m.dashboard = newSlot(systray.AddMenuItem("Open dashboard", a.server+"/notifications"), "Open dashboard")
	onClick(m.dashboard, a.openDashboard)
	systray.AddSeparator()
	m.account = newSlot(systray.AddMenuItem("", ""), "")
	m.account.item.Disable()
	m.signIn = newSlot(systray.AddMenuItem("Sign in…", "Sign in in the browser"), "Sign in…")
	onClick(m.signIn, func() { a.signInFlow() })
	m.signOut = newSlot(systray.AddMenuItem("Sign out", ""), "Sign out")
	onClick(m.signOut, a.signOut)
	systray.AddSeparator()
	m.quit = newSlot(systray.AddMenuItem("Quit", ""), "Quit")
	onClick(m.quit, systray.Quit)
}

// loop redraws whenever the model changes, a burst of changes (a replay)
// at most every tenth of a second.
func (m *trayMenu) loop(ctx context.Context) {
	m.draw(m.app.model.View())
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.app.redraw:
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		m.draw(m.app.model.View())
	}
}

func (m *trayMenu) draw(v trayui.View) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drawn = v
	if icon := v.Icon(); icon != m.icon {
		m.icon = icon
		systray.SetIcon(trayui.Icon(icon))
	}
	if tip := v.Tooltip(); tip != m.tooltip {
		m.tooltip = tip
		systray.SetTooltip(tip)
	}
	m.header.set(v.Header())
	for t, slot := range m.tabs {
		if t >= len(v.Tabs) {
			slot.show(false)
			continue
		}
		tab := v.Tabs[t]
		slot.set(tab.Label())
		slot.setIcon(tab.Severity, tab.Unread == 0)
		slot.show(true)
		for i, s := range slot.items {
			if i >= len(tab.Items) {
				s.show(false)
				continue
			}
			it := tab.Items[i]
			if menuIcons {
				s.set(it.Text())
				s.setIcon(it.Severity, it.Read)
			} else {
				s.set(it.Label())
			}
			s.show(true)
			for k, as := range slot.acts[i] {
				if k >= len(it.Actions) {
					as.show(false)
					continue
				}
				as.set(it.Actions[k].Label())
				as.show(true)
			}
		}
		for i := len(tab.Items); i < len(slot.acts); i++ {
			for _, as := range slot.acts[i] {
				as.show(false)
			}
		}
	}
	if v.Snoozed.IsZero() {
		m.snooze.set("Snooze")
	} else {
		m.snooze.set("Snoozed until " + v.Snoozed.Local().Format("Mon 15:04"))
	}
	m.snoozeOff.show(!v.Snoozed.IsZero())
	signedIn := v.Status != trayui.SignedOut
	m.empty.show(signedIn && len(v.Tabs) == 0)
	m.pause.check(v.Paused)
	email := m.app.account()
	switch {
	case !signedIn:
		m.account.set("Not signed in to " + serverHost(m.app.server))
	case email != "":
		m.account.set("Signed in as " + email)
	default:
		m.account.set("Signed in to " + serverHost(m.app.server))
	}
	m.signIn.show(!signedIn)
	m.signOut.show(signedIn)
	m.markAll.show(signedIn)
	m.snooze.show(signedIn)
}

// clickAction runs the action the slot showed when clicked.
func (m *trayMenu) clickAction(t, i, k int) {
	m.mu.Lock()
	var id, actionID string
	if t < len(m.drawn.Tabs) && i < len(m.drawn.Tabs[t].Items) && k < len(m.drawn.Tabs[t].Items[i].Actions) {
		it := m.drawn.Tabs[t].Items[i]
		id, actionID = it.ID, it.Actions[k].ID
	}
	m.mu.Unlock()
	if id != "" {
		m.app.runAction(id, actionID)
	}
}

// clickItem opens the notification the item slot showed when clicked.
func (m *trayMenu) clickItem(t, i int) {
	m.mu.Lock()
	var id string
	if t < len(m.drawn.Tabs) && i < len(m.drawn.Tabs[t].Items) {
		id = m.drawn.Tabs[t].Items[i].ID
	}
	m.mu.Unlock()
	if id != "" {
		m.app.openItem(id)
	}
}

func serverHost(server string) string {
	_, rest, ok := strings.Cut(server, "://")
	if !ok {
		return server
	}
	return rest
}
