package server

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/mail/mailtest"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

// shown is a notification frame as a client reads it: its title, and
// whether it should not pop up.
type shown struct {
	Title  string `json:"title"`
	Silent bool   `json:"silent"`
}

// nextNotification skips to the next notification frame.
func (c *wsConn) nextNotification() shown {
	c.tb.Helper()
	for {
		f := c.next()
		if f.Type != "notification" {
			continue
		}
		var n shown
		if err := json.Unmarshal(f.Data, &n); err != nil {
			c.tb.Fatal(err)
		}
		return n
	}
}

// nextOf skips to the next frame of type typ and returns its data.
func (c *wsConn) nextOf(typ string) json.RawMessage {
	c.tb.Helper()
	for {
		if f := c.next(); f.Type == typ {
			return f.Data
		}
	}
}

// readyPreferences reads the ready frame and returns the preferences it
// carries.
func (c *wsConn) readyPreferences() perch.Preferences {
	c.tb.Helper()
	var d struct {
		Preferences *perch.Preferences `json:"preferences"`
	}
	if err := json.Unmarshal(c.nextOf("ready"), &d); err != nil || d.Preferences == nil {
		c.tb.Fatalf("ready without preferences: %v", err)
	}
	return *d.Preferences
}

// send posts an inbound event with a tab and a priority, and returns the
// notification's id.
func (a *api) send(token, title, tab string, priority any) string {
	a.t.Helper()
	body := map[string]any{"title": title, "tab": tab}
	if priority != nil {
		body["priority"] = priority
	}
	return expect(a.t, a.call("POST", "/webhooks/inbound?token="+token, "", body), 200).Body["ids"].([]any)[0].(string)
}

func TestPreferencesRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root")
		ada := a.register("Ada")
		got := expect(t, a.call("GET", "/api/v1/users/me/preferences", ada.Access, nil), 200).Data()
		if m, ok := got["muted"].([]any); !ok || len(m) != 0 || got["quiet_hours"] != nil || got["snooze_until"] != nil || got["email_unread"] != nil {
			t.Fatalf("defaults = %v", got)
		}
		snooze := a.clock.Now().Add(2 * time.Hour).Format(time.RFC3339)
		put := map[string]any{
			"muted":        []map[string]string{{"tab": "Code"}, {"source": "monitoring"}},
			"quiet_hours":  map[string]any{"start": "22:00", "end": "07:00", "time_zone": "Europe/Berlin", "min_priority": "high"},
			"snooze_until": snooze,
			"email_unread": map[string]any{"after_minutes": 30, "min_priority": 4},
		}
		res := expect(t, a.call("PUT", "/api/v1/users/me/preferences", ada.Access, put), 200).Data()
		again := expect(t, a.call("GET", "/api/v1/users/me/preferences", ada.Access, nil), 200).Data()
		for _, d := range []map[string]any{res, again} {
			q := d["quiet_hours"].(map[string]any)
			e := d["email_unread"].(map[string]any)
			if len(d["muted"].([]any)) != 2 || q["min_priority"] != float64(4) || q["time_zone"] != "Europe/Berlin" ||
				d["snooze_until"] != snooze || e["after_minutes"] != float64(30) {
				t.Errorf("preferences = %v", d)
			}
		}
		e := findAudit(t, a.auditEntries(root), perch.AuditPreferencesUpdated, ada.ID)
		if ch, _ := e["changes"].(map[string]any); ch["version"] != float64(1) || ch["quiet_hours"] == nil {
			t.Errorf("audit changes = %v", e["changes"])
		}
		// PUT replaces: what is left out is its default.
		expect(t, a.call("PUT", "/api/v1/users/me/preferences", ada.Access, map[string]any{"muted": []any{}}), 200)
		if d := expect(t, a.call("GET", "/api/v1/users/me/preferences", ada.Access, nil), 200).Data(); d["quiet_hours"] != nil || d["email_unread"] != nil {
			t.Errorf("after a PUT of mutes alone: %v", d)
		}
	})
}

func TestPreferencesRefuseBadFields(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ada := a.register("Ada")
	res := expect(t, a.call("PUT", "/api/v1/users/me/preferences", ada.Access, map[string]any{
		"muted":        []map[string]string{{"tab": "Code", "team_id": "t"}},
		"quiet_hours":  map[string]any{"start": "25:00", "end": "07:00", "time_zone": "Nowhere/City", "min_priority": 9},
		"snooze_until": a.clock.Now().Add(31 * 24 * time.Hour).Format(time.RFC3339),
		"email_unread": map[string]any{"after_minutes": 0, "min_priority": "loud"},
	}), 422)
	fields := res.Fields()
	for _, f := range []string{"muted[0]", "quiet_hours.start", "quiet_hours.time_zone", "quiet_hours.min_priority", "snooze_until",
		"email_unread.after_minutes", "email_unread.min_priority"} {
		if fields[f] == nil {
			t.Errorf("no problem for %s: %v", f, fields)
		}
	}
	// Unreadable: 400, naming the field.
	res = expect(t, a.call("PUT", "/api/v1/users/me/preferences", ada.Access, map[string]any{"muted": "Code"}), 400)
	if res.Fields()["muted"] == nil {
		t.Errorf("fields = %v", res.Fields())
	}
	expect(t, a.call("PUT", "/api/v1/users/me/preferences", ada.Access, `{"muted": [`), 400)
	if d := expect(t, a.call("GET", "/api/v1/users/me/preferences", ada.Access, nil), 200).Data(); d["quiet_hours"] != nil {
		t.Errorf("a refused PUT was stored: %v", d)
	}
}

// TestPreferencesChangeSilentLive mutes a tab while two sockets of the user
// are open: the next notification of that tab is silent on both, the other
// socket hears of the change in a preferences frame, and a third user's
// socket is not touched.
func TestPreferencesChangeSilentLive(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		org := a.webhookToken(ada, "org", "")
		laptop, phone, bobs := dial(t, ts, ada.Access, ""), dial(t, ts, ada.Access, ""), dial(t, ts, bob.Access, "")
		for _, c := range []*wsConn{laptop, phone, bobs} {
			if p := c.readyPreferences(); len(p.Muted) != 0 || p.Muted == nil {
				t.Fatalf("ready preferences = %+v", p)
			}
		}
		a.send(org, "before", "Code", nil)
		for _, c := range []*wsConn{laptop, phone, bobs} {
			if n := c.nextNotification(); n.Title != "before" || n.Silent {
				t.Fatalf("before the mute: %+v", n)
			}
		}

		expect(t, a.call("PUT", "/api/v1/users/me/preferences", ada.Access, map[string]any{"muted": []map[string]string{{"tab": "Code"}}}), 200)
		for _, c := range []*wsConn{laptop, phone} {
			var p perch.Preferences
			if err := json.Unmarshal(c.nextOf("preferences"), &p); err != nil || len(p.Muted) != 1 || p.Muted[0].Tab != "Code" {
				t.Fatalf("preferences frame = %+v, %v", p, err)
			}
		}
		a.send(org, "muted", "Code", "urgent")
		a.send(org, "other tab", "Inbound", nil)
		for _, c := range []*wsConn{laptop, phone} {
			if n := c.nextNotification(); n.Title != "muted" || !n.Silent {
				t.Errorf("the muted tab's notification: %+v", n)
			}
			if n := c.nextNotification(); n.Title != "other tab" || n.Silent {
				t.Errorf("another tab's: %+v", n)
			}
		}
		for _, want := range []string{"muted", "other tab"} {
			if n := bobs.nextNotification(); n.Title != want || n.Silent {
				t.Errorf("Bob, who muted nothing, got %+v", n)
			}
		}

		// A socket opened now has them in its ready frame, and its replay
		// says silent too.
		late := dial(t, ts, ada.Access, "0")
		if n := late.nextNotification(); n.Title != "before" || !n.Silent {
			t.Errorf("replayed: %+v", n)
		}
		if n := late.nextNotification(); n.Title != "muted" || !n.Silent {
			t.Errorf("replayed: %+v", n)
		}
		if n := late.nextNotification(); n.Title != "other tab" || n.Silent {
			t.Errorf("replayed: %+v", n)
		}
		if p := late.readyPreferences(); len(p.Muted) != 1 {
			t.Errorf("ready preferences = %+v", p)
		}
		// The history keeps them, without silent.
		for _, n := range expect(t, a.call("GET", "/api/v1/notifications", ada.Access, nil), 200).List() {
			if _, ok := n["silent"]; ok {
				t.Errorf("the history says silent: %v", n)
			}
		}
	})
}

// TestQuietHoursAcrossMidnightAndSnooze moves the server's clock through a
// night of quiet hours: below the lowest priority that breaks through,
// notifications are silent from 22:00 to 07:00 in the user's zone; a
// snooze silences all but urgent; min is silent whatever the time.
func TestQuietHoursAcrossMidnightAndSnooze(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		tok := a.webhookToken(ada, "user", "")
		// An API token, which the night does not outlast as an access token.
		a.apiToken(ada, "tray")
		c := dial(t, ts, ada.Token, "")
		c.ready()
		// 2026-11-22 09:00 UTC is 18:00 in Tokyo.
		expect(t, a.call("PUT", "/api/v1/users/me/preferences", ada.Token, map[string]any{
			"quiet_hours": map[string]any{"start": "22:00", "end": "07:00", "time_zone": "Asia/Tokyo", "min_priority": "high"}}), 200)
		c.nextOf("preferences")
		step := func(title string, priority any, wantSilent bool) {
			t.Helper()
			a.send(tok, title, "Inbound", priority)
			if n := c.nextNotification(); n.Title != title || n.Silent != wantSilent {
				t.Errorf("%s at %s: %+v, want silent %v", title, a.clock.Now().In(time.FixedZone("JST", 9*3600)).Format("15:04"), n, wantSilent)
			}
		}
		step("evening", nil, false)
		step("evening min", "min", true)
		a.clock.Advance(4*time.Hour + 30*time.Minute) // 22:30
		step("night", nil, true)
		step("night high", "high", false)
		a.clock.Advance(2 * time.Hour) // 00:30, across midnight
		step("after midnight", "low", true)
		step("after midnight urgent", 5, false)
		a.clock.Advance(6*time.Hour + 30*time.Minute) // 07:00
		step("morning", nil, false)

		snooze := a.clock.Now().Add(time.Hour).Format(time.RFC3339)
		expect(t, a.call("PUT", "/api/v1/users/me/preferences", ada.Token, map[string]any{"snooze_until": snooze}), 200)
		c.nextOf("preferences")
		step("snoozed", "high", true)
		step("snoozed urgent", "urgent", false)
		a.clock.Advance(time.Hour)
		step("awake", nil, false)
	})
}

// TestUnreadMailSentOnceNotAfterARead has the worker mail what Ada has not
// read after ten minutes, at or above high: once per notification, one
// mail per window, nothing read, nothing below the priority.
func TestUnreadMailSentOnceNotAfterARead(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		a.verifyEmail(ada)
		a.apiToken(ada, "script") // the hours ahead outlast the access token
		tok := a.webhookToken(ada, "user", "")
		a.send(tok, "before it was on", "Ops", "urgent")
		a.clock.Advance(time.Second)
		expect(t, a.call("PUT", "/api/v1/users/me/preferences", ada.Token, map[string]any{
			"email_unread": map[string]any{"after_minutes": 10, "min_priority": "high"}}), 200)
		a.clock.Advance(time.Second)
		a.send(tok, "disk full", "Ops", "high")
		a.send(tok, "fyi", "Ops", "low")
		read := a.send(tok, "read at once", "Ops", "urgent")
		expect(t, a.call("POST", "/api/v1/notifications/read", ada.Token, map[string]any{"ids": []string{read}}), 200)
		a.srv.mailing.Wait() // account mail sent in the background is in before the count
		mailed := a.mail.Count(ada.Email)
		tick := func() {
			t.Helper()
			if err := a.worker.Tick(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		var last mailtest.Message
		unreadMail := func() []string {
			t.Helper()
			var subjects []string
			for a.mail.Count(ada.Email) > mailed {
				m := a.mail.WaitFor(t, ada.Email)
				mailed++
				if strings.Contains(m.Subject, "you have not read") {
					subjects = append(subjects, m.Subject+"\n"+m.Text)
					last = m
				}
			}
			return subjects
		}

		tick() // nothing is ten minutes old
		if got := unreadMail(); len(got) != 0 {
			t.Fatalf("mailed too soon: %q", got)
		}
		a.clock.Advance(10 * time.Minute)
		tick()
		got := unreadMail()
		if len(got) != 1 || !strings.Contains(got[0], "1 notification you have not read") || !strings.Contains(got[0], "[high] Ops: disk full") ||
			strings.Contains(got[0], "fyi") || strings.Contains(got[0], "read at once") || strings.Contains(got[0], "before it was on") {
			t.Fatalf("the first mail: %q", got)
		}

		// The next window mails the new one alone; one read before its
		// time is never mailed.
		a.send(tok, "second", "Deploys", "urgent")
		later := a.send(tok, "read in time", "Deploys", "urgent")
		a.clock.Advance(5 * time.Minute)
		expect(t, a.call("POST", "/api/v1/notifications/read", ada.Token, map[string]any{"ids": []string{later}}), 200)
		tick() // within the window of the first mail
		if got := unreadMail(); len(got) != 0 {
			t.Fatalf("a second mail within the window: %q", got)
		}
		a.clock.Advance(6 * time.Minute)
		tick()
		got = unreadMail()
		if len(got) != 1 || !strings.Contains(got[0], "[urgent] Deploys: second") || strings.Contains(got[0], "disk full") || strings.Contains(got[0], "read in time") {
			t.Fatalf("the second mail: %q", got)
		}
		a.clock.Advance(time.Hour)
		tick()
		if got := unreadMail(); len(got) != 0 {
			t.Fatalf("mailed again: %q", got)
		}

		// One click in the mail turns it off, and it alone.
		if got := last.Header.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
			t.Errorf("List-Unsubscribe-Post = %q", got)
		}
		header := last.Header.Get("List-Unsubscribe")
		link := strings.TrimSuffix(strings.TrimPrefix(header, "<"), ">")
		if !strings.HasPrefix(header, "<http://perch.test/api/v1/unread-mail/unsubscribe?token=") || link == header {
			t.Fatalf("List-Unsubscribe = %q", header)
		}
		expect(t, a.call("PUT", "/api/v1/users/me/preferences", ada.Token, map[string]any{"muted": []map[string]string{{"tab": "Noise"}},
			"email_unread": map[string]any{"after_minutes": 10, "min_priority": "high"}}), 200)
		for range 2 { // repeating it is harmless
			if d := expect(t, a.oneClick(link), 200).Data(); d["unsubscribed"] != true || d["email"] != ada.Email {
				t.Errorf("one click = %v", d)
			}
		}
		if d := expect(t, a.call("GET", "/api/v1/users/me/preferences", ada.Token, nil), 200).Data(); d["email_unread"] != nil || len(d["muted"].([]any)) != 1 {
			t.Errorf("after the click: %v", d)
		}
		a.send(tok, "after the click", "Ops", "urgent")
		a.clock.Advance(time.Hour)
		tick()
		if got := unreadMail(); len(got) != 0 {
			t.Fatalf("mailed after the click: %q", got)
		}
		// Another purpose's token (the newsletter's) is no unsubscribe link here.
		expect(t, a.oneClick("/api/v1/unread-mail/unsubscribe?token="+url.QueryEscape(a.srv.unsubscribeToken(ada.ID))), 404)
	})
}

// TestPreferencesReachOtherInstances changes the preferences through one
// instance while the user's socket is on another: the change travels the
// fan-out log, and the other instance's socket hears of it and follows it.
func TestPreferencesReachOtherInstances(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, store.Postgres) // several instances need PostgreSQL
	r := testenv.StartRedis(t)
	channel := fmt.Sprintf("perch-test-%d:fanout", time.Now().UnixNano())
	one, _, _ := instance(t, s, r.URL(), channel)
	two, _, tsTwo := instance(t, s, r.URL(), channel)
	ada := one.register("Ada")
	token := one.webhookToken(ada, "user", "")
	c := dial(t, tsTwo, ada.Access, "")
	c.ready()
	expect(t, one.call("PUT", "/api/v1/users/me/preferences", ada.Access, map[string]any{"muted": []map[string]string{{"source": "inbound"}}}), 200)
	var p perch.Preferences
	if err := json.Unmarshal(c.nextOf("preferences"), &p); err != nil || len(p.Muted) != 1 || p.Muted[0].Source != "inbound" {
		t.Fatalf("preferences frame = %+v, %v", p, err)
	}
	two.send(token, "muted", "Ops", nil)
	if n := c.nextNotification(); n.Title != "muted" || !n.Silent {
		t.Errorf("on the other instance: %+v", n)
	}
}
