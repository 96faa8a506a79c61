package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestRichNotificationActionInTheBrowser presses a notification's http
// action in the feed: the server runs it, the target is called once, and
// the button's row says what the target answered. With PERCH_DOCS_IMAGES
// set, the screenshots show that outcome.
func TestRichNotificationActionInTheBrowser(t *testing.T) {
	t.Parallel()
	richNotificationInTheBrowser(t, true)
}

// TestPreferencesInTheBrowser sets every preference on the dashboard's
// Preferences page and reads it back from the API: a snooze of an hour and
// turning it off, a muted tab and unmuting it, quiet hours, and the unread
// e-mail; a bad number is refused beside its field and nothing is saved.
func TestPreferencesInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	b := newChrome(t, base)
	const email = "ada@example.com"
	b.signUp("Ada Lovelace", email, goodPassword)
	prefs := preferencesOf(t, a, email)
	b.open("/preferences", "#snooze")
	b.checkPage("preferences")

	// Snooze for an hour: the server has it, and the control says until when.
	b.do("snooze for an hour", chromedp.Click(chromedp.CSS(`#snooze form:has(input[value="1h"]) button`)), waitVisible(`#snooze form:has(input[value="off"]) button`))
	until, _ := prefs()["snooze_until"].(string)
	at, err := time.Parse(time.RFC3339, until)
	if err != nil || at.Sub(a.clock.Now()) < 59*time.Minute || at.Sub(a.clock.Now()) > 61*time.Minute {
		t.Errorf("snooze_until %q (%v), want an hour from %v", until, err, a.clock.Now())
	}

	// A muted tab, listed, then unmuted.
	b.fill("#mute-tab", "Deploys")
	b.do("mute it", chromedp.Click(chromedp.CSS(`form[action="/preferences/mutes"] button[type=submit]`)), waitVisible("#mutes li"))
	if got := b.text("#mutes li span"); got == "" {
		t.Error("the muted tab is listed without words")
	}
	if m, _ := prefs()["muted"].([]any); len(m) != 1 || m[0].(map[string]any)["tab"] != "Deploys" {
		t.Errorf("muted %v, want the tab Deploys", m)
	}
	b.do("unmute it", chromedp.Click(chromedp.CSS("#mutes li form button")), chromedp.WaitNotPresent(chromedp.CSS("#mutes")))
	if m, _ := prefs()["muted"].([]any); len(m) != 0 {
		t.Errorf("muted %v after unmuting", m)
	}

	// A bad number: refused beside its field, nothing saved.
	b.click("#email")
	b.do("a bad delay", chromedp.SetValue(chromedp.CSS("#email-after"), "0"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('form[action="/preferences"]').noValidate = true`))
	b.do("save", chromedp.Click(chromedp.CSS(`form[action="/preferences"] > button[type=submit]`)), waitVisible(".field.invalid #email-after"))
	if p := prefs(); p["email_unread"] != nil {
		t.Errorf("email_unread %v saved from a refused form", p["email_unread"])
	}

	// Quiet hours and the unread e-mail, saved together.
	b.open("/preferences", "#quiet")
	b.click("#quiet")
	b.click("#email")
	b.do("the hours and the delay",
		chromedp.SetValue(chromedp.CSS("#quiet-start"), "23:00"), chromedp.SetValue(chromedp.CSS("#quiet-end"), "06:30"),
		chromedp.SetValue(chromedp.CSS("#quiet-min"), "4"),
		chromedp.SetValue(chromedp.CSS("#email-after"), "45"), chromedp.SetValue(chromedp.CSS("#email-min"), "4"))
	b.do("save", chromedp.Click(chromedp.CSS(`form[action="/preferences"] > button[type=submit]`)), waitVisible(".flash"))
	if got := b.text(".flash"); !strings.Contains(got, "saved") {
		t.Errorf("after saving the page says %q", got)
	}
	if !evaluate[bool](b, `document.querySelector("#quiet").checked && document.querySelector("#email-after").value === "45"`) {
		t.Error("the saved page does not show the quiet hours and the delay saved")
	}
	p := prefs()
	q, _ := p["quiet_hours"].(map[string]any)
	e, _ := p["email_unread"].(map[string]any)
	if q["start"] != "23:00" || q["end"] != "06:30" || q["min_priority"] != 4.0 || q["time_zone"] == "" {
		t.Errorf("quiet_hours %v", q)
	}
	if e["after_minutes"] != 45.0 || e["min_priority"] != 4.0 {
		t.Errorf("email_unread %v", e)
	}
	if p["snooze_until"] == nil {
		t.Error("saving the form ended the snooze")
	}

	// The snooze turned off.
	b.do("turn the snooze off", chromedp.Click(chromedp.CSS(`#snooze form:has(input[value="off"]) button`)), waitVisible(`#snooze form:has(input[value="1h"]) button`))
	if p := prefs(); p["snooze_until"] != nil {
		t.Errorf("snooze_until %v after turning it off", p["snooze_until"])
	}
	checkConsole(t, b, base+"/preferences: error: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)") // the refused form
}

// TestSnoozeBesideTheFeed: the feed's page has the snooze control; a snooze
// set there comes back to the feed, says until when, and is the user's
// preference on the server.
func TestSnoozeBesideTheFeed(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	b := newChrome(t, base)
	const email = "grace@example.com"
	b.signUp("Grace Hopper", email, goodPassword)
	prefs := preferencesOf(t, a, email)
	b.do("snooze until tomorrow", chromedp.Click(chromedp.CSS(`#feed #snooze form:has(input[value="morning"]) button`)),
		waitVisible(`#feed #snooze form:has(input[value="off"]) button`))
	if got, want := b.location(), base+"/notifications"; got != want {
		t.Errorf("after snoozing the browser is on %s, want %s", got, want)
	}
	if got := b.text("#feed #snooze span"); !strings.HasPrefix(got, "Snoozed until ") {
		t.Errorf("the control says %q", got)
	}
	if p := prefs(); p["snooze_until"] == nil {
		t.Error("no snooze on the server")
	}
	b.waitLive()
	checkConsole(t, b)
}

// preferencesOf signs in as the account email (with goodPassword) and
// returns a reader of its preferences, as the API answers them.
func preferencesOf(t *testing.T, a *site, email string) func() map[string]any {
	t.Helper()
	token := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": email, "password": goodPassword}), 200).Data()["access_token"].(string)
	return func() map[string]any {
		t.Helper()
		return expect(t, a.call("GET", "/api/v1/users/me/preferences", token, nil), 200).Data()
	}
}
