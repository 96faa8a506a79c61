package perch

import (
	"cmp"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Preferences are one user's say over which notifications pop up on their
// clients, enforced by the server for every client at once (docs/DESIGN.md,
// Preferences): nothing is hidden, the history keeps everything, but a
// notification frame says silent when it should not raise a desktop
// notification. EmailUnread has unread notifications mailed.
type Preferences struct {
	Muted       []Mute       `json:"muted"`
	QuietHours  *QuietHours  `json:"quiet_hours"`
	SnoozeUntil *time.Time   `json:"snooze_until"`
	EmailUnread *EmailUnread `json:"email_unread"`
}

// Mute silences a tab, a source or a team's notifications (those whose scope
// is that team): exactly one of the three is set.
type Mute struct {
	Tab    string `json:"tab,omitempty"`
	Source string `json:"source,omitempty"`
	TeamID string `json:"team_id,omitempty"`
}

// QuietHours silence notifications below MinPriority from Start to End
// ("HH:MM", on the wall clock of TimeZone, an IANA name; across midnight
// when End is before Start).
type QuietHours struct {
	Start       string `json:"start"`
	End         string `json:"end"`
	TimeZone    string `json:"time_zone"`
	MinPriority int    `json:"min_priority"`
}

// EmailUnread mails the notifications at or above MinPriority the user has
// not read AfterMinutes after they arrived, once each.
type EmailUnread struct {
	AfterMinutes int `json:"after_minutes"`
	MinPriority  int `json:"min_priority"`
}

// Limits of preferences.
const (
	MaxMutes          = 20
	MaxMuteName       = 64 // characters of a muted tab, source or team id
	MaxSnooze         = 30 * 24 * time.Hour
	MaxUnreadAfterMin = 24 * 60 // minutes
	// The priorities that break through quiet hours, and that are mailed
	// unread, when a request names none.
	DefaultQuietMinPriority  = PriorityUrgent
	DefaultUnreadMinPriority = PriorityDefault
)

// DefaultPreferences are a user's until they store some: nothing muted,
// no quiet hours, no snooze, no mail.
func DefaultPreferences() *Preferences { return &Preferences{Muted: []Mute{}} }

// PreferencesInput is a request's preferences as they were sent: priorities
// may be numbers or names (PriorityProblem).
type PreferencesInput struct {
	Muted      []Mute `json:"muted"`
	QuietHours *struct {
		Start       string `json:"start"`
		End         string `json:"end"`
		TimeZone    string `json:"time_zone"`
		MinPriority any    `json:"min_priority"`
	} `json:"quiet_hours"`
	SnoozeUntil *string `json:"snooze_until"`
	EmailUnread *struct {
		AfterMinutes int `json:"after_minutes"`
		MinPriority  any `json:"min_priority"`
	} `json:"email_unread"`
}

// Preferences validates in against the clock now and returns what to store,
// or EVALIDATION with every problem by field ("muted[2]",
// "quiet_hours.time_zone", …). A repeated mute is kept once; a snooze that
// has ended already is none.
func (in *PreferencesInput) Preferences(now time.Time) (*Preferences, error) {
	p := DefaultPreferences()
	problems := Problems{}
	if len(in.Muted) > MaxMutes {
		problems.Add("muted", fmt.Sprintf("must hold at most %d mutes", MaxMutes))
	}
	for i, m := range in.Muted {
		field := fmt.Sprintf("muted[%d]", i)
		m = Mute{Tab: strings.TrimSpace(m.Tab), Source: strings.TrimSpace(m.Source), TeamID: strings.TrimSpace(m.TeamID)}
		set := 0
		for name, v := range map[string]string{"tab": m.Tab, "source": m.Source, "team_id": m.TeamID} {
			if v == "" {
				continue
			}
			set++
			if utf8.RuneCountInString(v) > MaxMuteName {
				problems.Add(field+"."+name, fmt.Sprintf("must be at most %d characters", MaxMuteName))
			} else if pr := TextProblem(v, SingleLine); pr != "" {
				problems.Add(field+"."+name, pr)
			}
		}
		if set != 1 {
			problems.Add(field, "must name exactly one of tab, source or team_id")
			continue
		}
		if !containsMute(p.Muted, m) {
			p.Muted = append(p.Muted, m)
		}
	}
	if q := in.QuietHours; q != nil {
		start, okStart := parseClock(q.Start)
		if !okStart {
			problems.Add("quiet_hours.start", `must be a time of day as "HH:MM" (00:00 to 23:59)`)
		}
		end, okEnd := parseClock(q.End)
		if !okEnd {
			problems.Add("quiet_hours.end", `must be a time of day as "HH:MM" (00:00 to 23:59)`)
		}
		if okStart && okEnd && start == end {
			problems.Add("quiet_hours.end", "must differ from start")
		}
		if _, err := LoadTimeZone(q.TimeZone); err != nil {
			problems.Add("quiet_hours.time_zone", err.Error())
		}
		minp, pr := PriorityProblem(q.MinPriority)
		if pr != "" {
			problems.Add("quiet_hours.min_priority", pr)
		}
		p.QuietHours = &QuietHours{Start: q.Start, End: q.End, TimeZone: q.TimeZone, MinPriority: cmp.Or(minp, DefaultQuietMinPriority)}
	}
	if in.SnoozeUntil != nil {
		t, err := time.Parse(time.RFC3339, *in.SnoozeUntil)
		switch {
		case err != nil:
			problems.Add("snooze_until", "must be a time in RFC 3339 (2026-01-02T15:04:05Z) or null")
		case t.After(now.Add(MaxSnooze)):
			problems.Add("snooze_until", "must be at most 30 days ahead")
		case t.After(now):
			t = t.UTC()
			p.SnoozeUntil = &t
		}
	}
	if e := in.EmailUnread; e != nil {
		if e.AfterMinutes < 1 || e.AfterMinutes > MaxUnreadAfterMin {
			problems.Add("email_unread.after_minutes", fmt.Sprintf("must be 1 to %d (minutes)", MaxUnreadAfterMin))
		}
		minp, pr := PriorityProblem(e.MinPriority)
		if pr != "" {
			problems.Add("email_unread.min_priority", pr)
		}
		p.EmailUnread = &EmailUnread{AfterMinutes: e.AfterMinutes, MinPriority: cmp.Or(minp, DefaultUnreadMinPriority)}
	}
	if err := problems.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

func containsMute(ms []Mute, m Mute) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// parseClock reads "HH:MM" as a time of day.
func parseClock(s string) (time.Duration, bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	digits := func(a, b byte) (int, bool) {
		if a < '0' || a > '9' || b < '0' || b > '9' {
			return 0, false
		}
		return int(a-'0')*10 + int(b-'0'), true
	}
	h, ok1 := digits(s[0], s[1])
	m, ok2 := digits(s[3], s[4])
	if !ok1 || !ok2 || h > 23 || m > 59 {
		return 0, false
	}
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute, true
}

// zones caches the time zones loaded: time.LoadLocation reads the zone's
// file every time, and every client with quiet hours needs its zone.
var zones sync.Map // name → *time.Location

// LoadTimeZone returns the IANA time zone name ("Europe/Berlin", "UTC"); the
// error says what is wrong with name. The server's own zone ("Local", "")
// is refused: it is no place a user is in.
func LoadTimeZone(name string) (*time.Location, error) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("must be an IANA time zone such as Europe/Berlin or UTC")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("is not a time zone this server knows (an IANA name such as Europe/Berlin or UTC)")
	}
	zones.Store(name, loc)
	return loc, nil
}

// Silent is the one decision of whether n should not pop up for the user
// with preferences p at now (docs/DESIGN.md, Preferences): a min
// notification never pops up; a muted tab, source or team stays silent,
// even urgent (a mute is an explicit never); urgent breaks through snooze
// and quiet hours; a snooze silences everything else; quiet hours silence
// what is below their MinPriority. A nil p is the defaults.
func (p *Preferences) Silent(n *Notification, now time.Time) bool {
	return p.Compile(now).Silent(n, now)
}

// Silencer is Preferences compiled for the fan-out's hot path, where it is
// asked once per client per notification: the mutes in slices, the time
// zone loaded, and the state of snooze and quiet hours cached until the
// next time either can change, so most checks are a comparison of times.
// A nil *Silencer silences what the defaults do (min priority alone). It is
// safe for concurrent use.
type Silencer struct {
	tabs, sources, teams []string
	snooze               time.Time // zero: none
	quiet                *quietRule
	state                atomic.Pointer[silenceState]
}

type quietRule struct {
	start, end time.Duration // time of day on the wall clock
	loc        *time.Location
	min        int
}

// silenceState is what holds from since until until: notifications below
// below are silent (muted ones are anyway).
type silenceState struct {
	since, until time.Time
	below        int
}

// Compile returns p as a Silencer, or nil when p silences nothing beyond
// the defaults from now on (no mutes, no quiet hours, no snooze still to
// come). A time zone that no longer loads counts as no quiet hours.
func (p *Preferences) Compile(now time.Time) *Silencer {
	if p == nil {
		return nil
	}
	s := &Silencer{}
	for _, m := range p.Muted {
		switch {
		case m.Tab != "":
			s.tabs = append(s.tabs, m.Tab)
		case m.Source != "":
			s.sources = append(s.sources, m.Source)
		case m.TeamID != "":
			s.teams = append(s.teams, m.TeamID)
		}
	}
	if p.SnoozeUntil != nil && p.SnoozeUntil.After(now) {
		s.snooze = *p.SnoozeUntil
	}
	if q := p.QuietHours; q != nil {
		start, ok1 := parseClock(q.Start)
		end, ok2 := parseClock(q.End)
		loc, err := LoadTimeZone(q.TimeZone)
		if ok1 && ok2 && err == nil && start != end {
			s.quiet = &quietRule{start: start, end: end, loc: loc, min: q.MinPriority}
		}
	}
	if len(s.tabs)+len(s.sources)+len(s.teams) == 0 && s.snooze.IsZero() && s.quiet == nil {
		return nil
	}
	return s
}

// Silent reports whether n should not pop up at now; see Preferences.Silent.
func (s *Silencer) Silent(n *Notification, now time.Time) bool {
	if n.Priority == PriorityMin {
		return true
	}
	if s == nil {
		return false
	}
	if s.muted(n) {
		return true
	}
	if n.Priority >= PriorityUrgent {
		return false
	}
	st := s.state.Load()
	// States are computed for a clock that moves forward; one asked about
	// an earlier time than its own is computed afresh.
	if st == nil || !now.Before(st.until) || now.Before(st.since) {
		st = s.at(now)
		s.state.Store(st)
	}
	p := n.Priority
	if p == 0 {
		p = PriorityDefault // a notification stored before priorities
	}
	return p < st.below
}

func (s *Silencer) muted(n *Notification) bool {
	for _, t := range s.tabs {
		if n.Tab == t {
			return true
		}
	}
	for _, src := range s.sources {
		if n.Source == src {
			return true
		}
	}
	if n.Scope.Type == ScopeTeam {
		for _, t := range s.teams {
			if n.Scope.ID == t {
				return true
			}
		}
	}
	return false
}

// forever is the end of a state that no time changes.
var forever = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// at computes the state in force at now and how long it holds: until the
// snooze ends, the wall clock in the quiet hours' zone reaches start or
// end, or that zone's offset changes (a DST switch), whichever is first.
// Quiet hours are read off the wall clock, so a start inside the hour that
// a spring-forward skips begins at the first minute after the gap, and
// during the hour an autumn switch repeats, a time the clock shows inside
// the hours is inside them both times.
func (s *Silencer) at(now time.Time) *silenceState {
	st := &silenceState{since: now, until: forever, below: PriorityLow}
	if !s.snooze.IsZero() && now.Before(s.snooze) {
		st.below, st.until = PriorityUrgent, s.snooze
	}
	if q := s.quiet; q != nil {
		t := now.In(q.loc)
		h, m, sec := t.Clock()
		tod := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second +
			time.Duration(t.Nanosecond())
		inside := tod >= q.start && tod < q.end
		if q.start > q.end { // across midnight
			inside = tod >= q.start || tod < q.end
		}
		if inside && q.min > st.below {
			st.below = q.min
		}
		flip := now.Add(min(untilClock(tod, q.start), untilClock(tod, q.end)))
		if _, zoneEnd := t.ZoneBounds(); !zoneEnd.IsZero() && zoneEnd.Before(flip) {
			flip = zoneEnd
		}
		if flip.Before(st.until) {
			st.until = flip
		}
	}
	return st
}

// untilClock is how long from the time of day tod until the wall clock next
// shows at, on a day without a DST switch.
func untilClock(tod, at time.Duration) time.Duration {
	d := (at - tod) % (24 * time.Hour)
	if d <= 0 {
		d += 24 * time.Hour
	}
	return d
}
