// The View the UI draws from a Model: the menu, the icon and the tooltip.

package tray

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// View is what the tray shows.
type View struct {
	Unread   int    // unread notifications kept
	Severity string // the highest unread severity; "" when all are read
	Paused   bool
	Snoozed  time.Time // until when the user's notifications are snoozed; zero: not
	Status   Status
	Detail   string // about Status, for people: why offline or signed out
	Problem  string // the error behind Offline, as it came: for a log, not the menu
	Gap      bool   // some notifications were lost for good (older than the server keeps)
	Tabs     []TabView
}

// TabView is one tab of the menu.
type TabView struct {
	Name     string
	Unread   int
	Severity string // the highest unread severity in the tab; "" when all are read
	Items    []ItemView
}

// ItemView is one notification of the menu.
type ItemView struct {
	ID       string
	Title    string
	Severity string
	URL      string
	Read     bool
	Priority int
	Tags     []string
	Actions  []ActionView
}

// ActionView is one of a notification's buttons in the menu, with what
// running it came to.
type ActionView struct {
	Action
	Outcome Outcome
}

// IconState is what the tray icon shows.
type IconState struct {
	Severity string // highest unread severity, or "" for none
	Unread   int
	// Away: no live connection (offline, or signed out), so that what the
	// icon shows may be out of date; it is drawn grey and struck through.
	Away bool
}

// Icon is the icon's state of v.
func (v View) Icon() IconState {
	return IconState{Severity: v.Severity, Unread: v.Unread, Away: v.Status == Offline || v.Status == SignedOut}
}

// Tooltip is the text shown when pointing at the icon.
func (v View) Tooltip() string {
	var b strings.Builder
	b.WriteString("Perch — ")
	if v.Status == SignedOut {
		b.WriteString("signed out")
		return b.String()
	}
	fmt.Fprintf(&b, "%d unread", v.Unread)
	switch v.Status {
	case Connecting:
		b.WriteString(" · connecting")
	case Offline:
		b.WriteString(" · " + lowerFirst(v.Detail))
	}
	if v.Gap {
		b.WriteString(" · some notifications were missed while away")
	}
	if v.Paused {
		b.WriteString(" · notifications paused")
	}
	if !v.Snoozed.IsZero() {
		b.WriteString(" · snoozed until " + v.Snoozed.Local().Format("Mon 15:04"))
	}
	return b.String()
}

// View returns what the tray shows now.
func (m *Model) View() View {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := View{Paused: m.paused, Status: m.status, Detail: m.detail, Problem: m.problem, Gap: m.gap}
	if m.snooze.After(time.Now()) {
		v.Snoozed = m.snooze
	}
	tabs := make([]TabView, 0, len(m.tabs))
	newest := map[string]string{}
	for name, list := range m.tabs {
		t := TabView{Name: name}
		for i := len(list) - 1; i >= 0; i-- {
			it := list[i]
			if !it.Read {
				t.Unread++
				t.Severity = higher(t.Severity, it.Severity)
			}
			if len(t.Items) < m.lim.MenuItems {
				t.Items = append(t.Items, it.view())
			}
		}
		v.Unread += t.Unread
		v.Severity = higher(v.Severity, t.Severity)
		newest[name] = list[len(list)-1].ID
		tabs = append(tabs, t)
	}
	slices.SortFunc(tabs, func(a, b TabView) int {
		if c := compareIDs(newest[b.Name], newest[a.Name]); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(tabs) > m.lim.MenuTabs {
		tabs = tabs[:m.lim.MenuTabs]
	}
	v.Tabs = tabs
	return v
}

// Item returns a kept notification.
func (m *Model) Item(id string) (Item, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	it := m.items[id]
	if it == nil {
		return Item{}, false
	}
	c := *it
	c.Outcomes = maps.Clone(it.Outcomes)
	return c, true
}

// view is the item as the menu shows it.
func (it *Item) view() ItemView {
	v := ItemView{ID: it.ID, Title: it.Title, Severity: it.Severity, URL: it.URL, Read: it.Read, Priority: it.Priority, Tags: it.Tags}
	for _, a := range it.Actions {
		v.Actions = append(v.Actions, ActionView{Action: a, Outcome: it.Outcomes[a.ID]})
	}
	return v
}

// Action returns the action actionID of the kept notification id.
func (m *Model) Action(id, actionID string) (Action, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if it := m.items[id]; it != nil {
		for _, a := range it.Actions {
			if a.ID == actionID {
				return a, true
			}
		}
	}
	return Action{}, false
}

// SetOutcome records what running an http action came to (Running while
// it runs), and reports whether the notification is still kept.
func (m *Model) SetOutcome(id, actionID string, o Outcome) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	it := m.items[id]
	if it == nil {
		return false
	}
	if it.Outcomes == nil {
		it.Outcomes = map[string]Outcome{}
	}
	it.Outcomes[actionID] = o
	return true
}

// SetSnooze records the user's snooze as the server said it (zero: none,
// or over), and reports whether that changed the View. The server, not the
// tray, keeps snoozed notifications quiet: their frames come silent.
func (m *Model) SetSnooze(until time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if until.Equal(m.snooze) {
		return false
	}
	m.snooze = until
	return true
}

func popupOf(it *Item) Popup {
	body := it.Tab
	if msg := strings.TrimSpace(it.Message); msg != "" {
		body = msg + "\n" + it.Tab
	}
	if words := TextTags(it.Tags); len(words) > 0 {
		body += " · " + strings.Join(words, ", ")
	}
	return Popup{
		ID: it.ID, Summary: EmojiPrefix(it.Tags) + it.Title, Body: body, Severity: it.Severity, URL: it.URL,
		Priority: it.Priority, Actions: it.Actions,
	}
}

func (r *replay) add(p Popup, tab string, keep int) {
	if p.Priority >= perch.PriorityUrgent {
		if r.urgent == nil {
			r.urgent = &replay{}
		}
		r.urgent.gather(p, tab, keep)
	}
	r.gather(p, tab, keep)
}

func (r *replay) gather(p Popup, tab string, keep int) {
	r.count++
	r.priority = max(r.priority, p.Priority)
	r.severity = higher(r.severity, p.Severity)
	if r.tabs == nil {
		r.tabs = map[string]int{}
	}
	r.tabs[tab]++
	if len(r.first) <= keep {
		r.first = append(r.first, p)
	}
}

// summary is one popup for a whole replay: "12 new notifications",
// "Incidents 3 · Code 9".
func (r *replay) summary() Popup {
	names := make([]string, 0, len(r.tabs))
	for name := range r.tabs {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %d", name, r.tabs[name])
	}
	return Popup{
		Summary:  fmt.Sprintf("%d new notifications", r.count),
		Body:     strings.Join(parts, " · "),
		Severity: r.severity,
		Priority: r.priority,
	}
}

// forgotten remembers the ids of the last max evicted notifications.
type forgotten struct {
	max  int
	ids  map[string]struct{}
	fifo []string
}

func (f *forgotten) add(id string) {
	if f.ids == nil {
		f.ids = map[string]struct{}{}
	}
	f.ids[id] = struct{}{}
	f.fifo = append(f.fifo, id)
	if len(f.fifo) > f.max {
		delete(f.ids, f.fifo[0])
		f.fifo = slices.Delete(f.fifo, 0, 1)
	}
}

func (f *forgotten) has(id string) bool {
	_, ok := f.ids[id]
	return ok
}

// rank orders severities; anything unknown counts as info.
func rank(s string) int {
	switch s {
	case perch.SeverityError:
		return 3
	case perch.SeverityWarning:
		return 2
	case perch.SeverityInfo:
		return 1
	}
	return 0
}

func severityOf(s string) string {
	if rank(s) == 0 {
		return perch.SeverityInfo
	}
	return s
}

func higher(a, b string) string {
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// compareIDs orders notification ids: decimal integers that grow over time,
// compared as numbers; anything else as text.
func compareIDs(a, b string) int {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return cmp.Compare(x, y)
}
