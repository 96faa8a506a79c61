package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perch-dev/perch/client"
	"github.com/perch-dev/perch/internal/desktop"
	trayui "github.com/perch-dev/perch/internal/tray"
)

// TestTrayRunsActions: the menu's http action asks the server to run it
// and shows what the target answered, a view action opens its URL, and a
// desktop notification says how the http action went.
func TestTrayRunsActions(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("X-Perch-Signature") == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		hits.Add(1)
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(target.Close)
	base := startServer(t, map[string]string{"PERCH_RATE_LIMIT_AUTH": "1000/1m", "PERCH_WORKFLOW_ALLOW_PRIVATE": "true"})
	u := newTestUser(t, base, "Ada")
	dir := t.TempDir()
	u.signInTo(t, dir, base)
	app, d, opened, _ := startTray(t, dir, base)
	waitOnline(t, app)

	id := u.send(t, client.InboundEvent{Title: "Deploy 7 waits", Actions: []client.InboundAction{
		{Type: "view", Label: "Open", URL: "https://ci.example.com/7"},
		{Type: "http", Label: "Approve", URL: target.URL + "/approve", Method: http.MethodPost},
	}})
	eventually(t, "the notification with its actions", func() bool {
		it, ok := app.model.Item(id)
		return ok && len(it.Actions) == 2
	})
	it, _ := app.model.Item(id)
	if it.Actions[0].Label != "Open" || it.Actions[1].Label != "Approve" || it.Actions[1].URL != "" {
		t.Fatalf("actions %+v: want Open (view) and Approve (http, its target kept on the server)", it.Actions)
	}

	app.runAction(id, it.Actions[0].ID)
	if got := opened.list(); !slices.Equal(got, []string{"https://ci.example.com/7"}) {
		t.Errorf("the view action opened %q", got)
	}

	app.runAction(id, it.Actions[1].ID)
	eventually(t, "the http action's outcome", func() bool {
		it, _ := app.model.Item(id)
		o := it.Outcomes[it.Actions[1].ID]
		return !o.Running && o.Status != 0
	})
	it, _ = app.model.Item(id)
	if o := it.Outcomes[it.Actions[1].ID]; o != (trayui.Outcome{Status: http.StatusAccepted, OK: true}) {
		t.Errorf("outcome %+v, want 202 ok", o)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the target was called %d times, want once", n)
	}
	eventually(t, "a desktop notification of the outcome", func() bool {
		return slices.ContainsFunc(d.messages(), func(m desktop.Message) bool { return m.Summary == "Approve: done (202)" })
	})
}

// TestTrayFollowsTheSnooze: a snooze set on another client reaches the
// tray (the preferences frame), one set in the tray reaches the server,
// and a new tray shows the snooze from its ready.
func TestTrayFollowsTheSnooze(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	dir := t.TempDir()
	u.signInTo(t, dir, base)
	app, _, _, stop := startTray(t, dir, base)
	waitOnline(t, app)

	prefs, err := u.api.Preferences(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	prefs.SnoozeUntil = &until
	if _, err := u.api.SetPreferences(t.Context(), prefs); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the snooze set elsewhere", func() bool { return app.model.View().Snoozed.Equal(until) })

	app.snooze(time.Time{})
	eventually(t, "the snooze turned off", func() bool { return app.model.View().Snoozed.IsZero() })
	if p, err := u.api.Preferences(t.Context()); err != nil || p.SnoozeUntil != nil {
		t.Fatalf("on the server after turning it off: %+v, %v", p, err)
	}

	later := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	app.snooze(later)
	eventually(t, "the tray's snooze on the server", func() bool {
		p, err := u.api.Preferences(t.Context())
		return err == nil && p.SnoozeUntil != nil && p.SnoozeUntil.Equal(later)
	})
	stop()

	app, _, _, _ = startTray(t, dir, base)
	waitOnline(t, app)
	eventually(t, "the snooze from ready", func() bool { return app.model.View().Snoozed.Equal(later) })
}
