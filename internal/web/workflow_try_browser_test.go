package web_test

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestTryItOnAPastNotificationInTheBrowser: in Chromium, "Try it" on a
// notification that a workflow ran on sees the payload kept with it and
// matches as the live run did; on one that came before any workflow was
// on, the page says which payload paths the sample lacks and why none was
// kept, at phone and laptop width.
func TestTryItOnAPastNotificationInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	featuresOn(t, a.store, "workflows", "marketplace")
	b := newChrome(t, base)
	t.Logf("screenshots: %s", b.dir)
	b.signUp("Petra Payload", emailFor("Petra Payload"), goodPassword)
	petra := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": emailFor("Petra Payload"), "password": goodPassword}), 200).Data()
	access := petra["access_token"].(string)
	hook := expect(t, a.call("POST", "/api/v1/webhook-tokens", access, map[string]string{"label": "Monitoring", "sender": "inbound", "scope": "org"}), 201).Data()
	deliver := func(title string) {
		t.Helper()
		a.clock.Advance(time.Second)
		expect(t, a.call("POST", "/webhooks/inbound?token="+url.QueryEscape(hook["raw_token"].(string)), "",
			map[string]any{"title": title, "severity": "error", "alert": map[string]any{"priority": "P1", "team": "db"}}), 200)
	}
	deliver("Replica lag (before)")
	wf := expect(t, a.call("POST", "/api/v1/org/workflows", access, map[string]any{"name": "Page on P1", "enabled": true,
		"condition": `payload.alert.priority == "P1"`, "steps": []any{map[string]any{"set": map[string]any{"title": `"[P1] " + event.title`}}}}), 201).Data()
	deliver("Disk full (after)")
	a.runs.Wait() // the payload is kept after the notification, in the recorder's batch

	id := wf["id"].(string)
	b.open("/org/workflows/"+id, "#try-notification")
	b.choose("#try-notification", "[P1] Disk full (after) (error, Inbound)")
	b.click("#try")
	b.do("wait for the result", waitVisible("#try-status"))
	if got := b.text("#try-status"); got != "delivered" {
		t.Errorf("trying it on the notification it ran on says %q, want delivered", got)
	}
	if got := b.text("#try-notification-out strong"); got != "[P1] [P1] Disk full (after)" {
		t.Errorf("the result's title reads %q", got)
	}
	if got := evaluate[int](b, `document.querySelectorAll("#try-missing").length`); got != 0 {
		t.Errorf("with the payload kept, the page still says something is missing: %s", b.text("#try-missing"))
	}
	b.click("#try-payload-out summary")
	if got := b.text("#try-payload-out"); !strings.Contains(got, "kept with the notification") || !strings.Contains(got, `"priority": "P1"`) {
		t.Errorf("the payload it ran on reads %q", got)
	}
	b.checkPage("workflow-try-kept")

	b.choose("#try-notification", "Replica lag (before) (error, Inbound)")
	b.click("#try")
	b.do("wait for the caveat", waitVisible("#try-missing"))
	if got := b.text("#try-missing"); !strings.Contains(got, "payload.alert.priority") || !strings.Contains(got, "No payload was kept with this notification") {
		t.Errorf("trying it on a notification without a payload says %q", got)
	}
	b.checkPage("workflow-try-missing")
	b.fits("workflow-try-missing")
	checkConsole(t, b)
}
