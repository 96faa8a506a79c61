package web_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/billing"
	"github.com/perch-dev/perch/internal/billing/paddlefake"
	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// The pages a new user meets in their first minutes, in Chromium, each
// checked to fit a phone (390 px) and a laptop (1280 px) with screenshots
// of both: the billing page of a server without billing, the marketplace
// after an install, an invitation and its sign-up, the webhook list, the
// API description and the single sign-on page.

// fits checks that the page is no wider than the screen, at phone width
// and at 1280 px (scrollWidth <= innerWidth, and innerWidth the screen's:
// a phone zooms out to show a page wider than itself), and writes
// <name>-phone.png and <name>-laptop.png, the whole page, or its top when
// it is too long for one image; it leaves the page at laptop size. A page
// too wide names the elements that reach past the screen's edge.
func (b *chrome) fits(name string) {
	b.t.Helper()
	type fit struct {
		PageWidth, ScreenWidth, PageHeight float64
		Past                               []string // elements that reach past the screen's right edge
	}
	for _, v := range []screen{phoneScreen, adminLaptop} {
		b.viewport(v)
		got := evaluate[fit](b, fmt.Sprintf(`(() => {
			const past = [...document.querySelectorAll("body *")]
				.filter((e) => e.getBoundingClientRect().right > %d + 0.5)
				.map((e) => {
					const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") +
						(typeof e.className === "string" && e.className ? "." + e.className.trim().split(/\s+/).join(".") : "");
					return name(e.parentElement) + " > " + name(e) + " (" + Math.round(e.getBoundingClientRect().right) + " px)";
				});
			return {PageWidth: document.documentElement.scrollWidth, ScreenWidth: window.innerWidth,
				PageHeight: document.documentElement.scrollHeight, Past: past.slice(0, 8)};
		})()`, v.width))
		if got.PageWidth > got.ScreenWidth || got.ScreenWidth != float64(v.width) {
			b.t.Errorf("%s at %s size: the page is %v px wide on a %v px screen (the screen is %d px); past its edge: %s",
				name, v.name, got.PageWidth, got.ScreenWidth, v.width, strings.Join(got.Past, ", "))
		}
		if got.PageHeight > 6000 {
			b.shootScreen(name + "-" + v.name)
		} else {
			b.shoot(name + "-" + v.name)
		}
	}
	b.viewport(laptopScreen)
}

// shootScreen writes a PNG of what the screen shows now, as <name>.png.
func (b *chrome) shootScreen(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// TestBillingWithoutBillingInTheBrowser: on a server without a payment
// provider, where trials never end, the billing page names the plan and
// counts no trial down; a pending invitation's seat is counted in words
// that agree with the number.
func TestBillingWithoutBillingInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	b := newChrome(t, base)
	t.Logf("screenshots: %s", b.dir)
	b.signUp("Olive Owner", emailFor("Olive Owner"), goodPassword)
	olive := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": emailFor("Olive Owner"), "password": goodPassword}), 200).Data()
	expect(t, a.call("POST", "/api/v1/org/invitations", olive["access_token"].(string), map[string]string{"email": "grace@example.com"}), 201)

	b.open("/org/billing", "#billing-facts")
	facts := b.text("#billing-facts")
	for _, wrong := range []string{"Trial", "days left", "trialing"} {
		if strings.Contains(facts, wrong) {
			t.Errorf("with billing off the page says %q:\n%s", wrong, facts)
		}
	}
	if got := b.text("#plan-set-by-admin"); got != "Set by a platform admin; it does not expire" {
		t.Errorf("the plan's status reads %q", got)
	}
	if got := b.text("#seats"); got != "1 of 25 used, 1 more held for a pending invitation" {
		t.Errorf("the seats read %q", got)
	}
	if evaluate[bool](b, `!!document.querySelector("#billing-status")`) {
		t.Error("with billing off the page shows a subscription status badge")
	}
	b.checkPage("billing-off")
	b.fits("billing-off")
	checkConsole(t, b)
}

// TestMarketplaceInstallInTheBrowser: a workflow installed from the
// marketplace starts switched off, and the marketplace says so, with a
// switch that turns it on in one click.
func TestMarketplaceInstallInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	featuresOn(t, a.store, "workflows", "marketplace")
	if err := a.srv.SeedStarters(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := newChrome(t, base)
	t.Logf("screenshots: %s", b.dir)
	b.signUp("Olive Owner", emailFor("Olive Owner"), goodPassword)

	b.open("/marketplace", "#market-q")
	b.click(`button[aria-label="Install Digest GitHub pushes every 15 minutes"]`)
	b.do("wait for the notice", waitVisible("#installed"))
	if got := b.text("#installed-title"); got != "“Digest GitHub pushes every 15 minutes” is installed, and off" {
		t.Errorf("after installing, the marketplace says %q", got)
	}
	b.checkPage("marketplace-installed")
	b.fits("marketplace-installed")
	b.click("#switch-on")
	b.do("wait for the workflows", waitVisible(".flash"))
	if got := b.text(".flash"); got != "The workflow is on." {
		t.Errorf("after switching it on, the page says %q", got)
	}
	if got := evaluate[string](b, `document.querySelector("button.switch").getAttribute("aria-checked")`); got != "true" {
		t.Errorf("the installed workflow's switch is aria-checked=%q, want true", got)
	}

	// One that forwards: the marketplace never passes on where to, so the
	// notice asks for it rather than offering a switch that cannot work.
	b.open("/marketplace", "#market-q")
	b.click(`button[aria-label="Install Forward errors to a chat webhook"]`)
	b.do("wait for the notice", waitVisible("#installed"))
	if evaluate[bool](b, `!!document.querySelector("#switch-on")`) {
		t.Error("a copy without its forward URL is offered a switch")
	}
	if got := b.text("#open-installed"); got != "Fill in its targets" {
		t.Errorf("the notice's link reads %q", got)
	}
	checkConsole(t, b)
}

// TestInvitationInTheBrowser: an invitation link's page says who invites
// to which organisation as what, and its sign-up has the invited address
// filled in, read-only; the new member lands in the organisation.
func TestInvitationInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	olive := a.register("Olive Owner")
	expect(t, a.call("PATCH", "/api/v1/org", olive.Access, map[string]string{"name": "Acme Ops"}), 200)
	inv := expect(t, a.call("POST", "/api/v1/org/invitations", olive.Access, map[string]string{"email": "grace@example.com", "role": "admin"}), 201).Data()
	link, err := url.Parse(inv["url"].(string))
	if err != nil {
		t.Fatal(err)
	}

	b := newChrome(t, base)
	t.Logf("screenshots: %s", b.dir)
	b.open(link.RequestURI(), "#invited-by")
	if got := b.text("#invited-by"); got != "Olive Owner invited you to join Acme Ops on Perch as an admin." {
		t.Errorf("the invitation says %q", got)
	}
	b.checkPage("invitation")
	b.fits("invitation")
	b.click("#invitation-signup")
	b.do("wait for the sign-up form", waitVisible("#name"))
	if got, readOnly := b.value("#email"), evaluate[bool](b, `document.querySelector("#email").readOnly`); got != "grace@example.com" || !readOnly {
		t.Errorf("the sign-up's address is %q (read-only %v), want grace@example.com, read-only", got, readOnly)
	}
	b.checkPage("signup-invited")
	b.fits("signup-invited")
	b.fill("#name", "Grace Hopper", "#password", goodPassword)
	b.click(`form[action="/signup"] button[type="submit"]`)
	b.waitLive()
	b.open("/org", "h1")
	if got := b.text("h1"); got != "Acme Ops" {
		t.Errorf("after joining, the organisation page is %q", got)
	}
	checkConsole(t, b)
}

// TestWebhookListInTheBrowser: the webhook list names each token's sender
// as people know it (GitHub), never the contract's stand-in (code-host).
func TestWebhookListInTheBrowser(t *testing.T) {
	t.Parallel()
	_, base := liveDashboard(t)
	b := newChrome(t, base)
	t.Logf("screenshots: %s", b.dir)
	b.signUp("Olive Owner", emailFor("Olive Owner"), goodPassword)
	b.open("/webhook-tokens", "#label")
	b.fill("#label", "Our repositories")
	b.choose("#sender", "GitHub")
	b.click(`form[action="/webhook-tokens"] button[type="submit"]`)
	b.do("wait for the new token", waitVisible("#receiver-url"))
	if got := b.text("#receiver-url"); !strings.HasPrefix(got, base+"/webhooks/github?token=whk_") {
		t.Errorf("the receiver URL is %q, want %s/webhooks/github?token=whk_…", got, base)
	}
	if got := b.text(`td[data-label="Sender"]`); got != "GitHub" {
		t.Errorf("the list's sender reads %q, want GitHub", got)
	}
	b.checkPage("webhooks")
	b.fits("webhooks")
	checkConsole(t, b)
}

// TestAPIDocsInTheBrowser: the API description has the site's icon, a way
// back to the dashboard, and fits a phone.
func TestAPIDocsInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	b := newChrome(t, base)
	t.Logf("screenshots: %s", b.dir)
	b.signUp("Olive Owner", emailFor("Olive Owner"), goodPassword)
	b.open("/docs/api", "#back-to-dashboard")
	icon := evaluate[string](b, `(document.querySelector('link[rel="icon"]') || {}).href || ""`)
	if icon != base+"/assets/perch.svg" {
		t.Errorf("the page's icon is %q, want %s/assets/perch.svg", icon, base)
	} else if res := a.call("GET", "/assets/perch.svg", "", nil); res.Status != 200 {
		t.Errorf("the icon answers %d", res.Status)
	}
	b.checkPage("apidocs")
	b.fits("apidocs")
	b.click("#back-to-dashboard")
	b.waitLive()
	checkConsole(t, b)
}

// TestSingleSignOnPageFitsAPhone: the single sign-on page, empty and with
// an identity provider's settings saved, fits a phone.
func TestSingleSignOnPageFitsAPhone(t *testing.T) {
	t.Parallel()
	e := newSSOSite(t, storetest.New(t, store.SQLite))
	b := newChrome(t, e.base)
	t.Logf("screenshots: %s", b.dir)
	b.signUp("Olive Owner", emailFor("Olive Owner"), goodPassword)
	b.open("/org/sso", "#sp-values")
	b.fits("org-sso-empty")
	b.paste("#idp_metadata_xml", e.idp.Metadata())
	b.click(`input[name="enabled"]`)
	b.click(`form[action="/org/sso"] button[type="submit"]`)
	b.do("wait for the saved settings", waitVisible(".flash"))
	b.fits("org-sso")
	checkConsole(t, b)
}

// TestBillingSeatsInTheBrowser: with billing on, the billing page of an
// organisation whose payment is past due shows the seats its subscription
// bills and sends it to the portal rather than to another checkout; it
// fits a phone and a laptop.
func TestBillingSeatsInTheBrowser(t *testing.T) {
	t.Parallel()
	fake := paddlefake.Start(t, "pdl_test_key", "pri_team")
	ln := listen(t)
	base := "http://" + ln.Addr().String()
	s := storetest.New(t, store.SQLite)
	a := newSiteOn(t, ln, s, func(o *server.Options) {
		o.BaseURL = base
		o.Billing.Provider = billing.NewPaddle("pdl_test_key", fake.URL(), billing.Prices{"team": "pri_team"}, nil)
		o.Billing.PaddleWebhookSecret = "pdl_ntfset_test"
		o.Billing.PricePlans = map[string]string{"pri_team": "team"}
	})
	b := newChrome(t, base)
	t.Logf("screenshots: %s", b.dir)
	b.signUp("Olive Owner", emailFor("Olive Owner"), goodPassword)
	olive, _, err := s.UserCredentials(t.Context(), emailFor("Olive Owner"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordCheckout(t.Context(), perch.BillingPaddle, "txn_01hv8wptq8987qeep44cyrewp9", olive.OrgID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyBillingEvent(t.Context(), perch.BillingEvent{Provider: perch.BillingPaddle, ID: "evt_1", OccurredAt: a.clock.Now(),
		CheckoutID: "txn_01hv8wptq8987qeep44cyrewp9", CustomerID: "ctm_01hv8x29kz0t586xy6zn1a62ny",
		SubscriptionID: "sub_01hv8y5ehszzq0yv20ttx3166y", Status: perch.PlanPastDue, Seats: new(1)}, "team"); err != nil {
		t.Fatal(err)
	}

	b.open("/org/billing", "#billing-facts")
	if got := b.text("#seats-billed"); got != "1 seat: the enabled members, updated with proration as people join and leave" {
		t.Errorf("the seats billed read %q", got)
	}
	if got := b.text("#past-due"); !strings.Contains(got, "billing portal") {
		t.Errorf("the past-due notice reads %q", got)
	}
	if evaluate[bool](b, `!!document.querySelector('form[action="/org/billing/checkout"]')`) {
		t.Error("a checkout is offered while a payment is past due")
	}
	if !evaluate[bool](b, `!!document.querySelector("#portal")`) {
		t.Error("no way to the portal while a payment is past due")
	}
	b.checkPage("billing-past-due")
	b.fits("billing-past-due")
	checkConsole(t, b)
}
