package web

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// The preferences page (GET/PUT /api/v1/users/me/preferences): what pops
// up on every client of the user, enforced by the server. Each form
// changes one part; the rest go back as they were, since the API's PUT
// replaces them all.

const preferencesPath = "/api/v1/users/me/preferences"

// preferences are the API's, as it answers them (perch.Preferences).
type preferences struct {
	Muted       []mute       `json:"muted"`
	QuietHours  *quietHours  `json:"quiet_hours"`
	SnoozeUntil *time.Time   `json:"snooze_until"`
	EmailUnread *emailUnread `json:"email_unread"`
}

type mute struct {
	Tab    string `json:"tab,omitempty"`
	Source string `json:"source,omitempty"`
	TeamID string `json:"team_id,omitempty"`
}

type quietHours struct {
	Start       string `json:"start"`
	End         string `json:"end"`
	TimeZone    string `json:"time_zone"`
	MinPriority int    `json:"min_priority"`
}

type emailUnread struct {
	AfterMinutes int `json:"after_minutes"`
	MinPriority  int `json:"min_priority"`
}

// preferencesData is what the page shows.
type preferencesData struct {
	Prefs   *preferences
	Snoozed *time.Time // the snooze, while it lasts
	Teams   []*perch.Team
	Sources []sourceChoice
	// Priorities are the choices of a priority select, lowest first.
	Priorities []priorityChoice
}

type sourceChoice struct{ Value, Name string }

type priorityChoice struct {
	Value int
	Name  string
}

// MuteText says what a mute silences, for people: "the tab Deploys",
// "GitHub", "the team On call".
func (d preferencesData) MuteText(m mute) string {
	switch {
	case m.Tab != "":
		return "the tab " + m.Tab
	case m.Source != "":
		return perch.SourceTitle(m.Source)
	}
	for _, t := range d.Teams {
		if t.ID == m.TeamID {
			return "the team " + t.Name
		}
	}
	return "a team you are no longer in"
}

var priorityChoices = func() []priorityChoice {
	var c []priorityChoice
	for p := perch.PriorityMin; p <= perch.PriorityUrgent; p++ {
		c = append(c, priorityChoice{p, perch.PriorityName(p)})
	}
	return c
}()

// The sources a user may mute: the receivers (and Perch's own).
var sourceChoices = []sourceChoice{
	{perch.SenderInbound, "Inbound (any system)"}, {perch.SenderIncidents, "PagerDuty"}, {perch.SenderCodeHost, "GitHub"},
	{perch.SenderMonitoring, "Datadog"}, {"payments-a", "Stripe"}, {"payments-b", "Paddle"}, {"workflow", "Workflows"}, {"system", "Perch itself"},
}

func (c *call) preferences() (*preferences, error) {
	var p preferences
	if err := c.do(http.MethodGet, preferencesPath, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// snoozed is the snooze of p while it lasts, else nil.
func (c *call) snoozed(p *preferences) *time.Time {
	if p.SnoozeUntil != nil && p.SnoozeUntil.After(c.d.now()) {
		return p.SnoozeUntil
	}
	return nil
}

func (c *call) preferencesView() (view, error) {
	p, err := c.preferences()
	if err != nil {
		return view{}, err
	}
	data := preferencesData{Prefs: p, Snoozed: c.snoozed(p), Sources: sourceChoices, Priorities: priorityChoices}
	if err := c.do(http.MethodGet, "/api/v1/org/teams", nil, &data.Teams); err != nil {
		return view{}, err
	}
	return view{Title: "Preferences", Nav: "profile", Data: data}, nil
}

// Preferences shows the user's preferences, each part in a form of its own.
func (d *Dashboard) Preferences(w http.ResponseWriter, r *http.Request, c *call) error {
	v, err := c.preferencesView()
	if err != nil {
		return err
	}
	return c.page("preferences", v)
}

// putPreferences stores p, and on a refusal shows the page again with what
// is wrong.
func (c *call) putPreferences(p *preferences, done string) error {
	if err := c.do(http.MethodPut, preferencesPath, p, nil); err != nil {
		v, verr := c.preferencesView()
		if verr != nil {
			return err
		}
		return c.formError("preferences", v, err)
	}
	return c.redirect("/preferences", done)
}

// SavePreferences saves quiet hours and the unread e-mail.
func (d *Dashboard) SavePreferences(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	f := r.PostForm
	p, err := c.preferences()
	if err != nil {
		return err
	}
	p.QuietHours, p.EmailUnread = nil, nil
	if f.Get("quiet") == "on" {
		p.QuietHours = &quietHours{Start: f.Get("quiet_start"), End: f.Get("quiet_end"), TimeZone: f.Get("quiet_time_zone"), MinPriority: formPriority(f.Get("quiet_min_priority"))}
	}
	if f.Get("email") == "on" {
		after, _ := strconv.Atoi(strings.TrimSpace(f.Get("email_after")))
		p.EmailUnread = &emailUnread{AfterMinutes: after, MinPriority: formPriority(f.Get("email_min_priority"))}
	}
	return c.putPreferences(p, "Your preferences are saved; every device of yours follows them from now on.")
}

// formPriority is a priority select's value (0, which the API refuses,
// when it is none).
func formPriority(v string) int {
	p, _ := perch.ParsePriority(v)
	return p
}

// AddMute mutes a tab, a sender or a team.
func (d *Dashboard) AddMute(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	f := r.PostForm
	p, err := c.preferences()
	if err != nil {
		return err
	}
	m := mute{Tab: strings.TrimSpace(f.Get("tab")), Source: f.Get("source"), TeamID: f.Get("team_id")}
	p.Muted = append(p.Muted, m)
	return c.putPreferences(p, "Muted. Its notifications still arrive and are kept, without popping up.")
}

// RemoveMute unmutes the i-th mute.
func (d *Dashboard) RemoveMute(w http.ResponseWriter, r *http.Request, c *call) error {
	p, err := c.preferences()
	if err != nil {
		return err
	}
	i, err := strconv.Atoi(r.PathValue("i"))
	if err != nil || i < 0 || i >= len(p.Muted) {
		return c.redirect("/preferences", "That mute was removed already.")
	}
	p.Muted = slices.Delete(p.Muted, i, i+1)
	return c.putPreferences(p, "Unmuted.")
}

// Snooze snoozes every client of the user: for an hour, until tomorrow
// morning in the browser's time zone (tz, which the page's script fills;
// else the quiet hours', else UTC), or off. It goes back to the page it
// came from (next).
func (d *Dashboard) Snooze(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	f := r.PostForm
	p, err := c.preferences()
	if err != nil {
		return err
	}
	now := c.d.now()
	loc := time.UTC
	if q := p.QuietHours; q != nil {
		if l, err := time.LoadLocation(q.TimeZone); err == nil {
			loc = l
		}
	}
	if tz := f.Get("tz"); tz != "" {
		if l, err := time.LoadLocation(tz); err == nil {
			loc = l
		}
	}
	var until time.Time
	switch f.Get("for") {
	case "1h":
		until = now.Add(time.Hour)
	case "morning":
		until = perch.NextMorning(now.In(loc))
	case "off":
	default:
		return perch.Problems{"for": "must be 1h, morning or off"}.Err()
	}
	p.SnoozeUntil = nil
	msg := "Snooze is off: notifications pop up again."
	if !until.IsZero() {
		until = until.UTC().Truncate(time.Second)
		p.SnoozeUntil = &until
		msg = "Snoozed until " + until.In(loc).Format("Mon 15:04") + " on every device of yours; urgent notifications still come through."
	}
	next := safeNext(f.Get("next"))
	if err := c.do(http.MethodPut, preferencesPath, p, nil); err != nil {
		return err
	}
	return c.redirect(next, msg)
}
