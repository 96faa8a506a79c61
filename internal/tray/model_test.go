package tray

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
)

// A step is one thing that happens to the tray; it returns what the model
// said changed.
type step func(*Model) Change

func arrives(id, tab, severity string) step {
	return func(m *Model) Change {
		return m.Add(&perch.Notification{ID: id, Tab: tab, Title: "title " + id, Message: "message " + id, Severity: severity, URL: "https://example.com/" + id})
	}
}

func arrivesRead(id, tab, severity string) step {
	return func(m *Model) Change {
		return m.Add(&perch.Notification{ID: id, Tab: tab, Title: "title " + id, Severity: severity, Read: true})
	}
}

func historyUpTo(upTo string, ids ...string) step {
	return func(m *Model) Change {
		var page []*perch.Notification
		for _, id := range ids {
			read := strings.HasSuffix(id, "r")
			id = strings.TrimSuffix(id, "r")
			page = append(page, &perch.Notification{ID: id, Tab: "History", Title: "title " + id, Severity: perch.SeverityInfo, Read: read})
		}
		return m.Merge(page, upTo)
	}
}

func userReads(id string) step {
	return func(m *Model) Change { return Change{Redraw: m.MarkRead(id)} }
}

func otherClientReads(ids ...string) step {
	return func(m *Model) Change { return Change{Redraw: m.ApplyRead(ids)} }
}

func userReadsAll(m *Model) Change { return Change{Redraw: m.MarkAllRead()} }
func pause(m *Model) Change        { return Change{Redraw: m.SetPaused(true)} }
func unpause(m *Model) Change      { return Change{Redraw: m.SetPaused(false)} }
func connects(m *Model) Change     { return m.Connected() }
func replayDone(m *Model) Change   { return m.Ready(false) }
func gapReported(m *Model) Change  { return m.Ready(true) }
func dropped(m *Model) Change {
	return m.Disconnected(errors.New("connection reset"), 4*time.Second)
}

// server is the server every model of these tests follows.
const server = "https://perch.example.com"

func play(m *Model, steps ...step) (last Change, popups []Popup) {
	for _, s := range steps {
		last = s(m)
		popups = append(popups, last.Popups...)
	}
	return last, popups
}

func TestUnreadCountsAndSeverity(t *testing.T) {
	t.Parallel()
	const info, warning, errorSev = perch.SeverityInfo, perch.SeverityWarning, perch.SeverityError
	tests := []struct {
		name         string
		steps        []step
		wantUnread   int
		wantSeverity string
		wantPerTab   map[string]int
	}{
		{"nothing yet", nil, 0, "", map[string]int{}},
		{"one info notification", []step{arrives("1", "Code", info)}, 1, info, map[string]int{"Code": 1}},
		{"a warning outranks info", []step{arrives("1", "Code", info), arrives("2", "Monitoring", warning)}, 2, warning, map[string]int{"Code": 1, "Monitoring": 1}},
		{"an error outranks a warning whatever the order", []step{arrives("1", "Incidents", errorSev), arrives("2", "Monitoring", warning)}, 2, errorSev, map[string]int{"Incidents": 1, "Monitoring": 1}},
		{"reading the error leaves the warning", []step{arrives("1", "Incidents", errorSev), arrives("2", "Monitoring", warning), userReads("1")}, 1, warning, map[string]int{"Incidents": 0, "Monitoring": 1}},
		{"all read shows no severity", []step{arrives("1", "Code", errorSev), userReads("1")}, 0, "", map[string]int{"Code": 0}},
		{"a notification that arrives read counts nowhere", []step{arrivesRead("1", "Code", errorSev)}, 0, "", map[string]int{"Code": 0}},
		{"a replayed notification is counted once", []step{arrives("1", "Code", info), arrives("1", "Code", info)}, 1, info, map[string]int{"Code": 1}},
		{"a replay that arrives read marks the kept copy read", []step{arrives("1", "Code", info), arrivesRead("1", "Code", info)}, 0, "", map[string]int{"Code": 0}},
		{"reading it again changes nothing", []step{arrives("1", "Code", info), userReads("1"), userReads("1")}, 0, "", map[string]int{"Code": 0}},
		{"another client's read frame", []step{arrives("1", "Code", info), arrives("2", "Code", warning), otherClientReads("2", "99")}, 1, info, map[string]int{"Code": 1}},
		{"mark all read", []step{arrives("1", "Code", info), arrives("2", "Incidents", errorSev), userReadsAll}, 0, "", map[string]int{"Code": 0, "Incidents": 0}},
		{"paused notifications still count as unread", []step{pause, arrives("1", "Code", warning)}, 1, warning, map[string]int{"Code": 1}},
		{"an unknown severity counts as info", []step{arrives("1", "Code", "critical")}, 1, info, map[string]int{"Code": 1}},
		{"a notification without a tab goes to Inbound", []step{arrives("1", "", info)}, 1, info, map[string]int{"Inbound": 1}},
		{"history up to the resume point adds read state silently", []step{historyUpTo("3", "1r", "2", "3", "4")}, 2, info, map[string]int{"History": 2}},
		{"history brings read state from elsewhere", []step{arrives("1", "History", info), historyUpTo("", "1r")}, 0, "", map[string]int{"History": 0}},
		{"signing out forgets everything", []step{arrives("1", "Code", info), func(m *Model) Change { return m.SignOut("") }}, 0, "", map[string]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(server, DefaultLimits)
			play(m, tt.steps...)
			v := m.View()
			if v.Unread != tt.wantUnread || v.Severity != tt.wantSeverity {
				t.Errorf("unread %d, severity %q; want %d, %q", v.Unread, v.Severity, tt.wantUnread, tt.wantSeverity)
			}
			if v.Icon() != (IconState{Severity: tt.wantSeverity, Unread: tt.wantUnread, Away: v.Status == SignedOut}) {
				t.Errorf("icon %+v", v.Icon())
			}
			got := map[string]int{}
			for _, tab := range v.Tabs {
				got[tab.Name] = tab.Unread
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantPerTab) {
				t.Errorf("unread per tab %v, want %v", got, tt.wantPerTab)
			}
		})
	}
}

func TestChangesAreReported(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup []step
		then  step
		want  bool
	}{
		{"a new notification", nil, arrives("1", "Code", "info"), true},
		{"a duplicate", []step{arrives("1", "Code", "info")}, arrives("1", "Code", "info"), false},
		{"reading an unread one", []step{arrives("1", "Code", "info")}, userReads("1"), true},
		{"reading a read one", []step{arrivesRead("1", "Code", "info")}, userReads("1"), false},
		{"reading an unknown one", nil, userReads("7"), false},
		{"a read frame for unknown ids", []step{arrives("1", "Code", "info")}, otherClientReads("2", "3"), false},
		{"mark all read with nothing unread", []step{arrivesRead("1", "Code", "info")}, userReadsAll, false},
		{"pausing", nil, pause, true},
		{"pausing twice", []step{pause}, pause, false},
		{"history with nothing new", []step{arrives("1", "History", "info")}, historyUpTo("", "1"), false},
		{"a second drop with the same reason", []step{dropped}, dropped, false},
		{"a replay that ends without news", []step{connects, replayDone}, replayDone, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(server, DefaultLimits)
			play(m, tt.setup...)
			before := m.View()
			got := tt.then(m).Redraw
			if got != tt.want {
				t.Errorf("Redraw = %v, want %v", got, tt.want)
			}
			if after := m.View(); !got && fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("the view changed without Redraw:\n%+v\n%+v", before, after)
			}
		})
	}
}

func TestMenuOrder(t *testing.T) {
	t.Parallel()
	m := New(server, Limits{MenuItems: 2})
	play(m,
		arrives("1", "Code", "info"),
		arrives("2", "Incidents", "error"),
		arrives("3", "Code", "info"),
		arrives("4", "Monitoring", "warning"),
		arrives("5", "Code", "info"),
		historyUpTo("", "0"), // older history slots in below
	)
	var got []string
	for _, tab := range m.View().Tabs {
		var ids []string
		for _, it := range tab.Items {
			ids = append(ids, it.ID)
		}
		got = append(got, tab.Name+":"+strings.Join(ids, ","))
	}
	// Tabs by their newest notification; the newest two of each, newest first.
	want := []string{"Code:5,3", "Monitoring:4", "Incidents:2", "History:0"}
	if !slices.Equal(got, want) {
		t.Errorf("menu %v, want %v", got, want)
	}

	m = New(server, Limits{MenuTabs: 2})
	play(m, arrives("1", "A", "info"), arrives("2", "B", "info"), arrives("3", "C", "info"), arrives("4", "A", "info"))
	v := m.View()
	if len(v.Tabs) != 2 || v.Tabs[0].Name != "A" || v.Tabs[1].Name != "C" || v.Unread != 4 {
		t.Errorf("with room for two tabs: %+v (unread %d); want A then C, and all 4 counted", v.Tabs, v.Unread)
	}
}

func TestBounds(t *testing.T) {
	t.Parallel()
	m := New(server, Limits{PerTab: 3, Total: 5})
	for i := 1; i <= 4; i++ {
		m.Add(&perch.Notification{ID: fmt.Sprint(i), Tab: "Code", Severity: "info"})
	}
	for i := 5; i <= 7; i++ {
		m.Add(&perch.Notification{ID: fmt.Sprint(i), Tab: "Incidents", Severity: "error"})
	}
	v := m.View()
	ids := func(tab TabView) (out []string) {
		for _, it := range tab.Items {
			out = append(out, it.ID)
		}
		return out
	}
	// Code keeps its newest 3 (2, 3, 4), then the total of 5 pushes out 2,
	// the oldest of all.
	if len(v.Tabs) != 2 || !slices.Equal(ids(v.Tabs[0]), []string{"7", "6", "5"}) || !slices.Equal(ids(v.Tabs[1]), []string{"4", "3"}) {
		t.Fatalf("kept %+v", v.Tabs)
	}
	if v.Unread != 5 {
		t.Errorf("unread %d, want the 5 kept", v.Unread)
	}
	if ch := m.Add(&perch.Notification{ID: "2", Tab: "Code", Severity: "info"}); ch.Redraw || len(ch.Popups) != 0 {
		t.Errorf("a replay of a forgotten notification came back: %+v", ch)
	}
	if _, ok := m.Item("2"); ok {
		t.Error("forgotten notification 2 is kept again")
	}
	if _, ok := m.Item("3"); !ok {
		t.Error("notification 3 is not kept")
	}
}

func TestPopups(t *testing.T) {
	t.Parallel()
	single := func(id, tab, severity string) Popup {
		return Popup{ID: id, Summary: "title " + id, Body: "message " + id + "\n" + tab, Severity: severity, URL: "https://example.com/" + id,
			Priority: perch.DefaultPriority(severity)}
	}
	tests := []struct {
		name  string
		steps []step
		want  []Popup
	}{
		{"a live notification raises one", []step{connects, replayDone, arrives("1", "Incidents", "error")},
			[]Popup{single("1", "Incidents", "error")}},
		{"one that arrives read raises none", []step{arrivesRead("1", "Code", "info")}, nil},
		{"a duplicate raises none", []step{arrives("1", "Code", "info"), arrives("1", "Code", "info")},
			[]Popup{single("1", "Code", "info")}},
		{"paused raises none", []step{pause, arrives("1", "Code", "info")}, nil},
		{"after pausing they come back", []step{pause, arrives("1", "Code", "info"), unpause, arrives("2", "Code", "warning")},
			[]Popup{single("2", "Code", "warning")}},
		{"history raises none", []step{historyUpTo("", "1", "2")}, nil},
		{"a short replay raises each at ready", []step{connects, arrives("1", "Code", "info"), arrives("2", "Incidents", "error"), replayDone},
			[]Popup{single("1", "Code", "info"), single("2", "Incidents", "error")}},
		{"a long replay raises one summary", []step{connects,
			arrives("1", "Code", "info"), arrives("2", "Incidents", "warning"), arrives("3", "Code", "info"),
			arrivesRead("4", "Code", "error"), arrives("5", "Incidents", "warning"), arrives("6", "Code", "info"), replayDone},
			[]Popup{{Summary: "5 new notifications", Body: "Code 3 · Incidents 2", Severity: "warning", Priority: perch.PriorityDefault}}},
		{"a paused replay raises none", []step{connects, pause, arrives("1", "Code", "info"), replayDone}, nil},
		{"read elsewhere before the replay ends", []step{connects, arrives("1", "Code", "info"), arrives("2", "Code", "info"), otherClientReads("1"), replayDone},
			[]Popup{single("2", "Code", "info")}},
		{"a replay cut short is raised at the next ready", []step{connects, arrives("1", "Code", "info"), dropped, connects, arrives("2", "Code", "info"), replayDone},
			[]Popup{single("1", "Code", "info"), single("2", "Code", "info")}},
		{"a message-less notification's body is its tab", []step{func(m *Model) Change {
			return m.Add(&perch.Notification{ID: "1", Tab: "Code", Title: "Push", Severity: "info"})
		}}, []Popup{{ID: "1", Summary: "Push", Body: "Code", Severity: "info", Priority: perch.PriorityDefault}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := play(New(server, DefaultLimits), tt.steps...)
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tt.want) {
				t.Errorf("popups\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestStatusAndTooltip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		steps       []step
		wantTooltip string
		wantHeader  string
	}{
		{"starting", nil, "Perch — 0 unread · connecting", "Connecting…"},
		{"online", []step{connects, replayDone, arrives("1", "Code", "info"), arrives("2", "Code", "info")}, "Perch — 2 unread", "2 unread"},
		{"one unread", []step{connects, replayDone, arrives("1", "Code", "info")}, "Perch — 1 unread", "1 unread"},
		{"all read", []step{connects, replayDone, arrivesRead("1", "Code", "info")}, "Perch — 0 unread", "All read"},
		{"offline", []step{connects, replayDone, arrives("1", "Code", "info"), dropped},
			"Perch — 1 unread · can't reach perch.example.com — retrying in 4 s", "Can't reach perch.example.com — retrying in 4 s"},
		{"back online", []step{connects, replayDone, dropped, connects, replayDone}, "Perch — 0 unread", "All read"},
		{"resumed with a gap", []step{connects, gapReported}, "Perch — 0 unread · some notifications were missed while away", "All read"},
		{"the gap stays over a drop", []step{connects, gapReported, dropped, connects},
			"Perch — 0 unread · some notifications were missed while away", "All read"},
		{"a clean resume clears the gap", []step{connects, gapReported, connects, replayDone}, "Perch — 0 unread", "All read"},
		{"mark all read clears the gap", []step{connects, gapReported, userReadsAll}, "Perch — 0 unread", "All read"},
		{"paused", []step{connects, replayDone, pause}, "Perch — 0 unread · notifications paused", "All read"},
		{"signed out", []step{connects, func(m *Model) Change { return m.SignOut("the session has ended") }},
			"Perch — signed out", "Signed out: the session has ended"},
		{"signed in again", []step{func(m *Model) Change { return m.SignOut("") }, func(m *Model) Change { return m.SignedIn() }},
			"Perch — 0 unread · connecting", "Connecting…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(server, DefaultLimits)
			play(m, tt.steps...)
			v := m.View()
			if got := v.Tooltip(); got != tt.wantTooltip {
				t.Errorf("tooltip %q, want %q", got, tt.wantTooltip)
			}
			if got := v.Header(); got != tt.wantHeader {
				t.Errorf("header %q, want %q", got, tt.wantHeader)
			}
		})
	}
}

// TestOnlineOfflineSignedOut: the three states a person must tell apart
// at a glance. Online, the icon is the plain bird with the unread count;
// offline, it is struck through, keeps the count, and the menu says in
// words that the server cannot be reached and when the next try is, the
// raw error kept for the log only; signed out, it is struck through with
// nothing kept.
func TestOnlineOfflineSignedOut(t *testing.T) {
	t.Parallel()
	dialFailed := errors.New(`failed to WebSocket dial: failed to send handshake request: Get "https://perch.example.com/ws": dial tcp 203.0.113.7:443: connect: connection refused`)
	tests := []struct {
		name        string
		steps       []step
		wantStatus  Status
		wantHeader  string
		wantTooltip string
		wantIcon    IconState
		wantProblem string
	}{
		{"online", []step{connects, replayDone, arrives("1", "Incidents", "error")},
			Online, "1 unread", "Perch — 1 unread", IconState{Severity: "error", Unread: 1}, ""},
		{"offline: the server cannot be reached", []step{connects, replayDone, arrives("1", "Incidents", "error"),
			func(m *Model) Change { return m.Disconnected(dialFailed, 5*time.Second+300*time.Millisecond) }},
			Offline, "Can't reach perch.example.com — retrying in 5 s", "Perch — 1 unread · can't reach perch.example.com — retrying in 5 s",
			IconState{Severity: "error", Unread: 1, Away: true}, dialFailed.Error()},
		{"offline: the server answers that it cannot serve", []step{
			func(m *Model) Change {
				return m.Disconnected(perch.Errorf(perch.EUNAVAILABLE, "Down for maintenance."), 90*time.Second)
			}},
			Offline, "perch.example.com is unavailable — retrying in 2 min", "Perch — 0 unread · perch.example.com is unavailable — retrying in 2 min",
			IconState{Away: true}, "perch: unavailable: Down for maintenance."},
		{"offline: the server refuses", []step{
			func(m *Model) Change { return m.Disconnected(perch.Errorf(perch.EFORBIDDEN, "No."), time.Minute) }},
			Offline, "perch.example.com refused the connection — retrying in 1 min", "Perch — 0 unread · perch.example.com refused the connection — retrying in 1 min",
			IconState{Away: true}, "perch: forbidden: No."},
		{"back online", []step{connects, replayDone, func(m *Model) Change { return m.Disconnected(dialFailed, time.Second) }, connects, replayDone},
			Online, "All read", "Perch — 0 unread", IconState{}, ""},
		{"signed out", []step{connects, replayDone, arrives("1", "Incidents", "error"), func(m *Model) Change { return m.SignOut("") }},
			SignedOut, "Signed out", "Perch — signed out", IconState{Away: true}, ""},
		{"starting", nil, Connecting, "Connecting…", "Perch — 0 unread · connecting", IconState{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(server, DefaultLimits)
			play(m, tt.steps...)
			v := m.View()
			if v.Status != tt.wantStatus || v.Header() != tt.wantHeader || v.Tooltip() != tt.wantTooltip || v.Icon() != tt.wantIcon || v.Problem != tt.wantProblem {
				t.Errorf("status %v, header %q, tooltip %q, icon %+v, problem %q;\nwant %v, %q, %q, %+v, %q",
					v.Status, v.Header(), v.Tooltip(), v.Icon(), v.Problem, tt.wantStatus, tt.wantHeader, tt.wantTooltip, tt.wantIcon, tt.wantProblem)
			}
			if strings.Contains(v.Header(), "dial") || strings.Contains(v.Tooltip(), "dial") {
				t.Errorf("the raw error shows: header %q, tooltip %q", v.Header(), v.Tooltip())
			}
		})
	}
}

func TestHostNamesTheServer(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://perch.example.com": "perch.example.com", "http://127.0.0.1:8080": "127.0.0.1:8080",
		"https://example.com/perch/": "example.com/perch", "perch.example.com": "perch.example.com",
	} {
		if got := Host(in); got != want {
			t.Errorf("Host(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPausedIsExposed(t *testing.T) {
	t.Parallel()
	m := New(server, DefaultLimits)
	if m.Paused() || m.View().Paused {
		t.Fatal("a new model is paused")
	}
	m.SetPaused(true)
	if !m.Paused() || !m.View().Paused {
		t.Fatal("pausing did not show")
	}
}

func TestLabels(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100)
	tests := []struct{ got, want string }{
		{TabView{Name: "Code", Unread: 3}.Label(), "Code (3)"},
		{TabView{Name: "Code"}.Label(), "Code"},
		{ItemView{Title: "Deploy failed"}.Label(), "● Deploy failed"},
		{ItemView{Title: "Deploy\n  failed", Read: true}.Label(), "○ Deploy failed"},
		{ItemView{}.Label(), "● (untitled)"},
		{ItemView{Title: long}.Label(), "● " + strings.Repeat("x", maxLabel-1) + "…"},
		{ItemView{Title: " Deploy  failed "}.Text(), "Deploy failed"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("label %q, want %q", tt.got, tt.want)
		}
	}
}

// The UI reads the model from click handlers while the subscription writes
// to it; run with -race.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	m := New(server, Limits{PerTab: 5, Total: 10})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 200 {
			m.Add(&perch.Notification{ID: fmt.Sprint(i + 1), Tab: fmt.Sprint("tab", i%4), Severity: "info"})
		}
	})
	wg.Go(func() {
		for i := range 200 {
			m.MarkRead(fmt.Sprint(i))
			_ = m.View().Tooltip()
		}
	})
	wg.Wait()
	if v := m.View(); v.Unread > 10 || len(v.Tabs) != 4 {
		t.Errorf("after the race: %d unread in %d tabs", v.Unread, len(v.Tabs))
	}
}
