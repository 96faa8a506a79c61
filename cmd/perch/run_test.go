package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/perch-dev/perch/internal/mail/mailtest"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/testenv"
)

func TestMain(m *testing.M) {
	// The end-to-end tests of the client run perch as a child process: this
	// very binary, told by PERCH_RUN_MAIN to be perch instead of the tests.
	if os.Getenv("PERCH_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	// Goroutines running before any test are the packages' own from their
	// initialisation (the WebSocket library's default engine), not leaks.
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// lineWriter collects output and tells when a line matching re appears.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	re    *regexp.Regexp
	found chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := w.re.FindStringSubmatch(w.buf.String()); m != nil && w.found != nil {
		w.found <- m[1]
		w.found = nil
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startServer runs `perch serve` in-process on a free port and returns its
// base URL; the server stops, and must stop cleanly, when the test ends.
func startServer(t *testing.T, env map[string]string) string {
	t.Helper()
	base, _ := startServerOutput(t, env, io.Discard)
	return base
}

// startServerLogging is startServer with the server's log written to logs.
func startServerLogging(t *testing.T, env map[string]string, logs io.Writer) string {
	t.Helper()
	base, _ := startServerOutput(t, env, logs)
	return base
}

// startServerOutput is startServer with the server's log written to logs
// that also returns what serve printed.
func startServerOutput(t *testing.T, env map[string]string, logs io.Writer) (string, *lineWriter) {
	t.Helper()
	env["PERCH_LISTEN"] = "127.0.0.1:0"
	if env["PERCH_DATABASE_URL"] == "" {
		env["PERCH_DATABASE_URL"] = filepath.Join(t.TempDir(), "perch.db")
	}
	found := make(chan string, 1)
	out := &lineWriter{re: regexp.MustCompile(`listening on (http://\S+)`), found: found}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve"}, func(k string) string { return env[k] }, nil, out, logs)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve returned %v", err)
		}
	})
	select {
	case base := <-found:
		waitHealthy(t, base)
		return base, out
	case err := <-done:
		done <- nil // for the cleanup, which waits for serve to return
		t.Fatalf("serve exited early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start listening")
	}
	return "", nil
}

func waitHealthy(t *testing.T, base string) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, func() bool {
		res, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	}, "server never became healthy")
}

// call sends a JSON request and decodes the JSON answer.
func call(t *testing.T, method, url, token string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, r)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

// TestNewcomersPath follows the README: start the server, register, list the
// plans, make an API token and use it.
func TestNewcomersPath(t *testing.T) {
	t.Parallel()
	base := startServer(t, map[string]string{})
	status, reg := call(t, "POST", base+"/api/v1/auth/register", "", map[string]string{"name": "Ada", "email": "ada@example.com", "password": "correct horse battery"})
	if status != 201 {
		t.Fatalf("register: %d %v", status, reg)
	}
	access := reg["data"].(map[string]any)["access_token"].(string)
	if status, plans := call(t, "GET", base+"/api/v1/billing/plans", "", nil); status != 200 || len(plans["data"].([]any)) != 3 {
		t.Fatalf("plans: %d %v", status, plans)
	}
	status, tok := call(t, "POST", base+"/api/v1/tokens", access, map[string]string{"label": "laptop"})
	if status != 201 {
		t.Fatalf("token: %d %v", status, tok)
	}
	raw := tok["data"].(map[string]any)["raw_token"].(string)
	status, me := call(t, "GET", base+"/api/v1/users/me", raw, nil)
	if status != 200 || me["data"].(map[string]any)["email"] != "ada@example.com" {
		t.Fatalf("me: %d %v", status, me)
	}
}

// TestMailGoesThroughTheConfiguredServer starts perch serve with
// PERCH_SMTP_URL pointing at a real SMTP server and follows the
// verification link it mails.
func TestMailGoesThroughTheConfiguredServer(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	base := startServer(t, map[string]string{"PERCH_SMTP_URL": smtp.URL(), "PERCH_MAIL_FROM": "Perch <perch@example.com>", "PERCH_BASE_URL": "https://perch.example.com"})
	call(t, "POST", base+"/api/v1/auth/register", "", map[string]string{"name": "Ada", "email": "ada@example.com", "password": "correct horse battery"})
	link := smtp.WaitFor(t, "ada@example.com").Link()
	token, ok := strings.CutPrefix(link, "https://perch.example.com/verify-email?token=")
	if !ok {
		t.Fatalf("link = %q", link)
	}
	if status, body := call(t, "POST", base+"/api/v1/auth/verify-email", "", map[string]string{"token": token}); status != 200 || body["data"].(map[string]any)["email_verified"] != true {
		t.Fatalf("verify: %d %v", status, body)
	}
}

func TestAdminGrantAndMigrate(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "perch.db")
	env := func(k string) string {
		if k == "PERCH_DATABASE_URL" {
			return db
		}
		return ""
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"migrate"}, env, nil, &out, io.Discard); err != nil || !strings.Contains(out.String(), "up to date") {
		t.Fatalf("migrate: %v %q", err, out.String())
	}
	err := run(context.Background(), []string{"admin", "grant", "nobody@example.com"}, env, nil, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("granting an unknown account: %v", err)
	}

	base := startServer(t, map[string]string{"PERCH_DATABASE_URL": db})
	_, reg := call(t, "POST", base+"/api/v1/auth/register", "", map[string]string{"name": "Ada", "email": "ada@example.com", "password": "correct horse battery"})
	access := reg["data"].(map[string]any)["access_token"].(string)
	if err := run(context.Background(), []string{"admin", "grant", "ADA@example.com"}, env, nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if status, _ := call(t, "POST", base+"/api/v1/admin/announcements", access, map[string]string{"title": "Hello", "body": "World"}); status != 201 {
		t.Fatalf("admin after grant: %d", status)
	}
}

func TestBadConfigurationStopsStartUp(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"PERCH_LISTEN":              "nowhere",
		"PERCH_RATE_LIMIT_USER":     "lots",
		"PERCH_ANONYMOUS_BROADCAST": "maybe",
		"PERCH_TRUSTED_PROXIES":     "10.0.0.0/8, not-a-cidr",
		"PERCH_BASE_URL":            "ftp://x",
		"PERCH_METRICS_TOKEN":       "short",

		"PERCH_MAX_NOTIFICATIONS_PER_DELIVERY": "0",
		"PERCH_REGIONS":                        "us=https://perch.example.com",
	}
	err := run(context.Background(), []string{"serve", "--retention", "5m"}, func(k string) string { return env[k] }, nil, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("serve started with a bad configuration")
	}
	for _, want := range []string{"PERCH_LISTEN", "PERCH_METRICS_TOKEN", "PERCH_RATE_LIMIT_USER", "PERCH_ANONYMOUS_BROADCAST", "not-a-cidr", "PERCH_BASE_URL", "--retention", "PERCH_MAX_NOTIFICATIONS_PER_DELIVERY", "PERCH_REGIONS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s:\n%v", want, err)
		}
	}
}

func TestFlagsWinOverVariables(t *testing.T) {
	t.Parallel()
	c, err := parseConfig("serve", []string{"--rate-limit-auth", "5/1m"}, func(k string) string {
		return map[string]string{"PERCH_RATE_LIMIT_AUTH": "50/1m", "PERCH_ADMIN_EMAILS": "a@example.com, b@example.com"}[k]
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.AuthLimit.Count != 5 || c.UserLimit.Count != 120 || len(c.AdminEmails) != 2 || c.DatabaseURL != "perch.db" || c.Listen != ":8080" || !c.AnonymousBroadcast || c.MaxPerDelivery != 100 {
		t.Fatalf("config = %+v", c)
	}
}

func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	var errOut bytes.Buffer
	if err := run(context.Background(), []string{"fly"}, func(string) string { return "" }, nil, io.Discard, &errOut); err == nil || !strings.Contains(errOut.String(), `unknown command "fly"`) {
		t.Fatalf("err = %v, stderr = %q", err, errOut.String())
	}
}

// TestMetricsApart serves /metrics on an address of its own, behind a
// token: the main address has no /metrics.
func TestMetricsApart(t *testing.T) {
	t.Parallel()
	const token = "0123456789abcdef-scrape"
	base, out := startServerOutput(t, map[string]string{"PERCH_METRICS_LISTEN": "127.0.0.1:0", "PERCH_METRICS_TOKEN": token}, io.Discard)
	m := regexp.MustCompile(`perch metrics on (http://\S+)/metrics`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("serve did not say where the metrics are:\n%s", out)
	}
	metrics := m[1]
	if status, body := call(t, "GET", base+"/metrics", token, nil); status != 404 || body["error"].(map[string]any)["code"] != "not_found" {
		t.Fatalf("/metrics on the main address: %d %v", status, body)
	}
	if status, body := call(t, "GET", metrics+"/metrics", "", nil); status != 401 || body["error"].(map[string]any)["code"] != "unauthorized" {
		t.Fatalf("/metrics without the token: %d %v", status, body)
	}
	if status, body := call(t, "GET", metrics+"/healthz", token, nil); status != 404 || body["error"].(map[string]any)["code"] != "not_found" {
		t.Fatalf("/healthz on the metrics address: %d %v", status, body)
	}
	req, _ := http.NewRequest("GET", metrics+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.Contains(string(raw), `perch_http_requests_total{method="GET",route="GET /healthz",status="200"}`) {
		t.Fatalf("/metrics with the token: %d %.500s", res.StatusCode, raw)
	}
}

func TestMetricsSettings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want string // in the error; "" for none
	}{
		{map[string]string{"PERCH_METRICS_LISTEN": "127.0.0.1:9090", "PERCH_METRICS_TOKEN": "0123456789abcdef"}, ""},
		{map[string]string{"PERCH_METRICS_LISTEN": "9090"}, `PERCH_METRICS_LISTEN="9090": want host:port`},
		{map[string]string{"PERCH_METRICS_LISTEN": ":8080"}, "must differ from the main address"},
		{map[string]string{"PERCH_METRICS_LISTEN": "127.0.0.1:0", "PERCH_LISTEN": "127.0.0.1:0"}, ""}, // two free ports
		{map[string]string{"PERCH_METRICS_TOKEN": "0123456789abcdef 0123"}, "PERCH_METRICS_TOKEN"},
		{map[string]string{"PERCH_METRICS_TOKEN": "0123456789abcde"}, "at least 16 characters"},
	} {
		cfg, err := parseConfig("serve", nil, func(k string) string { return c.env[k] }, io.Discard)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.env, err)
		case c.want == "" && (cfg.MetricsListen != c.env["PERCH_METRICS_LISTEN"] || cfg.MetricsToken != c.env["PERCH_METRICS_TOKEN"]):
			t.Errorf("%v: config %+v", c.env, cfg)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: error %v, want one naming %q", c.env, err, c.want)
		}
	}
	cfg, err := parseConfig("serve", []string{"--metrics-listen", "127.0.0.1:9100", "--metrics-token", "abcdefghijklmnopq"}, func(string) string { return "" }, io.Discard)
	if err != nil || cfg.MetricsListen != "127.0.0.1:9100" || cfg.MetricsToken != "abcdefghijklmnopq" {
		t.Fatalf("flags: %+v %v", cfg, err)
	}
}

// TestSQLiteSyncSetting: PERCH_SQLITE_SYNC (--sqlite-sync) is normal unless
// set, takes full, and refuses anything else by name.
func TestSQLiteSyncSetting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env, flag string
		want      store.Sync
		err       string
	}{
		{"", "", store.SyncNormal, ""},
		{"full", "", store.SyncFull, ""},
		{"full", "normal", store.SyncNormal, ""},
		{"", "full", store.SyncFull, ""},
		{"off", "", "", `PERCH_SQLITE_SYNC="off": want full or normal`},
		{"", "FULL", "", `--sqlite-sync="FULL": want full or normal`},
	} {
		var args []string
		if c.flag != "" {
			args = []string{"--sqlite-sync", c.flag}
		}
		cfg, err := parseConfig("serve", args, func(k string) string { return map[string]string{"PERCH_SQLITE_SYNC": c.env}[k] }, io.Discard)
		switch {
		case c.err == "" && (err != nil || cfg.SQLiteSync != c.want):
			t.Errorf("env %q, flag %q: %v %v, want %q", c.env, c.flag, cfg, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("env %q, flag %q: error %v, want one saying %s", c.env, c.flag, err, c.err)
		}
	}
}

// TestServeWarnsWhileTokenlessDeliveriesBroadcast: the default that lets
// anyone with the address reach every user is said out loud at start-up.
func TestServeWarnsWhileTokenlessDeliveriesBroadcast(t *testing.T) {
	t.Parallel()
	const warning = "webhook deliveries without a token are broadcast to every user"
	on := &syncBuffer{}
	startServerLogging(t, map[string]string{}, on)
	if !strings.Contains(on.String(), warning) {
		t.Fatalf("no warning with the default:\n%s", on)
	}
	off := &syncBuffer{}
	startServerLogging(t, map[string]string{"PERCH_ANONYMOUS_BROADCAST": "false"}, off)
	if strings.Contains(off.String(), warning) {
		t.Fatalf("a warning with broadcasts off:\n%s", off)
	}
}

// TestServeJoinsEveryGoroutine: once serve returns, nothing it started is
// left running: the writer, the workflow worker, the periodic jobs, the
// listeners and the WebSocket event loop are all joined. (Not parallel:
// other tests' goroutines would be counted.)
func TestServeJoinsEveryGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	env := map[string]string{"PERCH_LISTEN": "127.0.0.1:0", "PERCH_DATABASE_URL": filepath.Join(t.TempDir(), "perch.db")}
	found := make(chan string, 1)
	out := &lineWriter{re: regexp.MustCompile(`listening on (http://\S+)`), found: found}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve"}, func(k string) string { return env[k] }, nil, out, io.Discard)
	}()
	select {
	case base := <-found:
		waitHealthy(t, base)
	case err := <-done:
		cancel()
		t.Fatalf("serve exited early: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("serve did not start listening")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v", err)
	}
	http.DefaultClient.CloseIdleConnections() // the test's own side of its requests
	goleak.VerifyNone(t, before)
}
