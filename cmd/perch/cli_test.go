package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
	"github.com/perch-dev/perch/internal/apitest"
	"github.com/perch-dev/perch/internal/creds"
	"github.com/perch-dev/perch/internal/testenv"
)

// syncBuffer is output that a test reads while a command still writes it.
type syncBuffer struct{ apitest.Log }

// waitFor polls until the output matches pattern and returns the match and
// its groups; it fails the test after a while.
func (s *syncBuffer) waitFor(t *testing.T, pattern string) []string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	var m []string
	testenv.EventuallyNil(t, 20*time.Second, func() error {
		if m = re.FindStringSubmatch(s.String()); m == nil {
			return fmt.Errorf("no %q in the output:\n%s", pattern, s.String())
		}
		return nil
	})
	return m
}

// eventually polls cond until it holds; it fails the test after a while.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, cond, "still waiting for %s", what)
}

// clientServer starts perch serve for the client commands' tests, with
// sign-in limits that many sign-ins in one test do not reach.
func clientServer(t *testing.T) string {
	t.Helper()
	return startServer(t, map[string]string{"PERCH_RATE_LIMIT_AUTH": "1000/1m"})
}

// testUser is a registered user with a webhook token for the inbound
// receiver, addressed to them.
type testUser struct {
	base    string
	api     *client.Client
	session *client.Session
	webhook string // whk_…
}

func newTestUser(t *testing.T, base, name string) *testUser {
	t.Helper()
	api := client.New(base)
	s, err := api.Register(t.Context(), name, strings.ToLower(name)+"@example.com", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	wh, err := api.CreateWebhookToken(t.Context(), client.WebhookTokenInput{Label: "cli", Sender: perch.SenderInbound, Scope: perch.ScopeUser})
	if err != nil {
		t.Fatal(err)
	}
	return &testUser{base: base, api: api, session: s, webhook: wh.RawToken}
}

// signInTo stores the user's session as the sign-in for server in dir, as
// perch login would.
func (u *testUser) signInTo(t *testing.T, dir, server string) *creds.Store {
	t.Helper()
	st, err := creds.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(&creds.SignIn{Server: server, Email: u.session.User.Email, AccessToken: u.session.AccessToken, RefreshToken: u.session.RefreshToken}); err != nil {
		t.Fatal(err)
	}
	return st
}

// send delivers an event for the user and returns its id.
func (u *testUser) send(t *testing.T, e client.InboundEvent) string {
	t.Helper()
	r, err := u.api.Deliver(t.Context(), u.webhook, e)
	if err != nil || len(r.IDs) != 1 {
		t.Fatalf("Deliver: %+v, %v", r, err)
	}
	return r.IDs[0]
}

// testCLI returns the client commands' surroundings for a test: the
// credentials in dir, env as the environment, output to buffers, quick
// polls and reconnections, and no browser unless the test sets one.
func testCLI(t *testing.T, dir string, env map[string]string) (c *cli, stdout, stderr *syncBuffer) {
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	getenv := func(k string) string {
		if k == "PERCH_CONFIG_DIR" {
			return dir
		}
		return env[k]
	}
	c = newCLI(getenv, nil, stdout, stderr)
	c.openBrowser = func(u string) error {
		t.Errorf("a browser was opened for %s", u)
		return errors.New("no browser in tests")
	}
	c.pollEvery = 5 * time.Millisecond
	c.callbackGrace = 0 // no browser follows the approval unless the test says so
	c.callbackWait = 0
	c.clientOpts = []client.Option{client.WithReconnectDelay(5*time.Millisecond, 50*time.Millisecond)}
	return c, stdout, stderr
}

// background runs a command until the test stops it; stop cancels its
// context and returns what it returned.
func background(t *testing.T, c *cli, args ...string) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- dispatch(ctx, args[0], args[1:], c) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				err = fmt.Errorf("perch %s did not stop", args[0])
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

func TestCodeVerifierAndChallenge(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 50 {
		v := newCodeVerifier()
		if len(v) != 64 || !perch.ValidCodeVerifier(v) || strings.Trim(v, unreserved) != "" {
			t.Fatalf("verifier %q", v)
		}
		if !perch.VerifierMatches(v, codeChallenge(v)) {
			t.Fatalf("challenge of %q does not match it", v)
		}
		seen[v] = true
	}
	if len(seen) != 50 {
		t.Fatal("verifiers repeat")
	}
	// RFC 7636, appendix B.
	if got := codeChallenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"); got != "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" {
		t.Fatalf("challenge = %s", got)
	}
}

func TestFormatLine(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		n    perch.Notification
		want string
	}{
		{perch.Notification{CreatedAt: at, Severity: "warning", Tab: "Deploys", Title: "Deploy finished", Message: "api v1.2.3\n  is live", URL: "https://ci.example.com/1"},
			"2026-11-22 09:00:00  [warning] Deploys: Deploy finished — api v1.2.3 is live  https://ci.example.com/1"},
		{perch.Notification{CreatedAt: at, Severity: "info", Tab: "Inbound", Title: "Ping"},
			"2026-11-22 09:00:00  [info] Inbound: Ping"},
		{perch.Notification{CreatedAt: at, Severity: "info", Tab: "Inbound", Title: "Ping", Priority: perch.PriorityDefault},
			"2026-11-22 09:00:00  [info] Inbound: Ping"},
		{perch.Notification{ID: "42", CreatedAt: at, Severity: "error", Priority: perch.PriorityUrgent, Tab: "Checkout",
			Title: "Error rate 7.2%", Message: "See the **[runbook](https://runbooks.example.com/c)**.", Markdown: true,
			Tags: []string{"rotating_light", "prod", "eu-west"}, Actions: []perch.NotificationAction{
				{ID: "a1", Type: perch.ActionHTTP, Label: "Roll  back"},
				{ID: "a2", Type: perch.ActionView, Label: "Dashboard", URL: "https://grafana.example.com/d/c"},
			}},
			"2026-11-22 09:00:00  [error, urgent] Checkout: 🚨 Error rate 7.2% — See the runbook.  #prod #eu-west  (actions of 42: a1 Roll back, a2 Dashboard https://grafana.example.com/d/c)"},
		{perch.Notification{CreatedAt: at, Severity: "info", Priority: perch.PriorityMin, Title: "Backup done", Message: "**not** Markdown"},
			"2026-11-22 09:00:00  [info, min] Backup done — **not** Markdown"},
	} {
		if got := formatLine(&tt.n, time.UTC); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
	if got := formatLine(&perch.Notification{CreatedAt: at, Severity: "info", Title: "x"}, time.FixedZone("CET", 3600)); !strings.HasPrefix(got, "2026-11-22 10:00:00") {
		t.Errorf("local time: %q", got)
	}
}

// A blip shorter than quietFor is not worth a line; a longer outage is told
// once, and so is the way back.
func TestConnWatch(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	w := &connWatch{out: &out, server: "https://perch.example.com", quietFor: time.Hour}
	w.down(errors.New("refused"))
	w.up()
	w.stop()
	if out.String() != "" {
		t.Fatalf("a blip was reported: %q", out.String())
	}

	w = &connWatch{out: &out, server: "https://perch.example.com", quietFor: time.Millisecond}
	w.down(errors.New("first"))
	out.waitFor(t, "disconnected")
	w.down(&perch.Error{Code: perch.EUNAVAILABLE, Message: "Down for maintenance."})
	w.up()
	w.up()
	w.stop()
	if want := "disconnected from https://perch.example.com: first; reconnecting…\nreconnected to https://perch.example.com\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
}

func TestMessage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want string
	}{
		{perch.Errorf(perch.EUNAUTHORIZED, "The token is not a webhook token (whk_…)."), "The token is not a webhook token (whk_…)."},
		{&perch.Error{Code: perch.EBADREQUEST, Message: "Bad.", Fields: map[string]string{"b": "is wrong", "a": "is missing"}}, "Bad. (a: is missing) (b: is wrong)"},
		{fmt.Errorf("perch: GET http://x/y: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), "GET http://x/y: dial: connection refused"},
	} {
		if got := message(tt.err); got != tt.want {
			t.Errorf("message(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestHelpAndBadFlags(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"login", "logout", "listen", "send", "scheduled"} {
		var errOut bytes.Buffer
		if err := run(t.Context(), []string{cmd, "-h"}, func(string) string { return "" }, nil, io.Discard, &errOut); err != nil || !strings.Contains(errOut.String(), "usage: perch "+cmd) {
			t.Errorf("%s -h: %v\n%s", cmd, err, errOut.String())
		}
		if err := run(t.Context(), []string{cmd, "--nope"}, func(string) string { return "" }, nil, io.Discard, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%s --nope: %v", cmd, err)
		}
		if err := run(t.Context(), []string{cmd, "stray"}, func(string) string { return "" }, nil, io.Discard, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%s stray: %v", cmd, err)
		}
	}
}
