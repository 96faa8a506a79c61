package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
	"github.com/perch-dev/perch/internal/creds"
)

// answerSignIn does what a signed-in person does on the dashboard's
// verification page: approve (or deny) the sign-in the page shows, typing
// userCode ("" for none). With follow, the browser then goes where the
// server sends it, the loopback callback of perch login, and the page it
// gets is returned.
func answerSignIn(t *testing.T, u *testUser, verifyURL, action, userCode string, follow bool) (page string) {
	t.Helper()
	v, err := url.Parse(verifyURL)
	if err != nil || v.Query().Get("session_id") == "" {
		t.Fatalf("verification URL %q has no session_id", verifyURL)
	}
	in := map[string]string{"session_id": v.Query().Get("session_id"), "action": action}
	if userCode != "" {
		in["user_code"] = userCode
	}
	status, body := call(t, "POST", u.base+"/api/v1/auth/device/complete", u.session.AccessToken, in)
	if status != 200 {
		t.Fatalf("complete: %d %v", status, body)
	}
	if !follow {
		return ""
	}
	redirect := body["data"].(map[string]any)["redirect_url"].(string)
	if !strings.HasPrefix(redirect, "http://127.0.0.1:") {
		t.Fatalf("redirect_url = %q, want the loopback callback", redirect)
	}
	res, err := http.Get(redirect)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Errorf("callback answered %s", res.Header.Get("Content-Type"))
	}
	return string(b)
}

// TestLoginInTheBrowser signs in the ways the desktop sign-in can end:
// approved or denied, heard through the browser's callback or by polling;
// polling completes it only when the person typed the code login shows.
func TestLoginInTheBrowser(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	for _, tt := range []struct {
		name      string
		action    string
		typeCode  bool // the person types the code login printed
		follow    bool // the browser reaches the callback
		noBrowser bool // the person copies the address from the terminal
		wantErr   string
		wantPage  string
	}{
		{name: "approved, callback", action: "approve", follow: true, wantPage: "Signed in to Perch. You can close this tab."},
		{name: "approved with the code, callback", action: "approve", typeCode: true, follow: true, wantPage: "Signed in to Perch."},
		{name: "approved with the code, polled", action: "approve", typeCode: true},
		{name: "approved with the code, no browser", action: "approve", typeCode: true, noBrowser: true},
		{name: "approved without the code, polled", action: "approve", noBrowser: true,
			wantErr: "the sign-in was approved without the code (\\S+), so only this computer's browser could complete it"},
		{name: "denied, callback", action: "deny", follow: true, wantErr: "^sign-in was denied$", wantPage: "Sign-in was denied."},
		{name: "denied, polled", action: "deny", noBrowser: true, wantErr: "^sign-in was denied$"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c, stdout, stderr := testCLI(t, dir, nil)
			args := []string{"--server", base + "/"}
			if tt.follow {
				// The browser is on its way when a poll hears the answer
				// first: login must wait for it, however long it takes.
				c.callbackGrace, c.callbackWait = time.Minute, time.Minute
			}
			// The browser is another program: the opener hands it the
			// address, and the person answers there while login waits.
			browser := make(chan string, 1)
			if tt.noBrowser {
				args = append(args, "--no-browser")
			} else {
				c.openBrowser = func(verify string) error { browser <- verify; return nil }
			}
			done := make(chan error, 1)
			go func() { done <- dispatch(t.Context(), "login", args, c) }()
			var verify string
			if tt.noBrowser {
				verify = stderr.waitFor(t, `Open this page to sign in: (\S+)`)[1]
			} else {
				select {
				case verify = <-browser:
				case err := <-done:
					t.Fatalf("login ended before opening the browser: %v", err)
				}
			}
			// The code is printed with the address, for the person to type.
			code := stderr.waitFor(t, `Your code: ([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}) — type it on that page`)[1]
			typed := ""
			if tt.typeCode {
				typed = code
			}
			page := answerSignIn(t, u, verify, tt.action, typed, tt.follow)
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("login did not finish")
			}
			if !strings.Contains(page, tt.wantPage) {
				t.Errorf("callback page:\n%s\nwant %q", page, tt.wantPage)
			}
			st, _ := creds.Open(dir)
			if tt.wantErr != "" {
				m := regexp.MustCompile(tt.wantErr).FindStringSubmatch(fmt.Sprint(err))
				if err == nil || m == nil || len(m) > 1 && m[1] != code {
					t.Fatalf("login: %v, want %q (with the code %s)", err, tt.wantErr, code)
				}
				if _, err := st.Get(""); !errors.Is(err, creds.ErrNotSignedIn) {
					t.Fatalf("a denied sign-in was stored: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("login: %v\n%s", err, stderr)
			}
			if want := "Signed in to " + base + " as ada@example.com.\n"; stdout.String() != want {
				t.Errorf("stdout %q, want %q", stdout, want)
			}
			// credentials.json holds the session, as the default.
			raw, err := os.ReadFile(filepath.Join(dir, "credentials.json"))
			if err != nil {
				t.Fatal(err)
			}
			var file struct {
				Default string                  `json:"default"`
				Servers map[string]creds.SignIn `json:"servers"`
			}
			if err := json.Unmarshal(raw, &file); err != nil {
				t.Fatal(err)
			}
			si := file.Servers[base]
			if file.Default != base || !strings.HasPrefix(si.AccessToken, "pac_") || !strings.HasPrefix(si.RefreshToken, "prf_") || si.Email != "ada@example.com" || si.APIToken != "" {
				t.Fatalf("credentials.json:\n%s", raw)
			}
			si.Server = base
			me, err := st.Client(&si).Me(t.Context())
			if err != nil || me.Email != "ada@example.com" {
				t.Fatalf("Me with the stored session: %+v, %v", me, err)
			}
		})
	}
}

// TestLoginThenListen: the stored session is enough for perch listen.
func TestLoginThenListen(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	dir := t.TempDir()
	c, _, _ := testCLI(t, dir, map[string]string{"PERCH_SERVER": base})
	c.callbackGrace, c.callbackWait = time.Minute, time.Minute
	browser := make(chan string, 1)
	c.openBrowser = func(verify string) error { browser <- verify; return nil }
	done := make(chan error, 1)
	go func() { done <- dispatch(t.Context(), "login", nil, c) }()
	answerSignIn(t, u, <-browser, "approve", "", true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c, stdout, stderr := testCLI(t, dir, nil)
	stop := background(t, c, "listen")
	stderr.waitFor(t, "listening for notifications from "+base)
	u.send(t, client.InboundEvent{Title: "Deploy finished", Message: "api is live", Tab: "Deploys", Severity: "warning"})
	stdout.waitFor(t, `(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  \[warning\] Deploys: Deploy finished — api is live$`)
	if err := stop(); err != nil {
		t.Fatalf("listen ended with %v", err)
	}
}

func TestLoginWithAToken(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	_, pat, err := u.api.CreateAPIToken(t.Context(), "cli")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, stdout, _ := testCLI(t, dir, nil)
	if err := dispatch(t.Context(), "login", []string{"--server", base, "--token", pat}, c); err != nil {
		t.Fatal(err)
	}
	if want := "Signed in to " + base + " as ada@example.com.\nThis token may do everything your account may do; it does not expire.\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	st, _ := creds.Open(dir)
	if si, err := st.Get(""); err != nil || si.APIToken != pat || si.AccessToken != "" || si.Server != base {
		t.Fatalf("stored %+v, %v", si, err)
	}

	for _, tt := range []struct{ token, want string }{
		{"pat_" + strings.Repeat("a", 52), "checking the token with " + base + ": "},
		{"pac_notanapitoken", "--token takes an API token (pat_…)"},
	} {
		c, _, _ := testCLI(t, t.TempDir(), nil)
		err := dispatch(t.Context(), "login", []string{"--server", base, "--token", tt.token}, c)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("login --token %s: %v, want %q…", tt.token, err, tt.want)
		}
	}
}

// TestLoginWithAScopedToken: perch login --token says what a scoped,
// expiring token may do, and a read token is enough to sign in with.
func TestLoginWithAScopedToken(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	midnight := time.Date(time.Now().Year()+2, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   client.APITokenInput
		want string
	}{
		{client.APITokenInput{Label: "ci", Scopes: []perch.TokenScope{perch.ScopeSend}, ExpiresAt: &midnight},
			"This token may read and send; it expires on " + midnight.Format(time.DateOnly) + "."},
		{client.APITokenInput{Label: "wall", Scopes: []perch.TokenScope{perch.ScopeRead}, ExpiresAt: new(midnight.Add(14*time.Hour + 30*time.Minute))},
			"This token may read; it expires on " + midnight.Format(time.DateOnly) + " at 14:30 UTC."},
		{client.APITokenInput{Label: "admin", Scopes: []perch.TokenScope{perch.ScopeManage}},
			"This token may read, send and manage; it does not expire."},
	} {
		_, pat, err := u.api.CreateLimitedAPIToken(t.Context(), c.in)
		if err != nil {
			t.Fatal(err)
		}
		cl, stdout, _ := testCLI(t, t.TempDir(), nil)
		if err := dispatch(t.Context(), "login", []string{"--server", base, "--token", pat}, cl); err != nil {
			t.Fatal(err)
		}
		if want := "Signed in to " + base + " as ada@example.com.\n" + c.want + "\n"; stdout.String() != want {
			t.Errorf("%s: stdout %q, want %q", c.in.Label, stdout, want)
		}
	}
}

func TestLoginNeedsAServer(t *testing.T) {
	t.Parallel()
	c, _, _ := testCLI(t, t.TempDir(), nil)
	err := dispatch(t.Context(), "login", nil, c)
	if err == nil || !strings.Contains(err.Error(), "--server") {
		t.Fatalf("login without a server: %v", err)
	}
	c, _, _ = testCLI(t, t.TempDir(), map[string]string{"PERCH_SERVER": "perch.example.com"})
	if err := dispatch(t.Context(), "login", nil, c); err == nil || !strings.Contains(err.Error(), "not a server URL") {
		t.Fatalf("login with a bad PERCH_SERVER: %v", err)
	}
}

// TestLogout ends the session on the server, so its refresh token no longer
// works anywhere, and forgets it here.
func TestLogout(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	dir := t.TempDir()
	st := u.signInTo(t, dir, base)
	c, stdout, _ := testCLI(t, dir, nil)
	if err := dispatch(t.Context(), "logout", nil, c); err != nil {
		t.Fatal(err)
	}
	if want := "Signed out of " + base + ".\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	if status, body := call(t, "POST", base+"/api/v1/auth/refresh", "", map[string]string{"refresh_token": u.session.RefreshToken}); status != 401 {
		t.Fatalf("refresh after logout: %d %v", status, body)
	}
	if _, err := st.Get(base); !errors.Is(err, creds.ErrNotSignedIn) {
		t.Fatalf("still stored: %v", err)
	}
	if err := dispatch(t.Context(), "logout", nil, c); err == nil || !strings.Contains(err.Error(), "not signed in") {
		t.Fatalf("second logout: %v", err)
	}
}

// A server that cannot end the session does not keep the sign-in here.
func TestLogoutForgetsEvenWhenTheServerFails(t *testing.T) {
	t.Parallel()
	gone := "http://127.0.0.1:1" // nothing listens on port 1
	dir := t.TempDir()
	st, _ := creds.Open(dir)
	st.Put(&creds.SignIn{Server: gone, AccessToken: "pac_x", RefreshToken: "prf_x"})
	c, _, stderr := testCLI(t, dir, nil)
	if err := dispatch(t.Context(), "logout", []string{"--server", gone}, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "did not end the session") || !strings.Contains(stderr.String(), "forgetting it here anyway") {
		t.Errorf("stderr %q", stderr)
	}
	if _, err := st.Get(gone); !errors.Is(err, creds.ErrNotSignedIn) {
		t.Fatalf("still stored: %v", err)
	}
}

// The callback page ends the server's message with one full stop, not two.
func TestFailedSignInSaysItOnce(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		fmt.Errorf("sign-in failed: %s", message(perch.Errorf(perch.EUNAUTHORIZED, "The sign-in request has expired."))),
		errors.New("sign-in failed: connection refused"),
	} {
		got := failedSignIn(err)
		if strings.Contains(got, "..") || !strings.HasSuffix(got, ". Run perch login again.") {
			t.Errorf("failedSignIn(%q) = %q", err, got)
		}
	}
}
