package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestFeedWithRealDataInTheBrowser feeds the notifications page what real
// senders send: a 200-character title with no space in it, a long URL, a
// message of many lines, a notification for a team. On a phone (390 px)
// and on a laptop (1280 px) the page is no wider than the screen and every
// "Mark read" button is on it; long messages are cut at 4 lines with a
// "Show more" that shows the rest; the line under each notification names
// its tab once, its sender by name and its audience ("you", the team's
// name). On the phone the header is one row, its navigation behind a menu
// button.
func TestFeedWithRealDataInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	b := newChrome(t, base)
	t.Logf("screenshots: %s", b.dir)
	const email, password = "ada.lovelace@example.com", "correct horse battery"
	b.signUp("Ada Lovelace", email, password)

	login := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": email, "password": password}), 200).Data()
	access := login["access_token"].(string)
	me := login["user"].(map[string]any)["id"].(string)
	team := expect(t, a.call("POST", "/api/v1/org/teams", access, map[string]string{"name": "On call"}), 201).Data()["id"].(string)
	expect(t, a.call("PUT", "/api/v1/org/teams/"+team+"/members/"+me, access, nil), 204)
	receiver := func(body map[string]string) string {
		t.Helper()
		return expect(t, a.call("POST", "/api/v1/webhook-tokens", access, body), 201).Data()["url"].(string)
	}
	mine := receiver(map[string]string{"label": "Mine", "sender": "inbound"})
	teams := receiver(map[string]string{"label": "On call", "sender": "inbound", "scope": "team", "team_id": team})

	longTitle := strings.Repeat("Unbroken", 25) // 200 characters, no space
	longURL := "https://ci.example.com/builds/" + strings.Repeat("a1b2c3d4e5", 40) + "?step=" + strings.Repeat("x", 100)
	lines := make([]string, 12)
	for i := range lines {
		lines[i] = "line " + string(rune('A'+i)) + " of the build log"
	}
	send := func(url string, n map[string]string) {
		t.Helper()
		body, _ := json.Marshal(n)
		if res := postJSON(t, url, string(body)); res.StatusCode != http.StatusOK {
			t.Fatalf("POST to the receiver: %d", res.StatusCode)
		}
	}
	send(teams, map[string]string{"title": "Disk almost full", "message": "db-1 is at 91%", "severity": "warning"})
	send(mine, map[string]string{"title": longTitle, "message": strings.Join(lines, "\n"), "url": longURL, "severity": "error"})
	b.open("/notifications", "ol.feed li")
	b.waitLive()
	b.waitFor("both notifications", `document.querySelectorAll("ol.feed li").length === 2`)

	// The metadata line: each part once, the sender and audience by name.
	type row struct {
		Title string   `json:"title"`
		Meta  []string `json:"meta"`
		When  string   `json:"when"` // the <time>'s tooltip
		More  bool     `json:"more"` // "Show more" is offered
	}
	rows := evaluate[[]row](b, `[...document.querySelectorAll("ol.feed li")].map((li) => ({
		title: li.querySelector(".title").textContent,
		meta: [...li.querySelectorAll(".meta > span")].map((s) => s.textContent),
		when: li.querySelector(".meta time").title,
		more: li.querySelector("button.more").checkVisibility(),
	}))`)
	want := []row{
		{Title: longTitle, Meta: []string{"error", "Inbound", "for you"}, More: true},
		{Title: "Disk almost full", Meta: []string{"warning", "Inbound", "for On call"}, More: false},
	}
	if len(rows) != len(want) {
		t.Fatalf("the feed shows %d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		if r.Title != want[i].Title || !slices.Equal(r.Meta, want[i].Meta) || r.More != want[i].More {
			t.Errorf("row %d: title %.20q…, meta %q, show more %v; want %.20q…, meta %q, show more %v",
				i, r.Title, r.Meta, r.More, want[i].Title, want[i].Meta, want[i].More)
		}
		if r.When == "" {
			t.Errorf("row %d: its time has no relative time on hover", i)
		}
	}

	// The clamp: 4 lines, then all 12 with their line breaks.
	type message struct {
		Lines  float64 `json:"lines"` // visible lines
		Button string  `json:"button"`
	}
	msg := func() message {
		return evaluate[message](b, `(() => {
			const m = document.querySelector("ol.feed li .msg");
			return {lines: Math.round(m.clientHeight / parseFloat(getComputedStyle(m).lineHeight)), button: m.nextElementSibling.textContent};
		})()`)
	}
	if got := msg(); got.Lines != 4 || got.Button != "Show more" {
		t.Errorf("the long message shows %v lines and a %q button, want 4 and Show more", got.Lines, got.Button)
	}
	b.screenshot("feed-clamped")
	b.click("ol.feed li button.more")
	if got := msg(); got.Lines != 12 || got.Button != "Show less" {
		t.Errorf("opened, the long message shows %v lines and a %q button, want 12 and Show less", got.Lines, got.Button)
	}

	// Phone and laptop: nothing wider than the screen, every Mark read
	// button on it.
	for _, v := range []screen{phoneScreen, {"laptop-1280", 1280, 800, false}} {
		b.viewport(v)
		type fit struct {
			PageWidth, ScreenWidth float64
			Buttons                [][2]float64 // left and right of each Mark read
			HeaderHeight           float64
		}
		got := evaluate[fit](b, `({
			PageWidth: document.documentElement.scrollWidth, ScreenWidth: window.innerWidth,
			Buttons: [...document.querySelectorAll("ol.feed li .side button")].map((e) => { const r = e.getBoundingClientRect(); return [r.left, r.right]; }),
			HeaderHeight: document.querySelector("header.top").getBoundingClientRect().height,
		})`)
		if got.PageWidth > got.ScreenWidth {
			t.Errorf("%s: the page is %v px wide on a %v px screen", v.name, got.PageWidth, got.ScreenWidth)
		}
		if len(got.Buttons) != 2 {
			t.Errorf("%s: %d Mark read buttons, want 2", v.name, len(got.Buttons))
		}
		for _, lr := range got.Buttons {
			if lr[0] < 0 || lr[1] > got.ScreenWidth {
				t.Errorf("%s: a Mark read button spans %v–%v px, off the %v px screen", v.name, lr[0], lr[1], got.ScreenWidth)
			}
		}
		if got.HeaderHeight > 64 {
			t.Errorf("%s: the header is %v px tall, more than one row", v.name, got.HeaderHeight)
		}
		b.shoot("feed-" + v.name)
	}

	// The phone's menu: a button that opens the navigation.
	b.viewport(phoneScreen)
	if evaluate[bool](b, `document.querySelector("#main-nav").checkVisibility()`) {
		t.Error("on a phone the navigation shows before the menu is opened")
	}
	b.click("header.top button.menu")
	b.do("wait for the menu", waitVisible(`#main-nav a[href="/org"]`))
	b.shoot("feed-menu-phone")
	b.click(`#main-nav a[href="/org"]`)
	b.do("wait for the organisation page", waitVisible("#members-title"))
	// Ada is the organisation's only owner: she is not offered Leave.
	if evaluate[bool](b, `[...document.querySelectorAll("button")].some((e) => e.textContent.trim() === "Leave")`) {
		t.Error("the sole owner is offered Leave")
	}
	b.shoot("org-phone")
	b.viewport(laptopScreen)
	b.shoot("org-laptop")
	checkConsole(t, b)
}

// viewport sets the size of the page (a phone's with touch and twice the
// pixels).
func (b *chrome) viewport(v screen) {
	b.t.Helper()
	emulate := chromedp.EmulateViewport(v.width, v.height)
	if v.mobile {
		emulate = chromedp.EmulateViewport(v.width, v.height, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
	}
	b.do("set the viewport to "+v.name+" size", emulate)
}

// shoot writes a full-page PNG of the page as it is, at its present size,
// as <name>.png.
func (b *chrome) shoot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
