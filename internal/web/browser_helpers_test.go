package web_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

// The browser tests drive the dashboard in a real Chromium through the
// DevTools protocol (chromedp): real cookies, real form posts, the page's
// script and its WebSocket.

const (
	// browserTestTimeout bounds a whole browser test, so that a hang fails
	// the test instead of blocking CI.
	browserTestTimeout = 90 * time.Second
	// browserStepTimeout bounds one wait on the page.
	browserStepTimeout = 20 * time.Second
)

// chromiumPath returns the browser to drive: PERCH_CHROMIUM, or chromium,
// chromium-browser or google-chrome on PATH. Without one the test skips
// (fails under PERCH_TEST_STRICT).
func chromiumPath(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("PERCH_CHROMIUM"); p != "" {
		found, err := exec.LookPath(p)
		if err != nil {
			tb.Fatalf("PERCH_CHROMIUM=%s: %v", p, err)
		}
		return found
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if found, err := exec.LookPath(name); err == nil {
			return found
		}
	}
	testenv.SkipUnlessStrict(tb, "no Chromium found (chromium, chromium-browser or google-chrome on PATH, or PERCH_CHROMIUM=/path): "+
		"install it with `apt-get install -y chromium` to run the browser tests")
	return ""
}

// liveDashboard serves a fresh site (SQLite) whose public address is the
// address of its listener, known before the server is built, so that every
// link, receiver URL and the trusted origin is the address the browser
// uses. It returns the site and that base URL.
func liveDashboard(t *testing.T) (*site, string) {
	t.Helper()
	ln := listen(t)
	base := "http://" + ln.Addr().String()
	a := newSiteOn(t, ln, storetest.New(t, store.SQLite), func(o *server.Options) { o.BaseURL = base })
	return a, base
}

// chrome is one tab of the package's headless Chromium, in a browser
// context of its own, on the dashboard at base.
type chrome struct {
	t    *testing.T
	ctx  context.Context // the tab; ends with the test's deadline
	base string
	dir  string // where screenshots go

	mu      sync.Mutex
	console []chromedp.ConsoleMessage // errors and exceptions the pages reported
}

// chromium is the package's one headless Chromium, started by the first
// browser test and stopped by TestMain once every test is done: starting a
// browser costs seconds, a browser context (a fresh profile in all but the
// process) almost nothing.
var chromium struct {
	once sync.Once
	ctx  context.Context // the browser's first tab; the browser lives as long as it
	stop func()
	err  error
}

// sharedChromium returns the package's browser, starting it (headless, no
// sandbox, no GPU, a profile of its own) on first use.
func sharedChromium(path string) (context.Context, error) {
	chromium.once.Do(func() {
		profile, err := os.MkdirTemp("", "perch-chromium-")
		if err != nil {
			chromium.err = err
			return
		}
		opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
			chromedp.ExecPath(path),
			chromedp.Headless,
			chromedp.NoSandbox, // CI runs as root
			chromedp.DisableGPU,
			chromedp.UserDataDir(profile),
			chromedp.WindowSize(int(laptopScreen.width), int(laptopScreen.height)),
		)
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(allocCtx)
		chromium.ctx = ctx
		chromium.stop = func() {
			cancel()
			cancelAlloc() // waits for the browser to exit
			os.RemoveAll(profile)
		}
		// The browser lives as long as the context of its first Run, so that
		// Run gets ctx itself, and a timer bounds the start instead.
		started := make(chan error, 1)
		go func() { started <- chromedp.Do(ctx) }()
		select {
		case err = <-started:
		case <-time.After(browserTestTimeout):
			cancel()
			err = <-started
		}
		if err != nil {
			chromium.err = fmt.Errorf("starting %s: %w", path, err)
		}
	})
	return chromium.ctx, chromium.err
}

// stopChromium stops the package's browser, if a test started it.
func stopChromium() {
	if chromium.stop != nil {
		chromium.stop()
	}
}

// newChrome opens a tab in a browser context of its own (cookies, storage
// and cache of its own, as in a fresh profile) in the package's Chromium,
// for the rest of the test, within browserTestTimeout. It skips when there
// is no Chromium.
func newChrome(t *testing.T, base string) *chrome {
	t.Helper()
	path := chromiumPath(t)
	browser, err := sharedChromium(path)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(browser, browserTestTimeout)
	tabCtx, cancelTab := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(func() {
		cancelTab() // closes the tab and disposes of its browser context
		cancel()
	})

	b := &chrome{t: t, ctx: tabCtx, base: base, dir: screenshotDir(t)}
	// Console opens the tab (the first Run of the context) and subscribes
	// before any page loads.
	messages := chromedp.Console(tabCtx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				b.mu.Lock()
				b.console = append(b.console, m)
				b.mu.Unlock()
			}
		}
	}()
	if err := chromedp.Do(tabCtx, chromedp.EmulateViewport(laptopScreen.width, laptopScreen.height)); err != nil {
		t.Fatalf("opening a tab in %s: %v", path, err)
	}
	return b
}

// screenshotDir is PERCH_SCREENSHOTS, or perch-screenshots in the system's
// temporary directory; it is kept after the test for a person to look at.
func screenshotDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("PERCH_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "perch-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// where describes the page the browser is on, for failure messages.
func (b *chrome) where() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 1500) : ""`))
	return fmt.Sprintf("page %s shows:\n%s", loc, text)
}

// do runs actions on the page, each wait bounded by browserStepTimeout, and
// fails the test with what the page shows when one fails.
func (b *chrome) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\n%s", what, err, b.where())
	}
}

// open loads the dashboard page at path and waits for sel to be visible.
func (b *chrome) open(path, sel string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.base+path), waitVisible(sel))
}

// waitVisible waits for the element sel to be visible.
func waitVisible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}

// waitFor waits until the JavaScript predicate is true on the page.
func (b *chrome) waitFor(what, predicate string) {
	b.t.Helper()
	b.do("wait for "+what, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingTimeout(browserStepTimeout)))
}

// evaluate returns the value of a JavaScript expression on the page.
func evaluate[T any](b *chrome, expression string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v\n%s", expression, err, b.where())
	}
	return v
}

// location is the address of the page.
func (b *chrome) location() string {
	b.t.Helper()
	return evaluate[string](b, `location.href`)
}

// text is the visible text of the element sel.
func (b *chrome) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		b.t.Fatalf("text of %s: %v\n%s", sel, err, b.where())
	}
	return strings.TrimSpace(s)
}

// value is the value of the form control sel.
func (b *chrome) value(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("value of %s: %v\n%s", sel, err, b.where())
	}
	return s
}

// fill types into the form fields (selector, text pairs).
func (b *chrome) fill(pairs ...string) {
	b.t.Helper()
	var steps []chromedp.Action[chromedp.Void]
	for i := 0; i+1 < len(pairs); i += 2 {
		steps = append(steps, chromedp.SendKeys(chromedp.CSS(pairs[i]), pairs[i+1]))
	}
	b.do("fill the form", steps...)
}

// paste puts text into the field sel at once, as pasting does: typing a
// long text (an identity provider's metadata) key by key takes longer than
// a step may.
func (b *chrome) paste(sel, text string) {
	b.t.Helper()
	b.do("paste into "+sel, chromedp.SetValue(chromedp.CSS(sel), text))
}

// click clicks the element sel.
func (b *chrome) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// signUp creates an account through the sign-up form and waits for the
// notifications page it lands on to be live (its WebSocket connected).
func (b *chrome) signUp(name, email, password string) {
	b.t.Helper()
	b.open("/signup", "#name")
	b.fill("#name", name, "#email", email, "#password", password)
	b.click(`form[action="/signup"] button[type="submit"]`)
	b.waitLive()
	if got, want := b.location(), b.base+"/notifications"; got != want {
		b.t.Fatalf("after sign-up the browser is on %s, want %s", got, want)
	}
}

// waitLive waits for the notifications page's WebSocket to be connected.
func (b *chrome) waitLive() {
	b.t.Helper()
	b.do("wait for the feed to be live", waitVisible(`.live[data-state="live"]`))
}

// checkPage asserts what every page must get right: one h1, and no
// template leftovers.
func (b *chrome) checkPage(name string) {
	b.t.Helper()
	type rendered struct {
		H1   int    `json:"h1"`
		Text string `json:"text"`
		HTML string `json:"html"`
	}
	got := evaluate[rendered](b, `({h1: document.querySelectorAll("h1").length, text: document.body.innerText, html: document.documentElement.outerHTML})`)
	if got.H1 != 1 {
		b.t.Errorf("%s: %d h1 elements, want exactly 1", name, got.H1)
	}
	for _, leftover := range []string{"{{", "<no value>", "&lt;no value&gt;"} {
		if strings.Contains(got.Text, leftover) || strings.Contains(got.HTML, leftover) {
			b.t.Errorf("%s: the page shows template residue %q", name, leftover)
		}
	}
}

// screen is a viewport for screenshots.
type screen struct {
	name          string
	width, height int64
	mobile        bool // emulate a phone: touch, twice the pixels
}

var (
	laptopScreen = screen{"laptop", 1440, 900, false}
	phoneScreen  = screen{"phone", 390, 844, true}
)

// screenshot writes full-page PNGs of the page as it is now, at laptop and
// at phone width (<name>-laptop.png, <name>-phone.png), and leaves the
// viewport at laptop width. The page is not reloaded, so what was shown
// once (a new token) is in both.
func (b *chrome) screenshot(name string) {
	b.t.Helper()
	for _, v := range []screen{laptopScreen, phoneScreen} {
		emulate := chromedp.EmulateViewport(v.width, v.height)
		if v.mobile {
			emulate = chromedp.EmulateViewport(v.width, v.height, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
		}
		b.do("set the viewport to "+v.name+" size", emulate)
		ctx, cancel := context.WithTimeout(b.ctx, browserStepTimeout)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			b.t.Fatalf("screenshot %s at %s size: %v", name, v.name, err)
		}
		if err := os.WriteFile(filepath.Join(b.dir, name+"-"+v.name+".png"), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	b.do("back to laptop size", chromedp.EmulateViewport(laptopScreen.width, laptopScreen.height))
}

// consoleProblems returns the errors and exceptions the pages reported.
func (b *chrome) consoleProblems() []chromedp.ConsoleMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.console)
}

// postJSON sends body as JSON to url with Go's own HTTP client, as another
// system would.
func postJSON(tb testing.TB, url, body string) *http.Response {
	tb.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { res.Body.Close() })
	return res
}
