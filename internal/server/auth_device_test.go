package server

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/apitest"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// rfcVerifier is the example verifier of RFC 7636 Appendix B.
const rfcVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"

const chromeAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"

// deviceApp is the desktop app's side of one sign-in (apitest.DeviceApp).
type deviceApp = apitest.DeviceApp

var newVerifier = apitest.NewVerifier

// startDevice starts a sign-in the way the app does and checks the answer;
// extra are more query parameters, in pairs, and headers ("RemoteAddr" too).
func (a *api) startDevice(port int, extra ...string) *deviceApp {
	a.t.Helper()
	return apitest.StartDevice(a.t, a.call, port, extra...)
}

// approve has acc approve app's sign-in with JSON, without typing the user
// code, and returns the code the callback URL carries.
func (a *api) approve(acc *account, app *deviceApp) string {
	a.t.Helper()
	return app.Approve(a.t, a.call, acc.Access, "")
}

// approveWithCode is approve, typing userCode.
func (a *api) approveWithCode(acc *account, app *deviceApp, userCode string) string {
	a.t.Helper()
	return app.Approve(a.t, a.call, acc.Access, userCode)
}

func (a *api) exchange(app *deviceApp, code, verifier string) *response {
	return app.Exchange(a.call, code, verifier)
}

func (a *api) deviceStatus(app *deviceApp, verifier string) *response {
	return app.Status(a.call, verifier)
}

// complete answers a sign-in as token's user, with the fields of v.
func (a *api) complete(token string, v url.Values, headers ...string) *response {
	a.t.Helper()
	body := map[string]string{}
	for k := range v {
		body[k] = v.Get(k)
	}
	return a.call("POST", "/api/v1/auth/device/complete", token, body, headers...)
}

// redirectURL is where complete's answer sends the browser.
func redirectURL(tb testing.TB, res *response) string {
	tb.Helper()
	u, _ := expect(tb, res, 200).Data()["redirect_url"].(string)
	return u
}

// wantSignedIn checks that d is a sign-in of acc whose tokens work.
func (a *api) wantSignedIn(d map[string]any, acc *account) {
	a.t.Helper()
	apitest.WantSignedIn(a.t, a.call, d, acc.ID)
}

func wantField(tb testing.TB, res *response, field string) {
	tb.Helper()
	if _, ok := res.Fields()[field]; !ok {
		tb.Fatalf("error fields %v do not name %s", res.Fields(), field)
	}
}

func TestDeviceSignIn(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		app := a.startDevice(53682)
		if st := expect(t, a.deviceStatus(app, app.Verifier), 200).Data(); st["status"] != "pending" || len(st) != 1 {
			t.Fatalf("status = %v", st)
		}
		code := a.approve(ada, app)
		// Approved without the user code: the poll is told to wait for the
		// callback, and gets no tokens.
		if st := expect(t, a.deviceStatus(app, app.Verifier), 200).Data(); st["status"] != "approved" || st["callback_only"] != true || len(st) != 2 {
			t.Fatalf("status after an approval without the code = %v", st)
		}
		res := expect(t, a.exchange(app, code, app.Verifier), 200)
		a.wantSignedIn(res.Data(), ada)

		// The code works once; afterwards the status says the tokens went.
		if res := expect(t, a.exchange(app, code, app.Verifier), 409); !strings.Contains(res.Raw, "already used") {
			t.Fatalf("second exchange: %s", res.Raw)
		}
		st := expect(t, a.deviceStatus(app, app.Verifier), 200).Data()
		if st["status"] != "approved" || st["exchanged"] != true || st["access_token"] != nil {
			t.Fatalf("status after the exchange = %v", st)
		}
	})
}

func TestDeviceCompleteAnswersTheCallback(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		app := a.startDevice(53682)
		loc := redirectURL(t, a.complete(ada.Access, url.Values{"session_id": {app.Session}}, "Sec-Fetch-Site", "same-origin"))
		prefix := "http://127.0.0.1:53682/callback?session_id=" + app.Session + "&code="
		code, ok := strings.CutPrefix(loc, prefix)
		if !ok || !strings.HasPrefix(code, perch.DeviceCodePrefix) || len(code) != len(perch.DeviceCodePrefix)+52 {
			t.Fatalf("redirect_url = %q, want %s<code>", loc, prefix)
		}
		a.wantSignedIn(expect(t, a.exchange(app, code, app.Verifier), 200).Data(), ada)

		// Denied: back to the app with access_denied.
		app = a.startDevice(1024)
		if got, want := redirectURL(t, a.complete(ada.Access, url.Values{"session_id": {app.Session}, "action": {"deny"}})),
			"http://127.0.0.1:1024/callback?error=access_denied&session_id="+app.Session; got != want {
			t.Fatalf("deny = %q, want %q", got, want)
		}
		if st := expect(t, a.deviceStatus(app, app.Verifier), 200).Data(); st["status"] != "denied" {
			t.Fatalf("status = %v", st)
		}
	})
}

func TestDeviceCompleteRefusesOtherSites(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		app := a.startDevice(53682)
		expect(t, a.complete(ada.Access, url.Values{"session_id": {app.Session}}, "Sec-Fetch-Site", "cross-site"), 403)
		expect(t, a.complete(ada.Access, url.Values{"session_id": {app.Session}}, "Origin", "https://evil.example"), 403)
		// The API speaks JSON only: a form is not read.
		form := httptest.NewRequest("POST", "/api/v1/auth/device/complete", strings.NewReader("session_id="+app.Session))
		form.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		form.Header.Set("Authorization", "Bearer "+ada.Access)
		rec := httptest.NewRecorder()
		a.srv.ServeHTTP(rec, form)
		if rec.Code != 400 {
			t.Fatalf("a form post to the API: %d, want 400", rec.Code)
		}
		// A JSON body sent as text/plain needs no preflight: refused too.
		expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Access, `{"session_id":"`+app.Session+`"}`, "Sec-Fetch-Site", "cross-site"), 403)
		if st := expect(t, a.deviceStatus(app, app.Verifier), 200).Data(); st["status"] != "pending" {
			t.Fatalf("status = %v", st)
		}
	})
}

func TestDeviceCompleteRefusesAPITokens(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		a.apiToken(ada, "laptop")
		app := a.startDevice(53682)
		expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Token, map[string]string{"session_id": app.Session}), 403)
		expect(t, a.call("POST", "/api/v1/auth/device/complete", "", map[string]string{"session_id": app.Session}), 401)
	})
}

// TestDeviceAuthorizeAnswersJSONEvenToABrowser: the API speaks JSON; the
// page to open is in the answer, not a redirect.
func TestDeviceAuthorizeAnswersJSONEvenToABrowser(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	v := newVerifier()
	res := expect(t, a.call("GET", "/api/v1/auth/device/authorize?port=53682&code_challenge="+perch.S256Challenge(v), "", nil, "Accept", chromeAccept), 200)
	if u, _ := res.Data()["verification_url"].(string); !strings.HasPrefix(u, "http://perch.test/device?session_id=") {
		t.Fatalf("verification_url = %q", u)
	}
}

func TestDeviceStatusPolling(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		app := a.startDevice(53682)
		for range 3 {
			if st := expect(t, a.deviceStatus(app, app.Verifier), 200).Data(); st["status"] != "pending" {
				t.Fatalf("status = %v", st)
			}
		}
		code := a.approveWithCode(ada, app, app.UserCode)
		st := expect(t, a.deviceStatus(app, app.Verifier), 200).Data()
		if st["status"] != "approved" || st["exchanged"] != nil || st["callback_only"] != nil {
			t.Fatalf("first status after approval = %v", st)
		}
		a.wantSignedIn(st, ada)
		for range 2 {
			st = expect(t, a.deviceStatus(app, app.Verifier), 200).Data()
			if st["status"] != "approved" || st["exchanged"] != true || st["access_token"] != nil || st["refresh_token"] != nil || st["user"] != nil {
				t.Fatalf("later status = %v", st)
			}
		}
		// The tokens went to the poll; the code buys nothing more.
		expect(t, a.exchange(app, code, app.Verifier), 409)
	})
}

func TestDeviceOneWinnerAmongRacingPollsAndExchanges(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		app := a.startDevice(53682)
		code := a.approveWithCode(ada, app, app.UserCode)
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		tokens := 0
		for i := range 8 {
			wg.Go(func() {
				<-start
				var res *response
				if i%2 == 0 {
					res = a.exchange(app, code, app.Verifier)
				} else {
					res = a.deviceStatus(app, app.Verifier)
				}
				mu.Lock()
				defer mu.Unlock()
				switch {
				case res.Status == 200 && res.Data()["access_token"] != nil:
					tokens++
				case res.Status == 409, res.Status == 200 && res.Data()["exchanged"] == true:
				default:
					t.Errorf("unexpected answer %d: %s", res.Status, res.Raw)
				}
			})
		}
		close(start)
		wg.Wait()
		if tokens != 1 {
			t.Fatalf("%d answers carried tokens, want exactly 1", tokens)
		}
	})
}

func TestDeviceDeny(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		app := a.startDevice(53682)
		d := expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Access, map[string]string{"session_id": app.Session, "action": "deny"}), 200).Data()
		if d["status"] != "denied" || d["redirect_url"] != "http://127.0.0.1:53682/callback?error=access_denied&session_id="+app.Session {
			t.Fatalf("deny = %v", d)
		}
		if st := expect(t, a.deviceStatus(app, app.Verifier), 200).Data(); st["status"] != "denied" || len(st) != 1 {
			t.Fatalf("status = %v", st)
		}
		// Answered once: neither approving nor denying again changes it.
		expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Access, map[string]string{"session_id": app.Session}), 409)
		expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Access, map[string]string{"session_id": app.Session, "action": "deny"}), 409)
		expect(t, a.exchange(app, perch.DeviceCodePrefix+"guess", app.Verifier), 409)

		// And an approved one cannot be denied afterwards.
		app = a.startDevice(53682)
		a.approve(ada, app)
		res := expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Access, map[string]string{"session_id": app.Session, "action": "deny"}), 409)
		if !strings.Contains(res.Raw, "already approved") {
			t.Fatalf("deny after approval: %s", res.Raw)
		}
	})
}

func TestDeviceCompleteBadBodies(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		app := a.startDevice(53682)
		wantField(t, expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Access, map[string]string{}), 400), "session_id")
		wantField(t, expect(t, a.complete(ada.Access, url.Values{}), 400), "session_id")
		wantField(t, expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Access, map[string]string{"session_id": app.Session, "action": "maybe"}), 400), "action")
		expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Access, "not json"), 400)
	})
}

func TestDeviceExchangeWrongVerifierOrCode(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		app := a.startDevice(53682)
		code := a.approve(ada, app)

		wantField(t, expect(t, a.exchange(app, code, newVerifier()), 400), "code_verifier")
		wantField(t, expect(t, a.exchange(app, perch.DeviceCodePrefix+"guess", app.Verifier), 400), "code")
		wantField(t, expect(t, a.exchange(app, code, "too-short"), 400), "code_verifier")
		wantField(t, expect(t, a.exchange(app, code, strings.Repeat("a", 129)), 400), "code_verifier")
		wantField(t, expect(t, a.exchange(app, code, app.Verifier[:42]+"+"), 400), "code_verifier")
		res := expect(t, a.call("POST", "/api/v1/auth/device/exchange", "", map[string]string{}), 400)
		for _, f := range []string{"session_id", "code", "code_verifier"} {
			wantField(t, res, f)
		}
		// Another sign-in's code does not fit this one.
		other := a.startDevice(53683)
		otherCode := a.approve(ada, other)
		expect(t, a.exchange(app, otherCode, app.Verifier), 400)

		// Failed attempts do not spend the sign-in: a guesser holding only
		// the session id cannot lock the app out.
		a.wantSignedIn(expect(t, a.exchange(app, code, app.Verifier), 200).Data(), ada)
		expect(t, a.exchange(app, code, app.Verifier), 409)
	})
}

func TestDeviceStatusNeedsTheVerifier(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		app := a.startDevice(53682)
		a.approveWithCode(ada, app, app.UserCode)
		wantField(t, expect(t, a.call("GET", "/api/v1/auth/device/status/"+app.Session, "", nil), 400), "code_verifier")
		wantField(t, expect(t, a.deviceStatus(app, "short"), 400), "code_verifier")
		if res := expect(t, a.deviceStatus(app, newVerifier()), 400); strings.Contains(res.Raw, "access_token") {
			t.Fatalf("a wrong verifier got tokens: %s", res.Raw)
		}
		// The right verifier still gets them.
		a.wantSignedIn(expect(t, a.deviceStatus(app, app.Verifier), 200).Data(), ada)
	})
}

func TestDeviceSignInExpires(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		unanswered := a.startDevice(53682)
		approved := a.startDevice(53683)
		late := a.startDevice(53684)
		a.clock.Advance(perch.DeviceSessionTTL - time.Second)
		code := a.approve(ada, approved)
		a.clock.Advance(time.Second)

		for _, app := range []*deviceApp{unanswered, approved, late} {
			if st := expect(t, a.deviceStatus(app, app.Verifier), 200).Data(); st["status"] != "expired" || len(st) != 1 {
				t.Fatalf("status after 10 minutes = %v", st)
			}
		}
		res := expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Access, map[string]string{"session_id": late.Session}), 400)
		if !strings.Contains(res.Raw, "expired") {
			t.Fatalf("complete after expiry: %s", res.Raw)
		}
		expect(t, a.complete(ada.Access, url.Values{"session_id": {late.Session}, "action": {"deny"}}), 400)
		res = expect(t, a.exchange(approved, code, approved.Verifier), 400)
		if !strings.Contains(res.Raw, "expired") {
			t.Fatalf("exchange after expiry: %s", res.Raw)
		}
	})
}

func TestDeviceAuthorizeValidation(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		good := perch.S256Challenge(newVerifier())
		authorize := func(port, challenge, method string) *response {
			q := url.Values{"port": {port}, "code_challenge": {challenge}}
			if method != "" {
				q.Set("code_challenge_method", method)
			}
			return a.call("GET", "/api/v1/auth/device/authorize?"+q.Encode(), "", nil)
		}
		for _, port := range []string{"0", "80", "1023", "65536", "abc", "", "-8080", "8080.5"} {
			wantField(t, expect(t, authorize(port, good, ""), 400), "port")
		}
		for _, port := range []string{"1024", "65535"} {
			expect(t, authorize(port, good, ""), 200)
		}
		for _, challenge := range []string{"", good[:42], good + "A", good[:42] + "+", good[:42] + "=", strings.Repeat("a", 42) + "/"} {
			wantField(t, expect(t, authorize("8080", challenge, ""), 400), "code_challenge")
		}
		for _, method := range []string{"plain", "s256", "SHA256"} {
			res := expect(t, authorize("8080", good, method), 400)
			wantField(t, res, "code_challenge_method")
			if !strings.Contains(res.Raw, "S256") {
				t.Fatalf("method %q: %s", method, res.Raw)
			}
		}
		expect(t, authorize("8080", good, "S256"), 200)
		// Every problem at once.
		res := expect(t, authorize("80", "nope", "plain"), 400)
		for _, f := range []string{"port", "code_challenge", "code_challenge_method"} {
			wantField(t, res, f)
		}
	})
}

func TestDeviceUnknownSession(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		ghost := &deviceApp{Port: 53682, Verifier: rfcVerifier, Session: "dev_unknown"}
		expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Access, map[string]string{"session_id": ghost.Session}), 404)
		expect(t, a.complete(ada.Access, url.Values{"session_id": {ghost.Session}, "action": {"deny"}}), 404)
		expect(t, a.exchange(ghost, perch.DeviceCodePrefix+"guess", ghost.Verifier), 404)
		expect(t, a.deviceStatus(ghost, ghost.Verifier), 404)
	})
}

// TestDevicePollingSparesTheSignInLimit: the app polls far more often than
// the sign-in limit allows, in a bucket of its own.
func TestDevicePollingSparesTheSignInLimit(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) {
		o.Limits.Auth = perch.Limit{Count: 3, Period: 15 * time.Minute}
		o.Limits.User = perch.Limit{Count: 20, Period: time.Minute}
	})
	app := a.startDevice(53682) // 1 of the 3 sign-in requests
	for range 20 {
		expect(t, a.deviceStatus(app, app.Verifier), 200)
	}
	expect(t, a.deviceStatus(app, app.Verifier), 429)
	expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": "who@example.com", "password": goodPassword}), 401)
	// Starting and exchanging share the device bucket: 3 in all.
	expect(t, a.exchange(app, perch.DeviceCodePrefix+"guess", app.Verifier), 409)
	expect(t, a.exchange(app, perch.DeviceCodePrefix+"guess", app.Verifier), 409)
	expect(t, a.exchange(app, perch.DeviceCodePrefix+"guess", app.Verifier), 429)
}
