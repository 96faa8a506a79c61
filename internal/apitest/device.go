package apitest

import (
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
)

// Caller sends a request as a test harness does: body as Body takes it,
// extra headers in pairs.
type Caller func(method, path, token string, body any, headers ...string) *Response

// DeviceApp is the desktop app's side of one sign-in.
type DeviceApp struct {
	Port     int
	Verifier string
	Session  string
	UserCode string // BCDF-GHJK, as the app shows it
}

// NewVerifier returns a fresh code verifier: 32 random bytes, base64url.
func NewVerifier() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// userCodeForm is the form of a user code as the server hands it out.
var userCodeForm = regexp.MustCompile(`^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$`)

// StartDevice starts a sign-in the way the app does and checks the answer;
// extra are more query parameters, in pairs, and headers ("RemoteAddr" too).
func StartDevice(tb testing.TB, call Caller, port int, extra ...string) *DeviceApp {
	tb.Helper()
	app := &DeviceApp{Port: port, Verifier: NewVerifier()}
	q := url.Values{"port": {strconv.Itoa(port)}, "code_challenge": {perch.S256Challenge(app.Verifier)}, "code_challenge_method": {"S256"}}
	headers := []string{"Accept", "application/json"}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i] == "RemoteAddr" {
			headers = append(headers, extra[i], extra[i+1])
		} else {
			q.Set(extra[i], extra[i+1])
		}
	}
	d := Expect(tb, call("GET", "/api/v1/auth/device/authorize?"+q.Encode(), "", nil, headers...), 200).Data()
	app.Session, _ = d["session_id"].(string)
	app.UserCode, _ = d["user_code"].(string)
	if !strings.HasPrefix(app.Session, perch.DeviceSessionPrefix) {
		tb.Fatalf("session_id = %v", d["session_id"])
	}
	if d["verification_url"] != "http://perch.test/device?session_id="+app.Session || d["expires_in"] != 600.0 || !userCodeForm.MatchString(app.UserCode) {
		tb.Fatalf("authorize = %v", d)
	}
	return app
}

// Approve has the holder of access approve app's sign-in with JSON, typing
// userCode (none when ""), and returns the code the callback URL carries.
func (app *DeviceApp) Approve(tb testing.TB, call Caller, access, userCode string) string {
	tb.Helper()
	body := map[string]string{"session_id": app.Session}
	if userCode != "" {
		body["user_code"] = userCode
	}
	d := Expect(tb, call("POST", "/api/v1/auth/device/complete", access, body), 200).Data()
	if d["status"] != "approved" || d["user_code_confirmed"] != (userCode != "") {
		tb.Fatalf("complete = %v", d)
	}
	q := app.Callback(tb, d["redirect_url"].(string))
	if q.Get("session_id") != app.Session || !strings.HasPrefix(q.Get("code"), perch.DeviceCodePrefix) {
		tb.Fatalf("callback query = %v", q)
	}
	return q.Get("code")
}

// Callback checks that link is app's loopback callback and returns its query.
func (app *DeviceApp) Callback(tb testing.TB, link string) url.Values {
	tb.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Scheme != "http" || u.Host != "127.0.0.1:"+strconv.Itoa(app.Port) || u.Path != "/callback" {
		tb.Fatalf("redirect %q is not http://127.0.0.1:%d/callback", link, app.Port)
	}
	return u.Query()
}

// Exchange trades the callback's code and a verifier for the sign-in.
func (app *DeviceApp) Exchange(call Caller, code, verifier string) *Response {
	return call("POST", "/api/v1/auth/device/exchange", "", map[string]string{"session_id": app.Session, "code": code, "code_verifier": verifier})
}

// Status polls the sign-in with a verifier.
func (app *DeviceApp) Status(call Caller, verifier string) *Response {
	return call("GET", "/api/v1/auth/device/status/"+app.Session+"?code_verifier="+url.QueryEscape(verifier), "", nil)
}

// WantSignedIn checks that d is a sign-in of the user with id userID whose
// tokens work.
func WantSignedIn(tb testing.TB, call Caller, d map[string]any, userID string) {
	tb.Helper()
	u, _ := d["user"].(map[string]any)
	access, _ := d["access_token"].(string)
	refresh, _ := d["refresh_token"].(string)
	if u["id"] != userID || !strings.HasPrefix(access, perch.AccessTokenPrefix) || !strings.HasPrefix(refresh, perch.RefreshTokenPrefix) ||
		d["token_type"] != "Bearer" || d["expires_in"] != 900.0 {
		tb.Fatalf("sign-in = %v", d)
	}
	if me := Expect(tb, call("GET", "/api/v1/users/me", access, nil), 200); me.Data()["id"] != userID {
		tb.Fatalf("me = %v", me.Data())
	}
	Expect(tb, call("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": refresh}), 200)
}
