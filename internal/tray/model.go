// Package tray is the menu-bar app's state, with no UI in it: which
// notifications the tray keeps, what is unread, what the icon and the menu
// show, and when a desktop notification is due. Its methods say what
// changed, so that the code drawing it (cmd/perch/tray.go, with systray) only
// redraws and raises what it is told.
//
// A Model is safe for concurrent use.
package tray

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/perch-dev/perch"
)

// Limits bound what a Model keeps and shows.
type Limits struct {
	PerTab    int // notifications kept per tab; older ones are forgotten
	Total     int // notifications kept in all
	MenuTabs  int // tabs the menu shows, those with the newest notifications
	MenuItems int // notifications each tab shows in the menu
	Popups    int // a replay with more unread notifications than this raises one summary
}

// DefaultLimits are the tray's.
var DefaultLimits = Limits{PerTab: 50, Total: 200, MenuTabs: 8, MenuItems: 10, Popups: 3}

// Status is the state of the tray's subscription.
type Status int

// The states of a Model.
const (
	Connecting Status = iota // not connected yet
	Online                   // connected: live notifications arrive
	Offline                  // the connection dropped; it is being made again
	SignedOut                // no sign-in, or the server refused it
)

// Item is a notification the tray keeps.
type Item struct {
	ID        string
	Tab       string
	Title     string
	Message   string // plain text: a Markdown message is kept as PlainText
	Severity  string
	URL       string
	CreatedAt time.Time
	Read      bool
	Priority  int // 1 (min) to 5 (urgent); derived from Severity when the server sent none
	Tags      []string
	Actions   []Action
	// Outcomes are the answers of the http actions run from this tray, by
	// action id.
	Outcomes map[string]Outcome
}

// Action is a button of a notification: view opens URL, http asks the
// server to run it (client.RunAction). What an http action sends stays on
// the server.
type Action struct {
	ID    string
	Type  string // perch.ActionView or perch.ActionHTTP
	Label string
	URL   string // view only
}

// Outcome is what running an http action came to, for the menu.
type Outcome struct {
	Running bool   // asked, not answered yet
	Status  int    // the target's status, once answered
	OK      bool   // the target answered 2xx
	Err     string // why it could not be run (the server refused, no connection)
}

// Popup is a desktop notification the UI should raise: one notification
// (ID set), or a summary of a replay (ID "").
type Popup struct {
	ID       string
	Summary  string
	Body     string
	Severity string
	URL      string
	Priority int      // the notification's, or the highest of a summary's
	Actions  []Action // a notification's buttons
}

// Change is what a call changed.
type Change struct {
	Redraw bool    // the View is different
	Popups []Popup // desktop notifications to raise, oldest first
}

// Model is the tray's state. The zero value is not usable; see New.
type Model struct {
	mu      sync.Mutex
	lim     Limits
	items   map[string]*Item
	tabs    map[string][]*Item // by id, oldest first
	forgot  forgotten          // ids evicted lately: a replay of one is still not new
	paused  bool
	snooze  time.Time // the user's snooze, as the server last said; zero: none
	host    string    // the server as people name it: perch.example.com
	status  Status
	detail  string // why the status is what it is, for people
	problem string // the error behind an Offline status, as it came
	gap     bool   // notifications were lost for good since the last look

	replaying bool
	pending   replay
}

// replay gathers the unread notifications that arrive between Connected and
// Ready, so that a resume after a night away raises one summary, not fifty
// notifications.
type replay struct {
	first    []Popup // up to Limits.Popups+1
	count    int
	severity string
	priority int
	tabs     map[string]int
	// urgent is the urgent part of it, which a pause does not hold back.
	urgent *replay
}

// New returns an empty Model of the server at the URL server, in state
// Connecting, with the limits lim (zero fields take DefaultLimits').
func New(server string, lim Limits) *Model {
	d := DefaultLimits
	if lim.PerTab <= 0 {
		lim.PerTab = d.PerTab
	}
	if lim.Total <= 0 {
		lim.Total = d.Total
	}
	if lim.MenuTabs <= 0 {
		lim.MenuTabs = d.MenuTabs
	}
	if lim.MenuItems <= 0 {
		lim.MenuItems = d.MenuItems
	}
	if lim.Popups <= 0 {
		lim.Popups = d.Popups
	}
	return &Model{lim: lim, host: Host(server), items: map[string]*Item{}, tabs: map[string][]*Item{}, forgot: forgotten{max: 4 * lim.Total}}
}

// Host is how the tray names a server: its host (and port, and path when
// it has one), without the scheme.
func Host(server string) string {
	if _, rest, ok := strings.Cut(server, "://"); ok {
		return strings.TrimSuffix(rest, "/")
	}
	return server
}

// Add takes a notification from the subscription: Receive of one the
// server did not mark silent.
func (m *Model) Add(n *perch.Notification) Change { return m.Receive(n, false) }

// Receive takes a notification from the subscription, silent when its frame
// said so (the user's preferences keep it from popping up: muted, snoozed,
// quiet hours). A notification the model already has is not counted again
// (one that arrives read marks the kept copy read). A new unread
// notification raises a popup unless it is silent, its priority is min, or
// notifications are paused (an urgent one breaks through the pause); during
// a replay (between Connected and Ready) popups wait for Ready. A silent
// notification is kept and counted like any other.
func (m *Model) Receive(n *perch.Notification, silent bool) Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed, isNew := m.add(n)
	if !isNew {
		return Change{Redraw: changed}
	}
	var ch Change
	ch.Redraw = true
	item := m.items[n.ID]
	if item == nil || item.Read || silent || item.Priority <= perch.PriorityMin {
		return ch
	}
	p := popupOf(item)
	if m.replaying {
		m.pending.add(p, item.Tab, m.lim.Popups)
		return ch
	}
	if !m.paused || item.Priority >= perch.PriorityUrgent {
		ch.Popups = []Popup{p}
	}
	return ch
}

// add keeps n. For a new notification it reports isNew; for one already
// kept, changed says whether it became read.
func (m *Model) add(n *perch.Notification) (changed, isNew bool) {
	if n == nil || n.ID == "" {
		return false, false
	}
	if old := m.items[n.ID]; old != nil {
		if n.Read && !old.Read {
			old.Read = true
			return true, false
		}
		return false, false
	}
	if m.forgot.has(n.ID) {
		return false, false
	}
	tab := strings.TrimSpace(n.Tab)
	if tab == "" {
		tab = perch.TabInbound
	}
	it := &Item{
		ID: n.ID, Tab: tab, Title: n.Title, Message: n.Message, Severity: severityOf(n.Severity),
		URL: n.URL, CreatedAt: n.CreatedAt, Read: n.Read, Priority: n.Priority, Tags: slices.Clone(n.Tags),
	}
	if n.Markdown {
		it.Message = PlainText(n.Message)
	}
	if it.Priority < perch.PriorityMin || it.Priority > perch.PriorityUrgent {
		it.Priority = perch.DefaultPriority(it.Severity) // a server from before priorities
	}
	for _, a := range n.Actions {
		if a.ID == "" || (a.Type != perch.ActionView && a.Type != perch.ActionHTTP) {
			continue // a kind of action this tray does not know
		}
		it.Actions = append(it.Actions, Action{ID: a.ID, Type: a.Type, Label: a.Label, URL: a.URL})
	}
	m.items[it.ID] = it
	list := m.tabs[tab]
	i, _ := slices.BinarySearchFunc(list, it.ID, func(e *Item, id string) int { return compareIDs(e.ID, id) })
	m.tabs[tab] = slices.Insert(list, i, it)
	if len(m.tabs[tab]) > m.lim.PerTab {
		m.evict(tab)
	}
	for len(m.items) > m.lim.Total {
		m.evict(m.oldestTab())
	}
	return false, true
}

// evict forgets the oldest notification of tab.
func (m *Model) evict(tab string) {
	list := m.tabs[tab]
	gone := list[0]
	list = slices.Delete(list, 0, 1)
	if len(list) == 0 {
		delete(m.tabs, tab)
	} else {
		m.tabs[tab] = list
	}
	delete(m.items, gone.ID)
	m.forgot.add(gone.ID)
}

// oldestTab is the tab holding the oldest notification kept.
func (m *Model) oldestTab() string {
	var tab, oldest string
	for name, list := range m.tabs {
		if tab == "" || compareIDs(list[0].ID, oldest) < 0 {
			tab, oldest = name, list[0].ID
		}
	}
	return tab
}

// Merge takes a page of history (client.Notifications): notifications the
// model lacks with an id up to and including upTo ("" for no bound) are
// kept, without popups, and the read state of those it has is brought up to
// date. Notifications after upTo are left to the subscription, whose replay
// announces them.
func (m *Model) Merge(history []*perch.Notification, upTo string) Change {
	sorted := slices.Clone(history)
	slices.SortStableFunc(sorted, func(a, b *perch.Notification) int { return compareIDs(a.ID, b.ID) })
	m.mu.Lock()
	defer m.mu.Unlock()
	var ch Change
	for _, n := range sorted {
		if n == nil || (upTo != "" && compareIDs(n.ID, upTo) > 0 && m.items[n.ID] == nil) {
			continue
		}
		if changed, isNew := m.add(n); changed || isNew {
			ch.Redraw = true
		}
	}
	return ch
}

// MarkRead marks one notification read and reports whether it was unread.
func (m *Model) MarkRead(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.markRead(id)
}

func (m *Model) markRead(id string) bool {
	it := m.items[id]
	if it == nil || it.Read {
		return false
	}
	it.Read = true
	return true
}

// ApplyRead marks read what another client of the user marked read (a read
// frame), and reports whether anything was unread.
func (m *Model) ApplyRead(ids []string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for _, id := range ids {
		if m.markRead(id) {
			changed = true
		}
	}
	return changed
}

// MarkAllRead marks every kept notification read, forgets that some were
// lost, and reports whether anything changed.
func (m *Model) MarkAllRead() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := m.gap
	m.gap = false
	for _, it := range m.items {
		if !it.Read {
			it.Read = true
			changed = true
		}
	}
	return changed
}

// SetPaused pauses (or resumes) desktop notifications. While paused, new
// notifications are still kept and counted as unread.
func (m *Model) SetPaused(paused bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := m.paused != paused
	m.paused = paused
	return changed
}

// Paused reports whether desktop notifications are paused.
func (m *Model) Paused() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.paused
}

// Connected records that a connection is up: the replay of what was missed
// follows, until Ready.
func (m *Model) Connected() Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replaying = true
	m.problem = ""
	return m.setStatus(Online, "")
}

// Ready ends a replay. Its unread notifications are raised one by one when
// there are at most Limits.Popups of them, and as one summary otherwise
// (nothing while paused). gap says that notifications were lost for good;
// the View says so until a later Ready without a gap, or MarkAllRead.
func (m *Model) Ready(gap bool) Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := m.setStatus(Online, "")
	if m.gap != gap {
		m.gap = gap
		ch.Redraw = true
	}
	m.replaying = false
	p := m.pending
	m.pending = replay{}
	if m.paused {
		// An urgent notification breaks through the pause; the rest wait.
		if p.urgent == nil {
			return ch
		}
		p = *p.urgent
	}
	if p.count == 0 {
		return ch
	}
	if p.count <= m.lim.Popups {
		for _, pp := range p.first {
			if it := m.items[pp.ID]; it != nil && !it.Read { // not read elsewhere meanwhile
				ch.Popups = append(ch.Popups, pp)
			}
		}
		return ch
	}
	ch.Popups = []Popup{p.summary()}
	return ch
}

// Disconnected records that the connection dropped, or could not be made,
// for err, and is tried again in retryIn. The View says so in words
// ("Can't reach perch.example.com — retrying in 5 s"); err itself is only
// its Problem, for a log. Popups of an interrupted replay wait for the next
// Ready.
func (m *Model) Disconnected(err error, retryIn time.Duration) Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.problem = ""
	if err != nil {
		m.problem = err.Error()
	}
	return m.setStatus(Offline, offlineText(m.host, err)+" — "+retryText(retryIn))
}

// offlineText says why the tray is offline, for people: the server
// answered and refused, answered that it cannot serve now, or could not be
// reached at all (no network, the server down, a connection that died).
func offlineText(host string, err error) string {
	answer, answered := errors.AsType[*perch.Error](err)
	switch {
	case !answered:
		return "Can't reach " + host
	case answer.Code == perch.EUNAVAILABLE || answer.Code == perch.EINTERNAL || answer.Code == perch.ERATELIMITED:
		return host + " is unavailable"
	}
	return host + " refused the connection"
}

// retryText says when the next attempt is: "retrying in 5 s", "retrying in
// 2 min".
func retryText(d time.Duration) string {
	switch {
	case d < time.Second:
		return "retrying now"
	case d < time.Minute:
		return fmt.Sprintf("retrying in %d s", int(d.Round(time.Second)/time.Second))
	}
	return fmt.Sprintf("retrying in %d min", int(d.Round(time.Minute)/time.Minute))
}

// SignOut forgets every notification and records that the tray is signed
// out, for reason ("" for a plain sign-out).
func (m *Model) SignOut(reason string) Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items = map[string]*Item{}
	m.tabs = map[string][]*Item{}
	m.forgot = forgotten{max: m.forgot.max}
	m.gap, m.replaying, m.pending, m.problem, m.snooze = false, false, replay{}, "", time.Time{}
	m.setStatus(SignedOut, reason)
	return Change{Redraw: true}
}

// SignedIn records that a sign-in is available again: connecting.
func (m *Model) SignedIn() Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.setStatus(Connecting, "")
}

func (m *Model) setStatus(s Status, detail string) Change {
	if m.status == s && m.detail == detail {
		return Change{}
	}
	m.status, m.detail = s, detail
	return Change{Redraw: true}
}
