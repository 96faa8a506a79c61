package perch_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("time zone %s not on this host: %v", name, err)
	}
	return loc
}

func TestPreferencesValidation(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tooMany := `[` + strings.Repeat(`{"tab":"x"},`, perch.MaxMutes) + `{"tab":"y"}]`
	tests := []struct {
		name   string
		body   string
		fields map[string]string // field → a word its problem holds
	}{
		{"empty is the defaults", `{}`, nil},
		{"everything", `{"muted":[{"tab":"Code"},{"source":"incidents"},{"team_id":"t1"}],
			"quiet_hours":{"start":"22:00","end":"07:00","time_zone":"Europe/Berlin","min_priority":"high"},
			"snooze_until":"2026-03-02T12:00:00Z","email_unread":{"after_minutes":30,"min_priority":4}}`, nil},
		{"a mute with two names", `{"muted":[{"tab":"Code","source":"incidents"}]}`, map[string]string{"muted[0]": "exactly one"}},
		{"a mute with none", `{"muted":[{}]}`, map[string]string{"muted[0]": "exactly one"}},
		{"a mute too long", `{"muted":[{"tab":"` + strings.Repeat("a", 65) + `"}]}`, map[string]string{"muted[0].tab": "64"}},
		{"a mute with a control character", `{"muted":[{"source":"a\u0007b"}]}`, map[string]string{"muted[0].source": ""}},
		{"21 mutes", `{"muted":` + tooMany + `}`, map[string]string{"muted": "20"}},
		{"bad times of day", `{"quiet_hours":{"start":"24:00","end":"7:00","time_zone":"UTC"}}`,
			map[string]string{"quiet_hours.start": "HH:MM", "quiet_hours.end": "HH:MM"}},
		{"start equals end", `{"quiet_hours":{"start":"07:00","end":"07:00","time_zone":"UTC"}}`, map[string]string{"quiet_hours.end": "differ"}},
		{"an unknown zone", `{"quiet_hours":{"start":"22:00","end":"07:00","time_zone":"Mars/Olympus"}}`, map[string]string{"quiet_hours.time_zone": "time zone"}},
		{"the server's zone", `{"quiet_hours":{"start":"22:00","end":"07:00","time_zone":"Local"}}`, map[string]string{"quiet_hours.time_zone": "IANA"}},
		{"no zone", `{"quiet_hours":{"start":"22:00","end":"07:00"}}`, map[string]string{"quiet_hours.time_zone": "IANA"}},
		{"priority 6", `{"quiet_hours":{"start":"22:00","end":"07:00","time_zone":"UTC","min_priority":6}}`, map[string]string{"quiet_hours.min_priority": "1 to 5"}},
		{"priority by an unknown name", `{"email_unread":{"after_minutes":5,"min_priority":"loud"}}`, map[string]string{"email_unread.min_priority": "1 to 5"}},
		{"after 0 minutes", `{"email_unread":{"after_minutes":0}}`, map[string]string{"email_unread.after_minutes": "1440"}},
		{"after a day and a minute", `{"email_unread":{"after_minutes":1441}}`, map[string]string{"email_unread.after_minutes": "1440"}},
		{"snooze not a time", `{"snooze_until":"tomorrow"}`, map[string]string{"snooze_until": "RFC 3339"}},
		{"snooze too far", `{"snooze_until":"2026-04-01T12:00:01Z"}`, map[string]string{"snooze_until": "30 days"}},
		{"all at once", `{"muted":[{}],"quiet_hours":{"start":"x","end":"07:00","time_zone":"UTC"},"email_unread":{"after_minutes":0}}`,
			map[string]string{"muted[0]": "", "quiet_hours.start": "", "email_unread.after_minutes": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in perch.PreferencesInput
			if err := json.Unmarshal([]byte(tt.body), &in); err != nil {
				t.Fatal(err)
			}
			p, err := in.Preferences(now)
			if tt.fields == nil {
				if err != nil {
					t.Fatalf("Preferences: %v", err)
				}
				if p.Muted == nil {
					t.Fatal("Muted is nil; the API answers [] for none")
				}
				return
			}
			var pe *perch.Error
			if !errors.As(err, &pe) || pe.Code != perch.EVALIDATION {
				t.Fatalf("err = %v, want %s", err, perch.EVALIDATION)
			}
			if len(pe.Fields) != len(tt.fields) {
				t.Errorf("fields = %v, want %v", pe.Fields, tt.fields)
			}
			for f, word := range tt.fields {
				if got, ok := pe.Fields[f]; !ok || !strings.Contains(got, word) {
					t.Errorf("fields[%q] = %q, want one with %q (all: %v)", f, got, word, pe.Fields)
				}
			}
		})
	}
}

func TestPreferencesNormalised(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var in perch.PreferencesInput
	body := `{"muted":[{"tab":" Code "},{"tab":"Code"}],"quiet_hours":{"start":"22:00","end":"07:00","time_zone":"UTC"},
		"snooze_until":"2026-03-01T11:00:00Z","email_unread":{"after_minutes":10}}`
	if err := json.Unmarshal([]byte(body), &in); err != nil {
		t.Fatal(err)
	}
	p, err := in.Preferences(now)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Muted) != 1 || p.Muted[0].Tab != "Code" {
		t.Errorf("muted = %+v, want Code once", p.Muted)
	}
	if p.SnoozeUntil != nil {
		t.Errorf("a snooze that ended is kept: %v", p.SnoozeUntil)
	}
	if p.QuietHours.MinPriority != perch.PriorityUrgent || p.EmailUnread.MinPriority != perch.PriorityDefault {
		t.Errorf("default priorities: quiet %d, unread %d", p.QuietHours.MinPriority, p.EmailUnread.MinPriority)
	}
}

func note(tab, source string, scope perch.Scope, priority int) *perch.Notification {
	return &perch.Notification{Tab: tab, Source: source, Scope: scope, Priority: priority}
}

func TestSilent(t *testing.T) {
	user := perch.Scope{Type: perch.ScopeUser, ID: "u"}
	team := perch.Scope{Type: perch.ScopeTeam, ID: "t1"}
	noon := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	snooze := noon.Add(time.Hour)
	muted := &perch.Preferences{Muted: []perch.Mute{{Tab: "Code"}, {Source: "monitoring"}, {TeamID: "t1"}}}
	snoozed := &perch.Preferences{SnoozeUntil: &snooze}
	tests := []struct {
		name string
		p    *perch.Preferences
		n    *perch.Notification
		at   time.Time
		want bool
	}{
		{"defaults, default", nil, note("Inbound", "inbound", user, 3), noon, false},
		{"defaults, min", nil, note("Inbound", "inbound", user, 1), noon, true},
		{"defaults, low", nil, note("Inbound", "inbound", user, 2), noon, false},
		{"priority 0 counts as default", snoozed, note("Inbound", "inbound", user, 0), noon, true},
		{"muted tab", muted, note("Code", "code-host", user, 3), noon, true},
		{"muted tab, urgent stays silent", muted, note("Code", "code-host", user, 5), noon, true},
		{"muted source", muted, note("Monitoring", "monitoring", user, 4), noon, true},
		{"muted team", muted, note("Incidents", "incidents", team, 4), noon, true},
		{"a team id as a user's scope is no team", muted, note("Incidents", "incidents", perch.Scope{Type: perch.ScopeUser, ID: "t1"}, 4), noon, false},
		{"not muted", muted, note("Incidents", "incidents", user, 3), noon, false},
		{"snoozed, high", snoozed, note("Incidents", "incidents", user, 4), noon, true},
		{"snoozed, urgent breaks through", snoozed, note("Incidents", "incidents", user, 5), noon, false},
		{"snooze over", snoozed, note("Incidents", "incidents", user, 3), snooze, false},
		{"snoozed, min", snoozed, note("Incidents", "incidents", user, 1), noon.Add(2 * time.Hour), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Silent(tt.n, tt.at); got != tt.want {
				t.Errorf("Silent = %v, want %v", got, tt.want)
			}
			if got := tt.p.Compile(tt.at).Silent(tt.n, tt.at); got != tt.want {
				t.Errorf("compiled Silent = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQuietHours(t *testing.T) {
	berlin, tokyo := mustZone(t, "Europe/Berlin"), mustZone(t, "Asia/Tokyo")
	newYork := mustZone(t, "America/New_York")
	quiet := func(start, end, zone string, minp int) *perch.Preferences {
		return &perch.Preferences{QuietHours: &perch.QuietHours{Start: start, End: end, TimeZone: zone, MinPriority: minp}}
	}
	night := quiet("22:00", "07:00", "Europe/Berlin", perch.PriorityHigh)
	lunch := quiet("12:00", "13:30", "Asia/Tokyo", perch.PriorityUrgent)
	earlyNY := quiet("02:30", "05:00", "America/New_York", perch.PriorityUrgent)
	lateNY := quiet("22:00", "01:30", "America/New_York", perch.PriorityUrgent)
	def := note("Inbound", "inbound", perch.Scope{Type: perch.ScopeOrg, ID: "o"}, perch.PriorityDefault)
	high := note("Inbound", "inbound", perch.Scope{Type: perch.ScopeOrg, ID: "o"}, perch.PriorityHigh)
	tests := []struct {
		name string
		p    *perch.Preferences
		n    *perch.Notification
		at   time.Time
		want bool
	}{
		{"Berlin, before the start", night, def, time.Date(2026, 1, 10, 21, 59, 59, 0, berlin), false},
		{"Berlin, at the start", night, def, time.Date(2026, 1, 10, 22, 0, 0, 0, berlin), true},
		{"Berlin, across midnight", night, def, time.Date(2026, 1, 11, 0, 30, 0, 0, berlin), true},
		{"Berlin, before the end", night, def, time.Date(2026, 1, 11, 6, 59, 59, 0, berlin), true},
		{"Berlin, at the end", night, def, time.Date(2026, 1, 11, 7, 0, 0, 0, berlin), false},
		{"Berlin, high breaks through", night, high, time.Date(2026, 1, 11, 0, 30, 0, 0, berlin), false},
		{"Berlin's night is Tokyo's morning", night, def, time.Date(2026, 1, 11, 8, 30, 0, 0, tokyo), true},
		{"Berlin, in summer time", night, def, time.Date(2026, 7, 1, 22, 30, 0, 0, berlin), true},
		{"Berlin, in summer time, asked in UTC", night, def, time.Date(2026, 7, 1, 20, 30, 0, 0, time.UTC), true},
		{"Berlin, in summer time, 19:30 UTC is 21:30", night, def, time.Date(2026, 7, 1, 19, 30, 0, 0, time.UTC), false},
		{"Tokyo, lunch", lunch, high, time.Date(2026, 1, 11, 12, 15, 0, 0, tokyo), true},
		{"Tokyo, lunch asked in Berlin", lunch, high, time.Date(2026, 1, 11, 4, 15, 0, 0, berlin), true},
		{"Tokyo, after lunch", lunch, high, time.Date(2026, 1, 11, 13, 30, 0, 0, tokyo), false},
		// 2026-03-08: New York springs from 02:00 to 03:00, so 02:30 never
		// shows; the hours start at the first minute after the gap.
		{"spring forward, just before the gap", earlyNY, def, time.Date(2026, 3, 8, 6, 59, 0, 0, time.UTC), false},
		{"spring forward, right after the gap", earlyNY, def, time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), true},
		{"spring forward, end", earlyNY, def, time.Date(2026, 3, 8, 9, 0, 0, 0, time.UTC), false},
		// 2026-11-01: New York falls back from 02:00 to 01:00: 01:00 to
		// 02:00 shows twice, and 01:30 ends the hours both times.
		{"fall back, first 01:15", lateNY, def, time.Date(2026, 11, 1, 5, 15, 0, 0, time.UTC), true},
		{"fall back, first 01:45", lateNY, def, time.Date(2026, 11, 1, 5, 45, 0, 0, time.UTC), false},
		{"fall back, second 01:15", lateNY, def, time.Date(2026, 11, 1, 6, 15, 0, 0, time.UTC), true},
		{"fall back, second 01:45", lateNY, def, time.Date(2026, 11, 1, 6, 45, 0, 0, time.UTC), false},
		{"New York, the evening before", lateNY, def, time.Date(2026, 10, 31, 22, 0, 0, 0, newYork), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Silent(tt.n, tt.at); got != tt.want {
				t.Errorf("Silent at %v = %v, want %v", tt.at, got, tt.want)
			}
		})
	}
}

// TestSilencerCacheAgrees walks one compiled Silencer's clock forward in
// odd steps across both of a year's DST switches and a snooze's end, and
// checks every answer against a fresh computation: the cached state must
// flip exactly when the wall clock does.
func TestSilencerCacheAgrees(t *testing.T) {
	for _, zone := range []string{"America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata"} {
		mustZone(t, zone)
		for _, hours := range [][2]string{{"22:00", "07:00"}, {"02:15", "02:45"}, {"01:30", "03:00"}, {"00:00", "23:59"}} {
			from := time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC)
			snooze := from.Add(50 * time.Hour)
			p := &perch.Preferences{SnoozeUntil: &snooze,
				QuietHours: &perch.QuietHours{Start: hours[0], End: hours[1], TimeZone: zone, MinPriority: perch.PriorityHigh}}
			s := p.Compile(from)
			n := note("Inbound", "inbound", perch.Scope{Type: perch.ScopeAll}, perch.PriorityDefault)
			for _, span := range []time.Time{from, time.Date(2026, 3, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 24, 0, 0, 0, 0, time.UTC)} {
				for at := span; at.Before(span.Add(14 * 24 * time.Hour)); at = at.Add(7*time.Minute + 13*time.Second) {
					if got, want := s.Silent(n, at), p.Compile(at).Silent(n, at); got != want {
						t.Fatalf("%s %v at %v: cached %v, fresh %v", zone, hours, at, got, want)
					}
				}
			}
		}
	}
}

func TestCompileNothingToSilence(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	past := now.Add(-time.Minute)
	for _, p := range []*perch.Preferences{nil, perch.DefaultPreferences(), {SnoozeUntil: &past},
		{EmailUnread: &perch.EmailUnread{AfterMinutes: 5, MinPriority: 3}}} {
		if s := p.Compile(now); s != nil {
			t.Errorf("Compile(%+v) = %+v, want nil", p, s)
		}
	}
}
