package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/security"
	"github.com/chromedp/chromedp"

	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/worker"
)

// TestRichNotificationInTheBrowser: a notification with priority, tags, an
// icon, a Markdown message and actions, in the feed. The Markdown is
// rendered on the server (a <strong>, an https link opening elsewhere
// without a referrer; a javascript: link left as text, a raw <script> shown
// as the text it is), for the history and for a notification arriving over
// the WebSocket alike; the tags are emoji and chips; the view action is a
// link, and the http action is a button (TestRichNotificationActionInTheBrowser
// presses it). With PERCH_DOCS_IMAGES set, the laptop and phone
// screenshots go to docs/images/rich-notification-{laptop,phone}.png.
func TestRichNotificationInTheBrowser(t *testing.T) {
	t.Parallel()
	richNotificationInTheBrowser(t, false)
}

// richNotificationInTheBrowser is TestRichNotificationInTheBrowser; with
// run, it also presses the http action's button and checks what the page
// says the target answered, and the screenshots show that.
func richNotificationInTheBrowser(t *testing.T, run bool) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(target.Close)
	icons := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(iconPNG(t))
	}))
	icons.Config.ErrorLog = log.New(io.Discard, "", 0) // the browser's first try, before it is told to trust the certificate
	icons.StartTLS()
	t.Cleanup(icons.Close)

	ln := listen(t)
	base := "http://" + ln.Addr().String()
	s := storetest.New(t, store.SQLite)
	a := newSiteOn(t, ln, s, func(o *server.Options) {
		o.BaseURL = base
		// The http action's target is on loopback: allowed as for
		// workflow forwards in tests.
		o.Worker = worker.New(worker.Options{Store: s, AllowPrivate: true})
		// An http action's request is kept sealed.
		box, err := secrets.New(secrets.NewKey())
		if err != nil {
			t.Fatal(err)
		}
		o.Secrets = box
	})
	b := newChrome(t, base)
	// The icon's server has a certificate of the test's own.
	b.do("trust the icon server", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, security.SetIgnoreCertificateErrors, security.SetIgnoreCertificateErrorsParams{Ignore: true})
		return err
	}))
	const email, password = "grace.hopper@example.com", "correct horse battery"
	b.signUp("Grace Hopper", email, password)
	login := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": email, "password": password}), 200).Data()
	receiver := expect(t, a.call("POST", "/api/v1/webhook-tokens", login["access_token"].(string),
		map[string]string{"label": "Alerts", "sender": "inbound"}), 201).Data()["url"].(string)
	send := func(n map[string]any) {
		t.Helper()
		body, _ := json.Marshal(n)
		if res := postJSON(t, receiver, string(body)); res.StatusCode != http.StatusOK {
			t.Fatalf("POST to the receiver: %d", res.StatusCode)
		}
	}
	message := strings.Join([]string{
		"Error rate **7.2%** on `checkout-api` (threshold 5%).",
		"",
		"- p95 latency 2.4 s",
		"- 3 of 12 pods restarting",
		"",
		"See the [runbook](https://runbooks.example.com/checkout) or [this](javascript:alert(1)).",
		"",
		"<script>alert(1)</script>",
	}, "\n")
	rich := map[string]any{
		"tab": "Incidents", "title": "Checkout API error rate above 5%", "message": message, "markdown": true,
		"severity": "error", "priority": "urgent", "tags": []string{"rotating_light", "prod", "checkout"},
		"icon": icons.URL + "/checkout.png",
		"actions": []map[string]any{
			{"type": "view", "label": "Open dashboard", "url": "https://grafana.example.com/d/checkout"},
			{"type": "http", "label": "Roll back", "url": target.URL + "/rollback", "method": "POST", "body": `{"service":"checkout"}`},
		},
	}
	send(map[string]any{"tab": "Code", "title": "perch#43 merged", "message": "Rich notifications", "priority": "low", "tags": []string{"tada", "release"}})
	send(rich)
	b.open("/notifications", "ol.feed > li")
	b.waitLive()
	b.waitFor("both notifications, the Markdown rendered", `document.querySelectorAll("ol.feed > li").length === 2 && document.querySelector("ol.feed > li .msg.md strong") !== null`)

	type shown struct {
		Title, Badge, Chips, Msg string
		Strong                   string
		Links                    []string // hrefs in the message
		LinkRel, LinkTarget      string
		Scripts                  int // <script> elements in the message
		Icon                     bool
		IconPolicy               string
		View, ViewRel            string
		Buttons                  []string
		Muted                    bool // the low-priority one
	}
	check := func(what, title string) shown {
		t.Helper()
		got := evaluate[shown](b, `(() => {
			const li = document.querySelector("ol.feed > li");
			const m = li.querySelector(".msg");
			const link = m.querySelector("a");
			const icon = li.querySelector("img.icon");
			const view = li.querySelector(".rich-actions a");
			return {
				Title: li.querySelector(".title").textContent, Badge: li.querySelector(".badge.priority")?.textContent || "",
				Chips: [...li.querySelectorAll(".chip")].map((c) => c.textContent).join(","), Msg: m.textContent,
				Strong: m.querySelector("strong")?.textContent || "",
				Links: [...m.querySelectorAll("a")].map((a) => a.getAttribute("href")),
				LinkRel: link?.rel || "", LinkTarget: link?.target || "",
				Scripts: m.querySelectorAll("script").length,
				Icon: Boolean(icon && icon.complete && icon.naturalWidth > 0), IconPolicy: icon?.referrerPolicy || "",
				View: view?.href || "", ViewRel: view?.rel || "",
				Buttons: [...li.querySelectorAll(".rich-actions button")].map((e) => e.textContent),
				Muted: getComputedStyle(document.querySelector("ol.feed > li:last-child .body")).opacity < 1,
			};
		})()`)
		switch {
		case got.Title != "🚨 "+title || got.Badge != "Urgent" || got.Chips != "prod,checkout":
			t.Errorf("%s: title %q, badge %q, chips %q", what, got.Title, got.Badge, got.Chips)
		case got.Strong != "7.2%" || len(got.Links) != 1 || got.Links[0] != "https://runbooks.example.com/checkout":
			t.Errorf("%s: strong %q, links %q (want only the runbook's)", what, got.Strong, got.Links)
		case !strings.Contains(got.LinkRel, "noreferrer") || got.LinkTarget != "_blank":
			t.Errorf("%s: the runbook link has rel %q, target %q", what, got.LinkRel, got.LinkTarget)
		case got.Scripts != 0 || !strings.Contains(got.Msg, "<script>alert(1)</script>") || !strings.Contains(got.Msg, "this"):
			t.Errorf("%s: %d scripts; message text %q", what, got.Scripts, got.Msg)
		case got.View != "https://grafana.example.com/d/checkout" || got.ViewRel != "noopener noreferrer":
			t.Errorf("%s: view action %q rel %q", what, got.View, got.ViewRel)
		case len(got.Buttons) != 1 || got.Buttons[0] != "Roll back":
			t.Errorf("%s: action buttons %q, want Roll back", what, got.Buttons)
		case got.IconPolicy != "no-referrer" || !got.Muted:
			t.Errorf("%s: icon referrer policy %q; low priority muted: %v", what, got.IconPolicy, got.Muted)
		}
		return got
	}
	b.waitFor("the icon", `document.querySelector("ol.feed > li img.icon")?.naturalWidth > 0`)
	check("from the history", "Checkout API error rate above 5%")

	if run {
		// The http action: run on the server, the target's answer shown.
		b.click("ol.feed > li .rich-actions button")
		b.waitFor("the outcome", `document.querySelector("ol.feed > li .rich-actions .outcome") !== null`)
		if got := b.text("ol.feed > li .rich-actions .outcome"); got != "Done (202)" || hits.Load() != 1 {
			t.Errorf("outcome %q after %d requests to the target, want Done (202) after 1", got, hits.Load())
		}
	}
	b.click("ol.feed > li button.more") // the whole message, for the screenshot
	shoot(t, b, "rich-notification")

	// The same notification arriving live: its Markdown fetched rendered.
	rich["title"] = "Checkout API error rate above 5% again"
	send(rich)
	b.waitFor("the live notification, the Markdown rendered", `document.querySelectorAll("ol.feed > li").length === 3 &&
		document.querySelector("ol.feed > li .title").textContent.includes("again") && document.querySelector("ol.feed > li:first-child .msg.md strong") !== null`)
	check("live", "Checkout API error rate above 5% again")
	checkConsole(t, b)
}

// shoot takes the page at laptop (1280) and phone (390) widths, as
// <name>-laptop.png and <name>-phone.png, into docs/images when
// PERCH_DOCS_IMAGES is set, else beside the other screenshots.
func shoot(t *testing.T, b *chrome, name string) {
	t.Helper()
	dir := b.dir
	if os.Getenv("PERCH_DOCS_IMAGES") != "" {
		dir = filepath.Join("..", "..", "docs", "images")
	}
	for _, v := range []screen{{"laptop", 1280, 800, false}, phoneScreen} {
		b.viewport(v)
		ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			t.Fatalf("screenshot %s at %s size: %v", name, v.name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+"-"+v.name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.viewport(laptopScreen)
}

// iconPNG is a sender's icon: a rounded orange square with a white bar.
func iconPNG(tb testing.TB) []byte {
	tb.Helper()
	const size = 64
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		for x := range size {
			c := color.RGBA{0xf0, 0x6a, 0x1f, 0xff}
			if y > 26 && y < 38 && x > 14 && x < 50 {
				c = color.RGBA{0xff, 0xff, 0xff, 0xff}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}
