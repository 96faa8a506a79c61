package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
)

// TestAPITokensPageInTheBrowser makes API tokens on the dashboard in
// Chromium, with an expiry and scopes: the new token says what it may do,
// the date field shows only with "On a date…", and the list says each
// token's scopes and when it ends ("in 30 days", "expired", "never"); the
// page fits a phone and a laptop.
func TestAPITokensPageInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	b := newChrome(t, base)
	b.signUp("Ada Lovelace", "ada@example.com", goodPassword)
	b.open("/api-tokens", "#label")
	if evaluate[bool](b, `document.getElementById("expires_on").checkVisibility()`) {
		t.Error("the date field shows while the expiry is Never")
	}

	// Thirty days, read and send.
	b.fill("#label", "Deploy script")
	b.do("pick 30 days", chromedp.SetValue(chromedp.CSS("#expiry"), "30"))
	b.click(`input[name=scopes][value=send]`)
	b.click(`input[name=scopes][value=read]`)
	b.makeToken("Deploy script")
	if got := b.text("#created-title + p"); !strings.Contains(got, "It may read and send; it expires in 30 days.") {
		t.Errorf("the new token's note says %q", got)
	}

	// A date of one's own: the field shows once it is chosen.
	b.fill("#label", "Wall screen")
	b.do("pick a date", chromedp.SetValue(chromedp.CSS("#expiry"), "date"))
	evaluate[bool](b, `document.getElementById("expiry").dispatchEvent(new Event("change"))`)
	if !evaluate[bool](b, `document.getElementById("expires_on").checkVisibility()`) {
		t.Error("the date field is hidden with On a date…")
	}
	onDate := a.clock.Now().AddDate(1, 0, 0).UTC().Truncate(24 * time.Hour)
	on := onDate.Format(time.DateOnly)
	b.do("type the date", chromedp.SetValue(chromedp.CSS("#expires_on"), on))
	b.click(`input[name=scopes][value=read]`)
	b.makeToken("Wall screen")

	// One without limits, and one that has expired (made in the store: the
	// API refuses an expiry already past).
	b.fill("#label", "Laptop")
	b.makeToken("Laptop")
	u, _, err := a.store.UserCredentials(t.Context(), "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	past := a.clock.Now().Add(-time.Hour)
	raw, hash := auth.NewToken(perch.APITokenPrefix)
	if _, err := a.store.CreateLimitedAPIToken(t.Context(), u.ID, "Old CI job", auth.DisplayPrefix(raw), hash,
		perch.APITokenLimits{ExpiresAt: &past, Scopes: perch.TokenScopes}); err != nil {
		t.Fatal(err)
	}
	b.open("/api-tokens", "#list-title")
	type row struct{ Label, May, Expires string }
	rows := evaluate[[]row](b, `[...document.querySelectorAll("section[aria-labelledby=list-title] tbody tr")].map((tr) => ({
		Label: tr.querySelector("input[name=label]").value,
		May: tr.querySelector(".token-may").innerText.trim(),
		Expires: tr.querySelector(".token-expiry").innerText.trim()}))`)
	want := map[string]row{
		"Deploy script": {"Deploy script", "read and send", "in 30 days"},
		"Wall screen":   {"Wall screen", "read", fmt.Sprintf("in %d days", int(onDate.Sub(a.clock.Now())/(24*time.Hour)))},
		"Laptop":        {"Laptop", "everything", "never"},
		"Old CI job":    {"Old CI job", "read, send and manage", "expired"},
	}
	if len(rows) != len(want) {
		t.Fatalf("the list shows %v", rows)
	}
	for _, r := range rows {
		if w := want[r.Label]; r != w {
			t.Errorf("the list shows %+v, want %+v", r, want[r.Label])
		}
	}
	b.checkPage("apitokens")
	b.fits("apitokens")

	// A date in the past comes back with the problem and the ticks kept.
	b.fill("#label", "Yesterday")
	b.do("pick a date", chromedp.SetValue(chromedp.CSS("#expiry"), "date"))
	evaluate[bool](b, `document.getElementById("expiry").dispatchEvent(new Event("change"))`)
	evaluate[bool](b, `(document.getElementById("expires_on").removeAttribute("min"), true)`) // as a browser without date checks
	b.do("type a past date", chromedp.SetValue(chromedp.CSS("#expires_on"), "2020-01-01"))
	b.click(`input[name=scopes][value=manage]`)
	b.click(`form[action="/api-tokens"] button[type="submit"]`)
	b.do("wait for the problem", waitVisible(".invalid .problem"))
	if got := b.text(".invalid .problem"); got != "must be in the future" {
		t.Errorf("the form says %q", got)
	}
	if !evaluate[bool](b, `document.querySelector("input[name=scopes][value=manage]").checked`) {
		t.Error("the ticked scope is not kept")
	}
	checkConsole(t, b, base+"/api-tokens: error: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)")
}

// makeToken sends the form and waits for the page that shows the new
// token, which it checks is labelled label. The token shown before, if
// any, is taken off the page first, so that only the new page's counts.
func (b *chrome) makeToken(label string) {
	b.t.Helper()
	evaluate[bool](b, `(document.querySelector("section.secret")?.remove(), true)`)
	b.click(`form[action="/api-tokens"] button[type="submit"]`)
	b.do("wait for the new token "+label, waitVisible("#raw-api-token"))
	if got := b.text("#created-title"); got != "“"+label+"” is ready" {
		b.t.Errorf("after making %s the page says %q", label, got)
	}
}
