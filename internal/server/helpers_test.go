package server

import (
	"context"
	"crypto/rsa"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/apitest"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/ingest"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/mail/mailtest"
	"github.com/perch-dev/perch/internal/ratelimit"
	"github.com/perch-dev/perch/internal/samltest"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/worker"
)

// fastHashes keep argon2id real but cheap in tests.
var fastHashes = auth.Params{Memory: 64, Time: 1, Threads: 1}

// api drives a Server in-process, the way a client would over HTTP.
type api struct {
	t      testing.TB
	srv    *Server
	store  *store.Store
	clock  *storetest.Clock
	limits *ratelimit.Memory
	logs   *syncWriter
	mail   *mailtest.Server
	// worker is the server's workflow worker: tests run its Tick (or Run)
	// themselves, and setWorker changes its options.
	worker     *worker.Worker
	workerOpts worker.Options
}

// newAPI returns a server over s with generous rate limits; adjust changes
// its options before it is built.
func newAPI(t testing.TB, s *store.Store, adjust ...func(*Options)) *api {
	t.Helper()
	clock := storetest.NewClock()
	s.Now = clock.Now
	limits := ratelimit.NewMemory()
	limits.Now = clock.Now
	logs := &syncWriter{}
	smtp := mailtest.Start(t)
	cfg, err := mail.ParseURL(smtp.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.From = "Perch <perch@example.com>"
	logger := slog.New(slog.NewTextHandler(logs, nil))
	// Mail follows the admins' e-mail settings, over the test server as the
	// environment's; secrets are sealed under a key of the test's own.
	box, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	settings := mail.NewSettings(s, box, &cfg)
	o := Options{
		Store:  s,
		Logger: logger,
		Fanout: fanout.NewLocal(),
		Hub:    hub.New(hub.WithClock(clock.Now)),
		Webhooks: WebhookOptions{
			BroadcastLimit:     perch.Limit{Count: 1000, Period: time.Minute},
			AnonymousBroadcast: true,
		},
		Mailer:       mail.NewMailer(settings.Source, s, box, logger),
		MailSettings: settings,
		Secrets:      box,
		Limiter:      limits,
		BaseURL:      "http://perch.test",
		AdminEmails:  []string{"root@example.com"},
		Limits: LimitOptions{
			User: perch.Limit{Count: 1000, Period: time.Minute},
			Auth: perch.Limit{Count: 1000, Period: time.Minute},
		},
		PasswordParams: fastHashes,
		Now:            clock.Now,
	}
	o.SSO.NewKey = func() (*rsa.PrivateKey, error) { return samltest.Key(t), nil }
	for _, f := range adjust {
		f(&o)
	}
	// The writer publishes to the fan-out the options settle on, which
	// instances of one test may share.
	o.Ingest = ingest.New(s, o.Fanout, logger)
	writerCtx, stopWriter := context.WithCancel(context.Background())
	writerDone := make(chan struct{})
	go func() { o.Ingest.Run(writerCtx); close(writerDone) }()
	t.Cleanup(func() { stopWriter(); <-writerDone })
	// The worker is built as serve builds it, and not run: tests tick it.
	wo := worker.Options{Store: s, Ingest: o.Ingest, Mailer: o.Mailer, Secrets: o.Secrets, Logger: logger,
		BaseURL: o.BaseURL, Now: o.Now, Billing: o.Billing.Provider}
	o.Worker = worker.New(wo)
	srv := New(o)
	if _, bench := t.(*testing.B); !bench {
		srv.handler = checkResponses(t, srv, srv.handler)
	}
	subCtx, unsubscribe := context.WithCancel(context.Background())
	if err := o.Fanout.Subscribe(subCtx, srv.Deliver, srv.Lost); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()); unsubscribe() })
	return &api{t: t, srv: srv, store: s, clock: clock, limits: limits, logs: logs, mail: smtp, worker: o.Worker, workerOpts: wo}
}

// setWorker replaces the server's workflow worker with one whose options
// adjust changed (private addresses allowed, a stub resolver, the poll).
func (a *api) setWorker(adjust func(*worker.Options)) {
	o := a.workerOpts
	adjust(&o)
	a.worker = worker.New(o)
	a.srv.worker = a.worker
}

// response is an answer with its body decoded (apitest.Response).
type response = apitest.Response

// expect fails the test unless res has the given status (and, for errors,
// the error shape with the code that goes with it).
var expect = apitest.Expect

// call sends a request; body may be nil, a string (sent as is) or a value
// (sent as JSON). Extra headers come in pairs.
func (a *api) call(method, path, token string, body any, headers ...string) *response {
	a.t.Helper()
	r := apitest.Body(a.t, body)
	req := httptest.NewRequest(method, path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "RemoteAddr" {
			req.RemoteAddr = headers[i+1]
			continue
		}
		req.Header.Add(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	a.srv.ServeHTTP(rec, req)
	return apitest.NewResponse(a.t, method+" "+path, rec.Code, rec.Header(), rec.Body.Bytes())
}

// account is a registered user and their first sign-in.
type account struct {
	ID, Email, OrgID       string
	Access, Refresh, Token string // Token: an API token, when made
}

const goodPassword = "correct horse battery"

// register signs up a user named name with an address derived from it.
func (a *api) register(name string) *account {
	a.t.Helper()
	a.clock.Advance(time.Second) // sign-ups never share an instant
	email := emailFor(name)
	res := expect(a.t, a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": name, "email": email, "password": goodPassword}), 201)
	d := res.Data()
	u := d["user"].(map[string]any)
	return &account{ID: u["id"].(string), Email: email, OrgID: u["org_id"].(string), Access: d["access_token"].(string), Refresh: d["refresh_token"].(string)}
}

// apiToken creates an API token for acc and remembers its raw value.
func (a *api) apiToken(acc *account, label string) (id string) {
	a.t.Helper()
	res := expect(a.t, a.call("POST", "/api/v1/tokens", acc.Access, map[string]string{"label": label}), 201)
	acc.Token = res.Data()["raw_token"].(string)
	return res.Data()["token"].(map[string]any)["id"].(string)
}

// platformAdmin registers name and grants them the platform-admin role, as
// perch admin grant does.
func (a *api) platformAdmin(name string) *account {
	a.t.Helper()
	acc := a.register(name)
	if err := a.store.GrantAdmin(a.t.Context(), acc.Email); err != nil {
		a.t.Fatal(err)
	}
	return acc
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

// syncWriter lets background goroutines (mail) log while a test reads.
type syncWriter = apitest.Log

// emailFor is the address register and invite derive from a name.
var emailFor = apitest.EmailFor

// tokenOf returns the token parameter of a mailed link whose path is path.
func tokenOf(tb testing.TB, link, path string) string {
	tb.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Path != path || u.Query().Get("token") == "" {
		tb.Fatalf("link %q is not %s?token=…", link, path)
	}
	if !strings.HasPrefix(link, "http://perch.test/") {
		tb.Fatalf("link %q is not on the base URL", link)
	}
	return u.Query().Get("token")
}

// invite has by invite a new person by e-mail, and that person register
// through the link the mail carries.
func (a *api) invite(by *account, name, role string) *account {
	a.t.Helper()
	a.clock.Advance(time.Second)
	email := emailFor(name)
	expect(a.t, a.call("POST", "/api/v1/org/invitations", by.Access, map[string]string{"email": email, "role": role}), 201)
	token := a.mailedToken(email, "/invitations/accept")
	res := expect(a.t, a.call("POST", "/api/v1/auth/register", "", map[string]string{
		"name": name, "email": email, "password": goodPassword, "invitation_token": token}), 201)
	d := res.Data()
	u := d["user"].(map[string]any)
	return &account{ID: u["id"].(string), Email: email, OrgID: u["org_id"].(string), Access: d["access_token"].(string), Refresh: d["refresh_token"].(string)}
}

// verifyEmail follows the verification link mailed to acc.
func (a *api) verifyEmail(acc *account) {
	a.t.Helper()
	token := a.mailedToken(acc.Email, "/verify-email")
	expect(a.t, a.call("POST", "/api/v1/auth/verify-email", "", map[string]string{"token": token}), 200)
}

// mailedToken waits for the next mail to `to` whose link opens path,
// passing over other mail (such as the verification mail of a new account),
// and returns the link's token.
func (a *api) mailedToken(to, path string) string {
	a.t.Helper()
	for {
		link := a.mail.WaitFor(a.t, to).Link()
		if u, err := url.Parse(link); err == nil && u.Path == path {
			return tokenOf(a.t, link, path)
		}
	}
}
