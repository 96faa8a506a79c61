package web_test

import (
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// signInBrowser signs b in to the dashboard as acc.
func signInBrowser(t *testing.T, b *browser, acc *account) {
	t.Helper()
	b.post("/signin", url.Values{"email": {acc.Email}, "password": {goodPassword}}).expect(t, 303, "/notifications")
}

// deviceApp is the desktop app's side of one sign-in.
type deviceApp struct {
	port     int
	verifier string
	session  string
	userCode string // BCDF-GHJK, as the app shows it
}

// userCodeForm is the form of a user code as the server hands it out.
var userCodeForm = regexp.MustCompile(`^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$`)

// startDevice starts a sign-in the way the app does and checks the answer;
// extra are more query parameters, in pairs, and headers ("RemoteAddr" too).
func (a *site) startDevice(port int, extra ...string) *deviceApp {
	a.t.Helper()
	raw := make([]byte, 32)
	rand.Read(raw)
	app := &deviceApp{port: port, verifier: base64.RawURLEncoding.EncodeToString(raw)}
	q := url.Values{"port": {strconv.Itoa(port)}, "code_challenge": {perch.S256Challenge(app.verifier)}, "code_challenge_method": {"S256"}}
	headers := []string{"Accept", "application/json"}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i] == "RemoteAddr" {
			headers = append(headers, extra[i], extra[i+1])
		} else {
			q.Set(extra[i], extra[i+1])
		}
	}
	d := expect(a.t, a.call("GET", "/api/v1/auth/device/authorize?"+q.Encode(), "", nil, headers...), 200).Data()
	app.session, _ = d["session_id"].(string)
	app.userCode, _ = d["user_code"].(string)
	if !strings.HasPrefix(app.session, perch.DeviceSessionPrefix) {
		a.t.Fatalf("session_id = %v", d["session_id"])
	}
	if d["verification_url"] != "http://perch.test/device?session_id="+app.session || d["expires_in"] != 600.0 || !userCodeForm.MatchString(app.userCode) {
		a.t.Fatalf("authorize = %v", d)
	}
	return app
}

// approve has acc approve app's sign-in through the API, without typing
// the user code, and returns the code the callback URL carries.
func (a *site) approve(acc *account, app *deviceApp) string {
	a.t.Helper()
	d := expect(a.t, a.call("POST", "/api/v1/auth/device/complete", acc.Access, map[string]string{"session_id": app.session}), 200).Data()
	if d["status"] != "approved" || d["user_code_confirmed"] != false {
		a.t.Fatalf("complete = %v", d)
	}
	q := app.callback(a.t, d["redirect_url"].(string))
	if q.Get("session_id") != app.session || !strings.HasPrefix(q.Get("code"), perch.DeviceCodePrefix) {
		a.t.Fatalf("callback query = %v", q)
	}
	return q.Get("code")
}

// callback checks that link is app's loopback callback and returns its query.
func (app *deviceApp) callback(tb testing.TB, link string) url.Values {
	tb.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Scheme != "http" || u.Host != "127.0.0.1:"+strconv.Itoa(app.port) || u.Path != "/callback" {
		tb.Fatalf("redirect %q is not http://127.0.0.1:%d/callback", link, app.port)
	}
	return u.Query()
}

func (a *site) exchange(app *deviceApp, code, verifier string) *response {
	a.t.Helper()
	return a.call("POST", "/api/v1/auth/device/exchange", "", map[string]string{"session_id": app.session, "code": code, "code_verifier": verifier})
}

func (a *site) deviceStatus(app *deviceApp, verifier string) *response {
	a.t.Helper()
	return a.call("GET", "/api/v1/auth/device/status/"+app.session+"?code_verifier="+url.QueryEscape(verifier), "", nil)
}

// wantSignedIn checks that d is a sign-in of acc whose tokens work.
func (a *site) wantSignedIn(d map[string]any, acc *account) {
	a.t.Helper()
	u, _ := d["user"].(map[string]any)
	access, _ := d["access_token"].(string)
	refresh, _ := d["refresh_token"].(string)
	if u["id"] != acc.ID || !strings.HasPrefix(access, perch.AccessTokenPrefix) || !strings.HasPrefix(refresh, perch.RefreshTokenPrefix) ||
		d["token_type"] != "Bearer" || d["expires_in"] != 900.0 {
		a.t.Fatalf("sign-in = %v", d)
	}
	if me := expect(a.t, a.call("GET", "/api/v1/users/me", access, nil), 200); me.Data()["id"] != acc.ID {
		a.t.Fatalf("me = %v", me.Data())
	}
	expect(a.t, a.call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": refresh}), 200)
}

// TestDashboardDevicePageShowsTheRequest: the approval page says what is
// being approved (the app's name, escaped; when; from which address) and
// asks for the code the app shows, which it never shows itself.
func TestDashboardDevicePageShowsTheRequest(t *testing.T) {
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	ada := a.register("Ada")
	signInBrowser(t, b, ada)
	asked := a.clock.Now()
	app := a.startDevice(53682, "client_name", `Ada's <b>laptop</b>`, "RemoteAddr", "203.0.113.66:4000")

	p := b.get("/device?session_id="+url.QueryEscape(app.session)).expect(t, 200, "")
	p.contains(t,
		`<dd id="device-client">Ada&#39;s &lt;b&gt;laptop&lt;/b&gt;</dd>`,
		`<dd id="device-ip" class="mono">203.0.113.66</dd>`,
		`<time datetime="`+asked.Format("2006-01-02T15:04:05Z")+`">`+asked.Format("2 Jan 2006, 15:04 UTC")+`</time>`,
		`<label for="user_code">Code shown by your app</label>`, `name="user_code"`,
		`<input type="hidden" name="session_id" value="`+app.session+`">`,
		`action="/device"`, "Never type a code that someone sent you", emailFor("Ada"))
	for _, secret := range []string{app.userCode, strings.ReplaceAll(app.userCode, "-", "")} {
		if strings.Contains(p.Body, secret) {
			t.Fatalf("the approval page shows the user code %s", secret)
		}
	}

	// The default name; and once answered, no form.
	plain := a.startDevice(53683)
	b.get("/device?session_id="+plain.session).expect(t, 200, "").contains(t, `<dd id="device-client">perch CLI</dd>`, `<dd id="device-ip" class="mono">192.0.2.1</dd>`)
	a.approve(ada, plain)
	if p := b.get("/device?session_id="+plain.session).expect(t, 200, "").contains(t, "already approved"); strings.Contains(p.Body, `name="user_code"`) {
		t.Fatal("an answered sign-in still offers the form")
	}
	late := a.startDevice(53684)
	a.clock.Advance(perch.DeviceSessionTTL)
	b.get("/device?session_id="+late.session).expect(t, 200, "").contains(t, "expired")

	b.get("/device").expect(t, 400, "").contains(t, "names no sign-in request")
	b.get("/device?session_id=dev_unknown").expect(t, 404, "")
}

// TestDashboardDeviceApproval answers sign-ins through the page's form:
// with the right code the app may poll; with none only the loopback
// callback completes it; a wrong code approves nothing and says so.
func TestDashboardDeviceApproval(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newSite(t, s)
		b := newBrowser(t, a.ts)
		ada := a.register("Ada")
		signInBrowser(t, b, ada)

		app := a.startDevice(53682)
		for _, code := range []string{"ZZZZ-ZZZZ", "not a code"} {
			p := b.post("/device", url.Values{"session_id": {app.session}, "user_code": {code}, "action": {"approve"}}).expect(t, 422, "")
			p.contains(t, `class="problem"`, `value="`+code+`"`, `class="alert"`, `action="/device"`)
		}
		if st := expect(t, a.deviceStatus(app, app.verifier), 200).Data(); st["status"] != "pending" {
			t.Fatalf("status after wrong codes = %v", st)
		}
		p := b.post("/device", url.Values{"session_id": {app.session}, "user_code": {strings.ToLower(app.userCode)}, "action": {"approve"}})
		p.expect(t, 303, "")
		if q := app.callback(t, p.Location); q.Get("session_id") != app.session || !strings.HasPrefix(q.Get("code"), perch.DeviceCodePrefix) {
			t.Fatalf("approved to %q", p.Location)
		}
		a.wantSignedIn(expect(t, a.deviceStatus(app, app.verifier), 200).Data(), ada)

		// Without the code: to the callback, and the poll gets nothing.
		app = a.startDevice(53683)
		p = b.post("/device", url.Values{"session_id": {app.session}, "user_code": {""}, "action": {"approve"}}).expect(t, 303, "")
		code := app.callback(t, p.Location).Get("code")
		if st := expect(t, a.deviceStatus(app, app.verifier), 200).Data(); st["callback_only"] != true || st["access_token"] != nil {
			t.Fatalf("status after an approval without the code = %v", st)
		}
		a.wantSignedIn(expect(t, a.exchange(app, code, app.verifier), 200).Data(), ada)

		// Deny; an unknown action; and another site's post.
		app = a.startDevice(53684)
		b.post("/device", url.Values{"session_id": {app.session}, "action": {"maybe"}}).expect(t, 400, "")
		b.post("/device", url.Values{"session_id": {app.session}, "action": {"approve"}}, "Sec-Fetch-Site", "cross-site").expect(t, 403, "")
		b.post("/device", url.Values{"session_id": {app.session}, "action": {"deny"}}).
			expect(t, 303, "http://127.0.0.1:53684/callback?error=access_denied&session_id="+app.session)
		// Answering again shows the page with what happened.
		b.post("/device", url.Values{"session_id": {app.session}, "action": {"approve"}}).expect(t, 409, "").contains(t, "already denied")
	})
}
