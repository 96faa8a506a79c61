package web_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/testenv"
)

// TestDashboardInTheBrowser walks the dashboard as a new user would, in a
// real Chromium: sign up, make a webhook token, watch an event arrive live
// (no reload) and mark it read; then the other pages, with a screenshot of
// each at laptopScreen and phoneScreen width.
func TestDashboardInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	b := newChrome(t, base)
	t.Logf("screenshots: %s", b.dir)

	// Signed out, a private page sends the browser to sign in, and back.
	b.open("/notifications", "#email")
	if got, want := b.location(), base+"/signin?next=%2Fnotifications"; got != want {
		t.Errorf("signed out, /notifications went to %s, want %s", got, want)
	}
	b.checkPage("signin")
	b.screenshot("signin")

	b.open("/signup", "#name")
	b.checkPage("signup")
	b.screenshot("signup")
	const email, password = "ada.lovelace@example.com", "correct horse battery"
	b.signUp("Ada Lovelace", email, password)

	// A webhook token for an inbound sender, for me only; its URL is shown
	// once.
	b.open("/webhook-tokens", "#label")
	if s, sc := b.value("#sender"), b.value("#scope"); s != "inbound" || sc != "user" {
		t.Errorf("the new token form starts at sender %q, scope %q; want inbound, user", s, sc)
	}
	b.fill("#label", "Deploys")
	b.click(`form[action="/webhook-tokens"] button[type="submit"]`)
	b.do("wait for the new token", waitVisible("#receiver-url"))
	receiver := b.text("#receiver-url")
	if !strings.HasPrefix(receiver, base+"/webhooks/inbound?token=whk_") {
		t.Fatalf("receiver URL %q, want %s/webhooks/inbound?token=whk_…", receiver, base)
	}
	b.checkPage("webhook-tokens")
	b.screenshot("webhook-tokens")

	// The event arrives on the open page over its WebSocket: the marker set
	// on the page before the POST proves there was no reload.
	b.open("/notifications", `.live[data-state="live"]`)
	evaluate[bool](b, `window.perchNoReload = true`)
	res := postJSON(t, receiver, `{"title":"Deploy finished","message":"api v1.2.3 is live","severity":"warning","tab":"Deploys"}`)
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("POST to the receiver: %d %s", res.StatusCode, body)
	}
	b.waitFor("the event in the feed", `window.perchNoReload === true &&
		[...document.querySelectorAll("ol.feed li")].some((li) => li.querySelector(".title")?.textContent === "Deploy finished")`)
	type feedItem struct {
		ID     string `json:"id"`
		Class  string `json:"class"`
		Unread string `json:"unread"` // the count on the Deploys tab
	}
	item := evaluate[feedItem](b, `(() => {
		const li = [...document.querySelectorAll("ol.feed li")].find((li) => li.querySelector(".title").textContent === "Deploy finished");
		const tab = [...document.querySelectorAll(".tabs button")].find((b) => b.firstChild.textContent.trim() === "Deploys");
		return {id: li.dataset.id, class: li.className, unread: tab ? tab.querySelector(".count").textContent : "no Deploys tab"};
	})()`)
	classes := strings.Fields(item.Class)
	if !slices.Contains(classes, "warning") || slices.Contains(classes, "read") {
		t.Errorf("the new item has classes %q, want warning and not read", item.Class)
	}
	if item.Unread != "1" {
		t.Errorf("the Deploys tab shows %q unread, want 1", item.Unread)
	}
	b.checkPage("notifications")
	b.screenshot("notifications")

	li := `ol.feed li[data-id="` + item.ID + `"]`
	b.click(li + ` .side button`) // its only action: Mark read
	b.waitFor("the item to be read", `document.querySelector('`+li+`')?.classList.contains("read")`)
	if !evaluate[bool](b, `window.perchNoReload === true`) {
		t.Error("the notifications page reloaded")
	}
	// The page marks the item read before the server answers; the server
	// must come to agree.
	login := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": email, "password": password}), 200)
	access := login.Data()["access_token"].(string)
	testenv.Eventually(t, browserStepTimeout, func() bool {
		list := expect(t, a.call("GET", "/api/v1/notifications", access, nil), 200).List()
		if len(list) != 1 || list[0]["id"] != item.ID || list[0]["title"] != "Deploy finished" {
			t.Fatalf("the API lists %v, want the one Deploy finished notification %s", list, item.ID)
		}
		return list[0]["read"] == true
	}, "marked read in the browser, but not read on the server")

	// API tokens: the raw token is shown once.
	b.open("/api-tokens", "#label")
	b.fill("#label", "Deploy script")
	b.click(`form[action="/api-tokens"] button[type="submit"]`)
	b.do("wait for the new API token", waitVisible("#raw-api-token"))
	if tok := b.text("#raw-api-token"); !strings.HasPrefix(tok, "pat_") {
		t.Errorf("the new API token is %q, want pat_…", tok)
	}
	b.checkPage("api-tokens")
	b.screenshot("api-tokens")

	// Organisation: a team, then an invitation, through the page's forms.
	b.open("/org", "#team-name")
	b.fill("#team-name", "On call")
	b.click(`form[action="/org/teams"] button[type="submit"]`)
	b.do("wait for the new team", waitVisible(`select[id^="add-"]`))
	b.fill("#invite-email", "grace.hopper@example.com")
	b.click(`form[action="/org/invitations"] button[type="submit"]`)
	b.do("wait for the invitation link", waitVisible("#invite-link"))
	if link := b.text("#invite-link"); !strings.HasPrefix(link, base+"/invitations/accept?token=") {
		t.Errorf("invitation link %q, want %s/invitations/accept?token=…", link, base)
	}
	b.checkPage("org")
	b.screenshot("org")

	b.open("/profile", "#name")
	if got := b.value("#email"); got != email {
		t.Errorf("profile shows address %q, want %q", got, email)
	}
	b.checkPage("profile")
	b.screenshot("profile")

	b.open("/org/billing", "h1")
	b.checkPage("billing")
	b.screenshot("billing")

	checkConsole(t, b)
}

// TestDeviceSignInInTheBrowser signs the desktop app in: the app (this test)
// listens on a loopback port and starts a sign-in; the user sees on the
// dashboard what is asking and approves it; the browser brings the code to
// the app's port; the app exchanges it, with its verifier, for a session.
// Approved without the user code, the status poll gets no tokens; a second
// sign-in is approved with the code (after a wrong one is refused), and
// then the poll does.
func TestDeviceSignInInTheBrowser(t *testing.T) {
	t.Parallel()
	_, base := liveDashboard(t)
	b := newChrome(t, base)
	t.Logf("screenshots: %s", b.dir)

	// The app's loopback listener.
	type callback struct{ sessionID, code, errorCode string }
	got := make(chan callback, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		select {
		case got <- callback{q.Get("session_id"), q.Get("code"), q.Get("error")}:
		default:
		}
		io.WriteString(w, "You can close this window")
	})}
	go app.Serve(ln)
	t.Cleanup(func() { app.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	type start struct {
		SessionID       string `json:"session_id"`
		VerificationURL string `json:"verification_url"`
		UserCode        string `json:"user_code"`
	}
	// startSignIn starts a sign-in as the app does, with a fresh verifier:
	// 32 random bytes, base64url, 43 characters of the unreserved set
	// (RFC 7636 §4.1); the challenge is its S256.
	startSignIn := func() (start, string) {
		raw := make([]byte, 32)
		rand.Read(raw)
		verifier := base64.RawURLEncoding.EncodeToString(raw)
		sum := sha256.Sum256([]byte(verifier))
		challenge := base64.RawURLEncoding.EncodeToString(sum[:])
		var res struct{ Data start }
		authorize := base + "/api/v1/auth/device/authorize?" + url.Values{
			"port": {strconv.Itoa(port)}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}, "client_name": {"perch CLI on the test machine"},
		}.Encode()
		httpJSON(t, http.MethodGet, authorize, "", nil, http.StatusOK, &res)
		if res.Data.SessionID == "" || res.Data.VerificationURL != base+"/device?session_id="+url.QueryEscape(res.Data.SessionID) || len(res.Data.UserCode) != 9 {
			t.Fatalf("authorize answered %+v", res.Data)
		}
		return res.Data, verifier
	}
	waitCallback := func(sessionID string) callback {
		t.Helper()
		var cb callback
		select {
		case cb = <-got:
		case <-time.After(browserStepTimeout):
			t.Fatalf("the app's callback was not called within %s\n%s", browserStepTimeout, b.where())
		}
		if cb.sessionID != sessionID || cb.code == "" || cb.errorCode != "" {
			t.Fatalf("callback got session_id %q code %q error %q; want session %q and a code", cb.sessionID, cb.code, cb.errorCode, sessionID)
		}
		b.do("wait for the app's page", waitVisible("body"))
		if text := b.text("body"); text != "You can close this window" {
			t.Errorf("after approving, the browser shows %q, want the app's page", text)
		}
		return cb
	}
	type status struct {
		Data struct {
			Status       string `json:"status"`
			CallbackOnly bool   `json:"callback_only"`
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		} `json:"data"`
	}
	poll := func(sessionID, verifier string) status {
		var st status
		httpJSON(t, http.MethodGet, base+"/api/v1/auth/device/status/"+sessionID+"?code_verifier="+verifier, "", nil, http.StatusOK, &st)
		return st
	}
	const email = "grace.hopper@example.com"
	signedInAs := func(access string) {
		t.Helper()
		var me struct {
			Data struct {
				Email string `json:"email"`
			} `json:"data"`
		}
		httpJSON(t, http.MethodGet, base+"/api/v1/users/me", access, nil, http.StatusOK, &me)
		if me.Data.Email != email {
			t.Errorf("the app is signed in as %q, want %q", me.Data.Email, email)
		}
	}

	first, verifier := startSignIn()
	b.signUp("Grace Hopper", email, "correct horse battery")
	b.do("open the verification page", chromedp.Navigate(first.VerificationURL), waitVisible(`button[value="approve"]`))
	if who := b.text(".lead"); !strings.Contains(who, email) {
		t.Errorf("the approval page names %q, want the signed-in %s", who, email)
	}
	// The time is shown in the browser's zone (not the server's UTC), with
	// the relative time on hover.
	when := evaluate[[]string](b, `(() => { const e = document.querySelector("#device-time time"); return e ? [e.dateTime, e.textContent, e.title] : []; })()`)
	if name, ip := b.text("#device-client"), b.text("#device-ip"); name != "perch CLI on the test machine" || ip != "127.0.0.1" ||
		len(when) != 3 || when[0] == "" || when[1] == "" || strings.HasSuffix(when[1], "UTC") || when[2] == "" {
		t.Errorf("the approval page shows app %q, address %q, time %q", name, ip, when)
	}
	if page := b.text("main"); strings.Contains(page, first.UserCode) || strings.Contains(page, strings.ReplaceAll(first.UserCode, "-", "")) {
		t.Errorf("the approval page shows the user code %s", first.UserCode)
	}
	b.checkPage("device")
	b.screenshot("device")
	b.click(`button[value="approve"]`) // without the code
	cb := waitCallback(first.SessionID)

	// Approved without the code: the poll is told to wait for the callback.
	if st := poll(first.SessionID, verifier); st.Data.Status != "approved" || !st.Data.CallbackOnly || st.Data.AccessToken != "" {
		t.Fatalf("status after an approval without the code = %+v", st.Data)
	}
	var session struct {
		Data struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		} `json:"data"`
	}
	httpJSON(t, http.MethodPost, base+"/api/v1/auth/device/exchange", "",
		map[string]string{"session_id": cb.sessionID, "code": cb.code, "code_verifier": verifier}, http.StatusOK, &session)
	if session.Data.AccessToken == "" || session.Data.RefreshToken == "" {
		t.Fatalf("the exchange gave access token %q, refresh token %q", session.Data.AccessToken, session.Data.RefreshToken)
	}
	signedInAs(session.Data.AccessToken)

	// With the code: a wrong one is refused on the page, the right one lets
	// the app poll.
	second, verifier := startSignIn()
	b.do("open the verification page", chromedp.Navigate(second.VerificationURL), waitVisible("#user_code"))
	b.fill("#user_code", "ZZZZ-ZZZZ")
	b.click(`button[value="approve"]`)
	b.do("wait for the problem", waitVisible(".field.invalid .problem"))
	if got, want := b.location(), base+"/device"; got != want {
		t.Errorf("after a wrong code the browser is on %s, want %s", got, want)
	}
	b.checkPage("device with a wrong code")
	b.screenshot("device-wrong-code")
	evaluate[bool](b, `(document.querySelector("#user_code").value = "", true)`)
	b.fill("#user_code", strings.ToLower(second.UserCode))
	b.click(`button[value="approve"]`)
	waitCallback(second.SessionID)
	st := poll(second.SessionID, verifier)
	if st.Data.Status != "approved" || st.Data.CallbackOnly || st.Data.AccessToken == "" || st.Data.RefreshToken == "" {
		t.Fatalf("status after an approval with the code = %+v", st.Data)
	}
	signedInAs(st.Data.AccessToken)
	// The page that refused the wrong code came with status 422.
	checkConsole(t, b, base+"/device: error: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)")
}

// TestExpiredSignInInTheBrowser: pages never see the refresh token, so an
// expired sign-in is renewed on the way, through /session/refresh: a page
// visited goes on to itself, a form posted is posted again, and the feed
// connects.
func TestExpiredSignInInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	b := newChrome(t, base)
	b.signUp("Ada Lovelace", "ada.lovelace@example.com", "correct horse battery")

	before := evaluate[int](b, `history.length`)
	a.clock.Advance(perch.AccessTokenTTL + time.Minute)
	b.open("/profile", "#name")
	if got := b.location(); got != base+"/profile" {
		t.Errorf("an expired sign-in on the way to /profile ended on %s", got)
	}
	// The renewal took the place of the page it renewed for.
	if n := evaluate[int](b, `history.length`); n != before+1 {
		t.Errorf("the renewal left %d entries in the history, want %d", n, before+1)
	}

	b.open("/org", "#team-name")
	a.clock.Advance(perch.AccessTokenTTL + time.Minute)
	b.fill("#team-name", "On call")
	b.click(`form[action="/org/teams"] button[type="submit"]`)
	b.do("wait for the new team", waitVisible(`select[id^="add-"]`))
	if got := b.location(); got != base+"/org" {
		t.Errorf("a form posted with an expired sign-in ended on %s", got)
	}

	a.clock.Advance(perch.AccessTokenTTL + time.Minute)
	b.open("/notifications", `.live[data-state="live"]`)

	b.click(`form[action="/session/signout"] button[type="submit"]`)
	b.do("wait for the sign-in page", waitVisible("#email"))
	b.open("/profile", "#email")
	if got, want := b.location(), base+"/signin?next=%2Fprofile"; got != want {
		t.Errorf("signed out, /profile went to %s, want %s", got, want)
	}
	checkConsole(t, b)
}

// httpJSON sends a request over the network (body as JSON when not nil, as
// the bearer of token when not "") and decodes the answer, which must have
// status want, into out.
func httpJSON(tb testing.TB, method, url, token string, body any, want int, out any) {
	tb.Helper()
	var r io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			tb.Fatal(err)
		}
		r = strings.NewReader(string(j))
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		tb.Fatalf("%s %s: %d %s, want %d", method, url, res.StatusCode, raw, want)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		tb.Fatalf("%s %s: %v in %s", method, url, err, raw)
	}
}

// checkConsole fails the test for script exceptions, errors and
// Content-Security-Policy violations on Perch's pages, but for each of
// expected ("<url>: <message>") once: a form answered 400 on purpose, say.
func checkConsole(t *testing.T, b *chrome, expected ...string) {
	t.Helper()
	for _, m := range b.consoleProblems() {
		if !strings.HasPrefix(m.URL, b.base+"/") {
			continue // not Perch's page (the app's callback page, say)
		}
		if i := slices.Index(expected, fmt.Sprintf("%s: %s", m.URL, m)); i >= 0 {
			expected = slices.Delete(expected, i, i+1)
			continue
		}
		t.Errorf("browser console on %s:%d: %s", m.URL, m.Line, m)
	}
	for _, e := range expected {
		t.Errorf("browser console lacks the expected %s", e)
	}
}
