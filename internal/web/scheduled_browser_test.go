package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestScheduledNotificationsInTheBrowser: the Webhooks page lists what the
// user's token holds for later, soonest first, with the time in the
// reader's zone; Cancel (after its confirmation) takes one back, and the
// page fits a phone and a laptop.
func TestScheduledNotificationsInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	b := newChrome(t, base)
	const email = "ada@example.com"
	b.signUp("Ada Lovelace", email, goodPassword)
	login := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": email, "password": goodPassword}), 200).Data()
	access := login["access_token"].(string)
	receiver := expect(t, a.call("POST", "/api/v1/webhook-tokens", access,
		map[string]string{"label": "Reminders", "sender": "inbound"}), 201).Data()["url"].(string)
	for _, body := range []string{
		`{"title":"Release notes due","message":"for v1.3","delay":"3h"}`,
		`{"title":"Standup in 5 minutes","tab":"Team","delay":"25m"}`,
	} {
		if res := postJSON(t, receiver, body); res.StatusCode != http.StatusOK {
			t.Fatalf("POST to the receiver: %d", res.StatusCode)
		}
	}

	b.open("/webhook-tokens", "#scheduled")
	type row struct{ When, Title, Tab, Token string }
	rows := func() []row {
		return evaluate[[]row](b, `[...document.querySelectorAll("#scheduled tbody tr")].map((tr) => ({
			When: tr.querySelector("time").getAttribute("datetime"),
			Title: tr.querySelector("strong").innerText.trim(),
			Tab: tr.querySelector("[data-label=Tab]").innerText.trim(),
			Token: tr.querySelector("[data-label=Token]").innerText.trim()}))`)
	}
	got := rows()
	if len(got) != 2 || got[0].Title != "Standup in 5 minutes" || got[0].Tab != "Team" || got[0].Token != "Reminders" ||
		got[1].Title != "Release notes due" || got[1].Tab != "Inbound" || got[0].When >= got[1].When {
		t.Fatalf("the list shows %+v", got)
	}
	b.checkPage("webhooks-scheduled")
	b.fits("webhooks-scheduled")
	b.screenshot("webhooks-scheduled")

	b.do("accept the confirmation", chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`))
	b.click(`#scheduled tbody tr:first-child button[type=submit]`)
	b.do("wait for the flash", waitVisible(".flash"))
	if got := b.text(".flash"); !strings.Contains(got, "will not be delivered") {
		t.Errorf("the flash says %q", got)
	}
	if got := rows(); len(got) != 1 || got[0].Title != "Release notes due" {
		t.Errorf("after the cancel the list shows %+v", got)
	}
	if left := expect(t, a.call("GET", "/api/v1/notifications/scheduled", access, nil), 200).List(); len(left) != 1 || left[0]["title"] != "Release notes due" {
		t.Errorf("the API lists %+v", left)
	}
}
