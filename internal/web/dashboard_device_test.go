package web_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/apitest"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// signInBrowser signs b in to the dashboard as acc.
func signInBrowser(t *testing.T, b *browser, acc *account) {
	t.Helper()
	b.post("/signin", url.Values{"email": {acc.Email}, "password": {goodPassword}}).expect(t, 303, "/notifications")
}

// deviceApp is the desktop app's side of one sign-in.
type deviceApp = apitest.DeviceApp

// startDevice starts a sign-in the way the app does and checks the answer;
// extra are more query parameters, in pairs, and headers ("RemoteAddr" too).
func (a *site) startDevice(port int, extra ...string) *deviceApp {
	a.t.Helper()
	return apitest.StartDevice(a.t, a.call, port, extra...)
}

// approve has acc approve app's sign-in through the API, without typing
// the user code, and returns the code the callback URL carries.
func (a *site) approve(acc *account, app *deviceApp) string {
	a.t.Helper()
	return app.Approve(a.t, a.call, acc.Access, "")
}

func (a *site) exchange(app *deviceApp, code, verifier string) *response {
	return app.Exchange(a.call, code, verifier)
}

func (a *site) deviceStatus(app *deviceApp, verifier string) *response {
	return app.Status(a.call, verifier)
}

// wantSignedIn checks that d is a sign-in of acc whose tokens work.
func (a *site) wantSignedIn(d map[string]any, acc *account) {
	a.t.Helper()
	apitest.WantSignedIn(a.t, a.call, d, acc.ID)
}

// TestDashboardDevicePageShowsTheRequest: the approval page says what is
// being approved (the app's name, escaped; when; from which address) and
// asks for the code the app shows, which it never shows itself.
func TestDashboardDevicePageShowsTheRequest(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	ada := a.register("Ada")
	signInBrowser(t, b, ada)
	asked := a.clock.Now()
	app := a.startDevice(53682, "client_name", `Ada's <b>laptop</b>`, "RemoteAddr", "203.0.113.66:4000")

	p := b.get("/device?session_id="+url.QueryEscape(app.Session)).expect(t, 200, "")
	p.contains(t,
		`<dd id="device-client">Ada&#39;s &lt;b&gt;laptop&lt;/b&gt;</dd>`,
		`<dd id="device-ip" class="mono">203.0.113.66</dd>`,
		`<time datetime="`+asked.Format("2006-01-02T15:04:05Z")+`">`+asked.Format("2 Jan 2006, 15:04 UTC")+`</time>`,
		`<label for="user_code">Code shown by your app</label>`, `name="user_code"`,
		`<input type="hidden" name="session_id" value="`+app.Session+`">`,
		`action="/device"`, "Never type a code that someone sent you", emailFor("Ada"))
	for _, secret := range []string{app.UserCode, strings.ReplaceAll(app.UserCode, "-", "")} {
		if strings.Contains(p.Body, secret) {
			t.Fatalf("the approval page shows the user code %s", secret)
		}
	}

	// The default name; and once answered, no form.
	plain := a.startDevice(53683)
	b.get("/device?session_id="+plain.Session).expect(t, 200, "").contains(t, `<dd id="device-client">perch CLI</dd>`, `<dd id="device-ip" class="mono">192.0.2.1</dd>`)
	a.approve(ada, plain)
	if p := b.get("/device?session_id="+plain.Session).expect(t, 200, "").contains(t, "already approved"); strings.Contains(p.Body, `name="user_code"`) {
		t.Fatal("an answered sign-in still offers the form")
	}
	late := a.startDevice(53684)
	a.clock.Advance(perch.DeviceSessionTTL)
	b.get("/device?session_id="+late.Session).expect(t, 200, "").contains(t, "expired")

	b.get("/device").expect(t, 400, "").contains(t, "names no sign-in request")
	b.get("/device?session_id=dev_unknown").expect(t, 404, "")
}

// TestDashboardDeviceApproval answers sign-ins through the page's form:
// with the right code the app may poll; with none only the loopback
// callback completes it; a wrong code approves nothing and says so.
func TestDashboardDeviceApproval(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newSite(t, s)
		b := newBrowser(t, a.ts)
		ada := a.register("Ada")
		signInBrowser(t, b, ada)

		app := a.startDevice(53682)
		for _, code := range []string{"ZZZZ-ZZZZ", "not a code"} {
			p := b.post("/device", url.Values{"session_id": {app.Session}, "user_code": {code}, "action": {"approve"}}).expect(t, 422, "")
			p.contains(t, `class="problem"`, `value="`+code+`"`, `class="alert"`, `action="/device"`)
		}
		if st := expect(t, a.deviceStatus(app, app.Verifier), 200).Data(); st["status"] != "pending" {
			t.Fatalf("status after wrong codes = %v", st)
		}
		p := b.post("/device", url.Values{"session_id": {app.Session}, "user_code": {strings.ToLower(app.UserCode)}, "action": {"approve"}})
		p.expect(t, 303, "")
		if q := app.Callback(t, p.Location); q.Get("session_id") != app.Session || !strings.HasPrefix(q.Get("code"), perch.DeviceCodePrefix) {
			t.Fatalf("approved to %q", p.Location)
		}
		a.wantSignedIn(expect(t, a.deviceStatus(app, app.Verifier), 200).Data(), ada)

		// Without the code: to the callback, and the poll gets nothing.
		app = a.startDevice(53683)
		p = b.post("/device", url.Values{"session_id": {app.Session}, "user_code": {""}, "action": {"approve"}}).expect(t, 303, "")
		code := app.Callback(t, p.Location).Get("code")
		if st := expect(t, a.deviceStatus(app, app.Verifier), 200).Data(); st["callback_only"] != true || st["access_token"] != nil {
			t.Fatalf("status after an approval without the code = %v", st)
		}
		a.wantSignedIn(expect(t, a.exchange(app, code, app.Verifier), 200).Data(), ada)

		// Deny; an unknown action; and another site's post.
		app = a.startDevice(53684)
		b.post("/device", url.Values{"session_id": {app.Session}, "action": {"maybe"}}).expect(t, 400, "")
		b.post("/device", url.Values{"session_id": {app.Session}, "action": {"approve"}}, "Sec-Fetch-Site", "cross-site").expect(t, 403, "")
		b.post("/device", url.Values{"session_id": {app.Session}, "action": {"deny"}}).
			expect(t, 303, "http://127.0.0.1:53684/callback?error=access_denied&session_id="+app.Session)
		// Answering again shows the page with what happened.
		b.post("/device", url.Values{"session_id": {app.Session}, "action": {"approve"}}).expect(t, 409, "").contains(t, "already denied")
	})
}
