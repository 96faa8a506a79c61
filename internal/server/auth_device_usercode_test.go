package server

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestDevicePhishedApprovalGivesThePollNoTokens is the attack of the
// security finding "Device sign-in can be phished through the status poll":
// the attacker starts a sign-in with a verifier of their own and sends the
// victim the approval link; the victim, signed in to the dashboard,
// approves it without the code (they have none: the attacker's app shows
// it, on the attacker's screen). The attacker's poll, which holds the
// verifier, must not get the victim's tokens, and the one-time code went to
// the victim's own loopback port.
func TestDevicePhishedApprovalGivesThePollNoTokens(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		victim := a.register("Victim")
		attacker := a.startDevice(53682, "RemoteAddr", "203.0.113.66:4000")

		// The victim approves, by the dashboard's form and without a code.
		loc := redirectURL(t, a.complete(victim.Access, url.Values{"session_id": {attacker.Session}}, "Sec-Fetch-Site", "same-origin"))
		if q := attacker.Callback(t, loc); q.Get("code") == "" {
			t.Fatalf("the approval sent the browser to %q", loc)
		}

		// The attacker polls, as often as they like: approved, but only for
		// the callback, and never a token.
		for range 3 {
			st := expect(t, a.deviceStatus(attacker, attacker.Verifier), 200)
			if d := st.Data(); d["status"] != "approved" || d["callback_only"] != true || len(d) != 2 {
				t.Fatalf("the attacker's poll = %v", d)
			}
			for _, leak := range []string{"access_token", "refresh_token", perch.AccessTokenPrefix, perch.RefreshTokenPrefix, victim.Email} {
				if strings.Contains(st.Raw, leak) {
					t.Fatalf("the attacker's poll carries %q: %s", leak, st.Raw)
				}
			}
		}
		// Nor does guessing the one-time code help, and the guesses do not
		// spend the sign-in.
		wantField(t, expect(t, a.exchange(attacker, perch.DeviceCodePrefix+strings.Repeat("a", 52), attacker.Verifier), 400), "code")
		if d := expect(t, a.deviceStatus(attacker, attacker.Verifier), 200).Data(); d["callback_only"] != true {
			t.Fatalf("after the guesses: %v", d)
		}
		// The store holds to it whatever a handler read.
		if err := s.ExchangeDeviceSession(t.Context(), attacker.Session, true); err != perch.ErrDeviceCallbackOnly {
			t.Fatalf("a poll's exchange in the store: %v", err)
		}

		// The same by JSON: approved, not confirmed, no tokens to the poll.
		attacker = a.startDevice(53682)
		a.approve(victim, attacker)
		if d := expect(t, a.deviceStatus(attacker, attacker.Verifier), 200).Data(); d["access_token"] != nil || d["callback_only"] != true {
			t.Fatalf("the attacker's poll after a JSON approval = %v", d)
		}
	})
}

// TestDeviceUserCodeLetsThePollSignIn: the person who types the code their
// own app shows lets that app sign in by polling, as typed in any case and
// with or without the hyphen.
func TestDeviceUserCodeLetsThePollSignIn(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		for _, typed := range []func(string) string{
			func(c string) string { return c },
			func(c string) string { return strings.ToLower(strings.ReplaceAll(c, "-", "")) },
			func(c string) string { return " " + strings.ReplaceAll(c, "-", " ") + " " },
		} {
			app := a.startDevice(53682)
			a.approveWithCode(ada, app, typed(app.UserCode))
			st := expect(t, a.deviceStatus(app, app.Verifier), 200).Data()
			if st["status"] != "approved" || st["callback_only"] != nil {
				t.Fatalf("status after an approval with the code = %v", st)
			}
			a.wantSignedIn(st, ada)
		}

		// Approved with the code: the callback gets a code too.
		app := a.startDevice(53682)
		if loc := redirectURL(t, a.complete(ada.Access, url.Values{"session_id": {app.Session}, "user_code": {app.UserCode}})); app.Callback(t, loc).Get("code") == "" {
			t.Fatalf("approval with the code sent the browser to %q", loc)
		}
		a.wantSignedIn(expect(t, a.deviceStatus(app, app.Verifier), 200).Data(), ada)
	})
}

// TestDeviceWrongUserCodeIsRefused: a code that is not the one the app
// shows approves nothing, answers validation_failed on user_code, and
// leaves the sign-in pending for the right one.
func TestDeviceWrongUserCodeIsRefused(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		app := a.startDevice(53682)
		other := a.startDevice(53683)
		complete := func(code string) *response {
			return a.call("POST", "/api/v1/auth/device/complete", ada.Access, map[string]string{"session_id": app.Session, "user_code": code})
		}
		for _, code := range []string{other.UserCode, "BCDF-GHJ", "ABCD-EFGH", "BCDF-GHJK-LMNP", "<script>", "BCDF-GHJЌ"} {
			if code == app.UserCode {
				continue // the one time in 2.56e10 the other sign-in's code is this one's
			}
			res := expect(t, complete(code), 422)
			wantField(t, res, "user_code")
			if len(res.Fields()) != 1 {
				t.Fatalf("fields = %v", res.Fields())
			}
		}
		wantField(t, expect(t, a.complete(ada.Access,
			url.Values{"session_id": {app.Session}, "user_code": {"ZZZZ-ZZZZ"}}), 422), "user_code")
		if st := expect(t, a.deviceStatus(app, app.Verifier), 200).Data(); st["status"] != "pending" {
			t.Fatalf("status after wrong codes = %v", st)
		}
		a.approveWithCode(ada, app, app.UserCode)
		a.wantSignedIn(expect(t, a.deviceStatus(app, app.Verifier), 200).Data(), ada)

		// A sign-in that can no longer be answered says so, whatever the
		// code: the state first, then the code.
		expect(t, complete("ZZZZ-ZZZZ"), 409)
		expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Access, map[string]string{"session_id": "dev_unknown", "user_code": "BCDF-GHJK"}), 404)
		late := a.startDevice(53684)
		a.clock.Advance(perch.DeviceSessionTTL)
		res := expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Access, map[string]string{"session_id": late.Session, "user_code": late.UserCode}), 400)
		if !strings.Contains(res.Raw, "expired") {
			t.Fatalf("complete after expiry: %s", res.Raw)
		}

		// Denying needs no code, and a code typed before denying is ignored.
		deny := a.startDevice(53685)
		d := expect(t, a.call("POST", "/api/v1/auth/device/complete", ada.Access,
			map[string]string{"session_id": deny.Session, "action": "deny", "user_code": "nonsense"}), 200).Data()
		if d["status"] != "denied" || d["user_code_confirmed"] != false {
			t.Fatalf("deny = %v", d)
		}
	})
}

// TestDeviceRequestShowsWhatIsApproved: the approval page's source tells the
// signed-in user what the app calls itself, when and from where it asked,
// and never the user code, which they must read off their own app.
func TestDeviceRequestShowsWhatIsApproved(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada Lovelace")
		asked := a.clock.Now()
		app := a.startDevice(53682, "client_name", "  Perch menu bar  ", "RemoteAddr", "[2001:db8::7]:4000")
		res := expect(t, a.call("GET", "/api/v1/auth/device/requests/"+app.Session, ada.Access, nil), 200)
		want := map[string]any{"session_id": app.Session, "client_name": "Perch menu bar", "client_ip": "2001:db8::7", "status": "pending",
			"created_at": asked.Format(time.RFC3339), "expires_at": asked.Add(perch.DeviceSessionTTL).Format(time.RFC3339)}
		if got := res.Data(); len(got) != len(want) {
			t.Fatalf("request = %v, want %v", got, want)
		}
		for k, v := range want {
			if res.Data()[k] != v {
				t.Errorf("request %s = %v, want %v", k, res.Data()[k], v)
			}
		}
		for _, secret := range []string{app.UserCode, strings.ReplaceAll(app.UserCode, "-", ""), "user_code"} {
			if strings.Contains(res.Raw, secret) {
				t.Fatalf("the request shows %q: %s", secret, res.Raw)
			}
		}

		// The default name, and the address as the server saw it.
		plain := a.startDevice(53683)
		if d := expect(t, a.call("GET", "/api/v1/auth/device/requests/"+plain.Session, ada.Access, nil), 200).Data(); d["client_name"] != perch.DefaultDeviceClientName || d["client_ip"] != "192.0.2.1" {
			t.Fatalf("request = %v", d)
		}
		// Answered: approved (exchanged reads approved), denied.
		a.exchange(plain, a.approve(ada, plain), plain.Verifier)
		if d := expect(t, a.call("GET", "/api/v1/auth/device/requests/"+plain.Session, ada.Access, nil), 200).Data(); d["status"] != "approved" {
			t.Fatalf("request after the exchange = %v", d)
		}
		expect(t, a.call("GET", "/api/v1/auth/device/requests/dev_unknown", ada.Access, nil), 404)
		expect(t, a.call("GET", "/api/v1/auth/device/requests/"+app.Session, "", nil), 401)
	})
}

func TestDeviceAuthorizeClientName(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		challenge := perch.S256Challenge(newVerifier())
		for _, name := range []string{"", "   ", strings.Repeat("x", 65), "perch\nCLI", "perch\u202eILC", "perch\x00"} {
			q := url.Values{"port": {"8080"}, "code_challenge": {challenge}, "client_name": {name}}
			res := expect(t, a.call("GET", "/api/v1/auth/device/authorize?"+q.Encode(), "", nil), 400)
			if len(res.Fields()) != 1 {
				t.Fatalf("client_name %q: fields %v", name, res.Fields())
			}
			wantField(t, res, "client_name")
		}
		q := url.Values{"port": {"8080"}, "code_challenge": {challenge}, "client_name": {strings.Repeat("é", 64)}}
		expect(t, a.call("GET", "/api/v1/auth/device/authorize?"+q.Encode(), "", nil), 200)
	})
}

// TestDeviceRequestIsSeenOnlyByWhoMayAnswerIt: a sign-in not yet answered
// is shown to anyone signed in who holds its id (the person the app's
// verification link reached, about to answer it); once approved or
// denied, only to the user who answered it. Everyone else is answered
// exactly as for an id that does not exist, whether they read it or try
// to answer it again.
func TestDeviceRequestIsSeenOnlyByWhoMayAnswerIt(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, bob := a.register("Ada"), a.register("Bob")
		colleague := a.invite(ada, "Cleo", "admin") // Ada's own organisation: no exception
		read := func(acc *account, app *deviceApp, status int) *response {
			t.Helper()
			return expect(t, a.call("GET", "/api/v1/auth/device/requests/"+app.Session, acc.Access, nil), status)
		}
		unknown := expect(t, a.call("GET", "/api/v1/auth/device/requests/dev_unknown", bob.Access, nil), 404)
		hidden := func(res *response) {
			t.Helper()
			if res.Raw != unknown.Raw {
				t.Fatalf("a hidden sign-in reads %s, an unknown id %s", res.Raw, unknown.Raw)
			}
		}

		// Pending: whoever holds the link may see what they would approve.
		approved := a.startDevice(53682)
		for _, acc := range []*account{ada, bob, colleague} {
			if d := read(acc, approved, 200).Data(); d["status"] != "pending" {
				t.Fatalf("pending, as %s sees it: %v", acc.Email, d)
			}
		}

		// Approved by Ada: hers alone, before and after the exchange.
		code := a.approve(ada, approved)
		if d := read(ada, approved, 200).Data(); d["status"] != "approved" {
			t.Fatalf("approved, as Ada sees it: %v", d)
		}
		for _, acc := range []*account{bob, colleague} {
			hidden(read(acc, approved, 404))
			for _, action := range []string{"approve", "deny"} {
				hidden(expect(t, a.complete(acc.Access, url.Values{"session_id": {approved.Session}, "action": {action}}), 404))
			}
		}
		expect(t, a.complete(ada.Access, url.Values{"session_id": {approved.Session}}), 409) // she knows it, and why
		a.wantSignedIn(expect(t, a.exchange(approved, code, approved.Verifier), 200).Data(), ada)
		read(ada, approved, 200)
		hidden(read(bob, approved, 404))

		// Denied by Bob: his alone.
		denied := a.startDevice(53683)
		expect(t, a.complete(bob.Access, url.Values{"session_id": {denied.Session}, "action": {"deny"}}), 200)
		if d := read(bob, denied, 200).Data(); d["status"] != "denied" {
			t.Fatalf("denied, as Bob sees it: %v", d)
		}
		hidden(read(ada, denied, 404))

		// Expired unanswered: still nobody's, so the link's holder learns
		// it expired; expired after an answer: still the answerer's.
		unanswered := a.startDevice(53684)
		answered := a.startDevice(53685)
		a.approve(bob, answered)
		a.clock.Advance(perch.DeviceSessionTTL + time.Second)
		for _, acc := range []*account{ada, bob} {
			if d := read(acc, unanswered, 200).Data(); d["status"] != "expired" {
				t.Fatalf("expired unanswered, as %s sees it: %v", acc.Email, d)
			}
		}
		read(bob, answered, 200)
		hidden(read(ada, answered, 404))
	})
}
