package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestSetupLinkInTheBrowser follows the link perch serve prints on a server
// with no platform admin, in Chromium, signed out: the page keeps the code
// (out of the address bar) through the sign-up, asks the new account to
// confirm, and leads to the Admin section; the feed says where the link is
// until then.
func TestSetupLinkInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	link, _, err := a.srv.SetupLink(t.Context())
	if err != nil || !strings.HasPrefix(link, base+"/setup#code=pst_") {
		t.Fatalf("setup link %q (%v)", link, err)
	}

	b := newChrome(t, base)
	b.do("open the setup link", chromedp.Navigate(link), waitVisible("#setup-signup"))
	if got := b.location(); got != base+"/setup" {
		t.Errorf("the address bar shows %s; want the code gone from it", got)
	}
	b.checkPage("setup-signed-out")
	b.fits("setup-signed-out")

	b.click("#setup-signup")
	b.do("wait for the sign-up form", waitVisible("#name"))
	b.fill("#name", "Ada Lovelace-Byron of a rather long name", "#email", "ada.lovelace.byron.with.a.long.address@example.com", "#password", goodPassword)
	b.click(`form[action="/signup"] button[type="submit"]`)
	b.do("wait for the confirmation", waitVisible("#setup-who"))
	if got := b.text("#setup-who"); got != "Make Ada Lovelace-Byron of a rather long name (ada.lovelace.byron.with.a.long.address@example.com) the platform admin of this server?" {
		t.Errorf("the page asks %q", got)
	}
	if code := evaluate[string](b, `document.getElementById("setup-code").value`); !strings.HasSuffix(link, "#code="+code) {
		t.Fatalf("the form holds the code %q, not the link's", code)
	}
	if evaluate[bool](b, `document.getElementById("setup-missing").checkVisibility()`) {
		t.Error("the page says the code is missing")
	}
	b.checkPage("setup-confirm")
	b.fits("setup-confirm")

	// The feed says the server has no admin yet, and where the link is.
	b.open("/notifications", "#setup-notice")
	if got := b.text("#setup-notice"); !strings.Contains(got, "journalctl -u perch") || !strings.Contains(got, "perch admin grant EMAIL") {
		t.Errorf("the notice says %q", got)
	}
	b.fits("setup-notice")

	// Back on the page, the code kept in the tab is still there: confirm.
	b.open("/setup", "#setup-who")
	b.click(`#setup-form button[type="submit"]`)
	b.do("wait for the Admin section", waitVisible(".subnav"))
	if got := b.location(); got != base+"/admin" {
		t.Errorf("after confirming, the browser is on %s", got)
	}
	if got := b.text(".flash"); got != "You are now the platform admin of this server." {
		t.Errorf("the Admin section says %q", got)
	}
	if evaluate[string](b, `sessionStorage.getItem("perch-setup-code") || ""`) != "" {
		t.Error("the code is still kept in the tab")
	}
	b.open("/notifications", `#main-nav a[href="/admin"]`)
	if evaluate[bool](b, `document.getElementById("setup-notice") !== null`) {
		t.Error("with an admin, the feed still says the server has none")
	}
	checkConsole(t, b)
}

// TestSetupPageWithoutTheCode: opened without the link's fragment, the page
// says to open the whole link.
func TestSetupPageWithoutTheCodeInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	ada := a.register("Ada")
	b := newChrome(t, base)
	b.open("/signin", "#email")
	b.fill("#email", ada.Email, "#password", goodPassword)
	b.click(`form[action="/signin"] button[type="submit"]`)
	b.waitLive()
	b.open("/setup", "#setup-missing")
	if got := b.text("#setup-missing"); !strings.Contains(got, "open that link again") {
		t.Errorf("the page says %q", got)
	}
	checkConsole(t, b)
}
