package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// adminLaptop is the laptop size of the Admin section's screenshots.
var adminLaptop = screen{"laptop", 1280, 800, false}

// shootBoth writes <name>-laptop.png (adminLaptop) and <name>-phone.png
// (phoneScreen) of the page, and leaves it at laptop size.
func (b *chrome) shootBoth(name string) {
	b.t.Helper()
	evaluate[bool](b, `(() => { window.scrollTo(0, 0); return true; })()`)
	b.viewport(phoneScreen)
	b.shoot(name + "-phone")
	b.viewport(adminLaptop)
	b.shoot(name + "-laptop")
}

// TestAdminInTheBrowser walks the Admin section as a platform admin, in a
// real Chromium: the Admin link, the Overview's charts, a feature flag
// changed through its form, and the change in the audit log; with
// screenshots of each page at laptop and phone size.
func TestAdminInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	// A week of sign-ups and notifications, for the charts to show.
	for day := range 6 {
		acct := a.register(fmt.Sprintf("User %d", day+1))
		res := expect(t, a.call("POST", "/api/v1/webhook-tokens", acct.Access, map[string]string{"label": "CI", "sender": "inbound", "scope": "user"}), 201)
		token := res.Data()["raw_token"].(string)
		for i := range 2 + 3*day {
			expect(t, a.call("POST", "/webhooks/inbound?token="+token, "", map[string]string{"title": fmt.Sprintf("Build %d", i)}), 200)
		}
		a.clock.Advance(24 * time.Hour)
	}
	ops := a.register("Ops")
	if err := a.store.GrantAdmin(t.Context(), ops.Email); err != nil {
		t.Fatal(err)
	}

	b := newChrome(t, base)
	t.Logf("screenshots: %s", b.dir)
	b.viewport(adminLaptop)
	b.open("/signin", "#email")
	b.fill("#email", ops.Email, "#password", goodPassword)
	b.click(`form[action="/signin"] button[type="submit"]`)
	b.waitLive()

	// The Admin link leads to the Overview.
	b.click(`#main-nav a[href="/admin"]`)
	b.do("wait for the charts", waitVisible("svg.chart"))
	if got := b.text("h1"); got != "Admin" {
		t.Fatalf("the Admin link led to %q", got)
	}
	if n := evaluate[int](b, `document.querySelectorAll("svg.chart rect.bar").length`); n < 4*7 {
		t.Errorf("the charts have %d bars, want at least 28", n)
	}
	b.checkPage("admin-overview")
	b.shootBoth("admin-overview")

	// A feature flag, changed through its form.
	b.click(`.subnav a[href="/admin/features"]`)
	b.do("wait for the features", waitVisible("#rollout-digest_email"))
	b.do("set digest_email's rollout",
		chromedp.SetValue(chromedp.CSS("#rollout-digest_email"), "40"),
		chromedp.SetValue(chromedp.CSS("#enabled-digest_email"), "off"))
	b.click(`#flag-digest_email button[aria-label="Save digest_email"]`)
	b.do("wait for the saved flag", waitVisible(".flash"))
	if got := b.text(".flash"); got != "digest_email is saved." {
		t.Errorf("after saving, the page says %q", got)
	}
	if got := b.text("#flag-digest_email .team-head .badge"); got != "40% of users" {
		t.Errorf("digest_email shows %q", got)
	}
	b.checkPage("admin-features")
	b.shootBoth("admin-features")

	// The change is the newest entry of the audit log.
	b.click(`.subnav a[href="/admin/audit"]`)
	b.do("wait for the audit log", waitVisible("table.audit"))
	type row struct {
		Action  string `json:"action"`
		Actor   string `json:"actor"`
		Changes string `json:"changes"`
	}
	newest := evaluate[row](b, `(() => {
		const tr = document.querySelector("table.audit tbody tr");
		return {action: tr.querySelector("code").textContent, actor: tr.querySelector('td[data-label="Actor"]').textContent.trim(),
			changes: tr.querySelector('td[data-label="Changes"]').textContent.trim()};
	})()`)
	if newest.Action != "admin.feature.updated" || newest.Actor != "admin "+ops.Email || newest.Changes != "rollout_percent: 0 → 40" {
		t.Errorf("the newest entry is %+v", newest)
	}
	b.checkPage("admin-audit")
	b.shootBoth("admin-audit")
	// Filtered to the admin's own actions, through the form.
	b.fill("#action", "admin.")
	b.click(`form.filters button[type="submit"]`)
	b.do("wait for the filtered log", waitVisible(`.filters a[href="/admin/audit"]`))
	if n := evaluate[int](b, `document.querySelectorAll("table.audit tbody tr").length`); n != 1 {
		t.Errorf("filtered to admin., the log shows %d entries, want 1", n)
	}

	b.click(`.subnav a[href="/admin/users"]`)
	b.do("wait for the users", waitVisible(`button[aria-label="Disable user.1@example.com"]`))
	b.checkPage("admin-users")
	b.shootBoth("admin-users")

	b.click(`.subnav a[href="/admin/orgs"]`)
	b.do("wait for the organisations", waitVisible("#orgs-title"))
	b.checkPage("admin-orgs")
	b.shootBoth("admin-orgs")
	b.click(`table.stack a[href^="/admin/orgs/"]`)
	b.do("wait for an organisation", waitVisible("#plan"))
	b.checkPage("admin-org")
	b.shootBoth("admin-org")

	b.click(`.subnav a[href="/admin/email"]`)
	b.do("wait for the e-mail settings", waitVisible("#host"))
	b.checkPage("admin-email")
	b.shootBoth("admin-email")
	b.click(`.subnav a[href="/admin/newsletter"]`)
	b.do("wait for the newsletter", waitVisible("#subject"))
	b.checkPage("admin-newsletter")
	b.shootBoth("admin-newsletter")

	if strings.Contains(b.location(), "/signin") {
		t.Fatal("signed out on the way")
	}
	checkConsole(t, b)
}
