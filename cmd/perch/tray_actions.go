package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/desktop"
	trayui "github.com/perch-dev/perch/internal/tray"
)

// runAction carries out the action actionID of the notification id, from
// the menu or a desktop notification's button: a view action opens its
// URL; an http action asks the server to run it, and the menu (and a
// desktop notification) says what came of it.
func (a *trayApp) runAction(id, actionID string) {
	act, ok := a.model.Action(id, actionID)
	if !ok {
		return
	}
	if act.Type == perch.ActionView {
		if act.URL == "" {
			return
		}
		if err := a.cli.openBrowser(act.URL); err != nil {
			a.log.Printf("opening %s: %v", act.URL, err)
		}
		return
	}
	c := a.session()
	if c == nil {
		return
	}
	if a.model.SetOutcome(id, actionID, trayui.Outcome{Running: true}) {
		a.changed()
	}
	a.spawn(a.ctx, func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, err := c.RunAction(ctx, id, actionID)
		o := trayui.Outcome{Status: res.Status, OK: res.OK}
		if err != nil {
			o = trayui.Outcome{Err: perch.ErrorMessage(err)}
			a.log.Printf("running %q of %s: %s", act.Label, id, message(err))
		}
		if a.model.SetOutcome(id, actionID, o) {
			a.changed()
		}
		a.tellOutcome(id, act, o)
	})
}

// tellOutcome raises a desktop notification of what running an action came
// to: the menu is closed by the click that ran it.
func (a *trayApp) tellOutcome(id string, act trayui.Action, o trayui.Outcome) {
	if a.notifier == nil {
		return
	}
	it, _ := a.model.Item(id)
	summary := fmt.Sprintf("%s: done (%d)", act.Label, o.Status)
	urgency := desktop.Low
	switch {
	case o.Err != "":
		summary, urgency = act.Label+": not run", desktop.Normal
	case !o.OK:
		summary, urgency = fmt.Sprintf("%s: failed (%d)", act.Label, o.Status), desktop.Normal
	}
	body := it.Title
	if o.Err != "" {
		body = o.Err + "\n" + it.Title
	}
	ctx, cancel := context.WithTimeout(a.ctx, 2*time.Second)
	defer cancel()
	if _, err := a.notifier.Notify(ctx, desktop.Message{Summary: summary, Body: body, Urgency: urgency}); err != nil {
		a.log.Printf("telling the outcome of %q: %v", act.Label, err)
	}
}

// snooze sets the user's snooze (zero: off) through the preferences, which
// the server enforces for every client of the user: while it lasts, their
// frames come silent.
func (a *trayApp) snooze(until time.Time) {
	c := a.session()
	if c == nil {
		return
	}
	a.spawn(a.ctx, func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		// The other preferences go back as they are, as a map: PUT replaces
		// them all, and fields this tray does not know must survive.
		var prefs map[string]any
		if err := c.Call(ctx, http.MethodGet, "/api/v1/users/me/preferences", nil, &prefs); err != nil {
			a.log.Printf("reading the preferences to snooze: %s", message(err))
			return
		}
		if prefs == nil {
			prefs = map[string]any{}
		}
		prefs["snooze_until"] = nil
		if !until.IsZero() {
			prefs["snooze_until"] = until.UTC().Format(time.RFC3339)
		}
		var saved perch.Preferences
		if err := c.Call(ctx, http.MethodPut, "/api/v1/users/me/preferences", prefs, &saved); err != nil {
			a.log.Printf("snoozing: %s", message(err))
			return
		}
		a.setSnooze(saved.SnoozeUntil)
	})
}

// setSnooze shows the snooze the server said (nil or past: none).
func (a *trayApp) setSnooze(until *time.Time) {
	var t time.Time
	if until != nil && until.After(time.Now()) {
		t = *until
	}
	if a.model.SetSnooze(t) {
		a.changed()
	}
}
