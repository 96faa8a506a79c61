package web_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/apitest"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/ingest"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/mail/mailtest"
	"github.com/perch-dev/perch/internal/ratelimit"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/web"
	"github.com/perch-dev/perch/internal/worker"
)

// site is a whole Perch as cmd/perch serve composes it: the API
// (server.New) and the dashboard (web.New, calling the API in-process)
// under server.WithPages, on a real listener, over a real store, with real
// mail (mailtest), fan-out, hub and ingest writer. Tests reach it over HTTP
// only, as browsers and clients do.
type site struct {
	t       testing.TB
	srv     *server.Server
	ts      *httptest.Server
	http    *http.Client // follows no redirects
	store   *store.Store
	clock   *storetest.Clock
	logs    *syncWriter
	mail    *mailtest.Server
	metrics *prometheus.Registry
	runs    *worker.Recorder // workflow runs, stats and kept payloads: Wait writes them
}

// newSite serves a site over s at http://127.0.0.1:<port>, with generous
// rate limits and http://perch.test as its public address; adjust changes
// the server's options before it is built (a nil Mailer is a server without
// SMTP, whose mail waits in the outbox). The dashboard's options follow the
// server's, as serve.go sets them.
func newSite(t testing.TB, s *store.Store, adjust ...func(*server.Options)) *site {
	t.Helper()
	return newSiteOn(t, listen(t), s, adjust...)
}

// listen opens a loopback listener for a site.
func listen(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return ln
}

// fastHashes keep argon2id real but cheap in tests.
var fastHashes = auth.Params{Memory: 64, Time: 1, Threads: 1}

// newSiteOn is newSite on ln, whose address a test may need before the
// site is built (to make it the public address).
func newSiteOn(t testing.TB, ln net.Listener, s *store.Store, adjust ...func(*server.Options)) *site {
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
	o := server.Options{
		Store:   s,
		Logger:  logger,
		Metrics: server.MetricsOptions{Registry: prometheus.NewRegistry()},
		Fanout:  fanout.NewLocal(),
		Hub:     hub.New(),
		Webhooks: server.WebhookOptions{
			BroadcastLimit:     perch.Limit{Count: 1000, Period: time.Minute},
			AnonymousBroadcast: true,
		},
		Mailer:      mail.NewMailer(mail.StaticSource(cfg, true), s, nil, logger),
		Limiter:     limits,
		BaseURL:     "http://perch.test",
		AdminEmails: []string{"root@example.com"},
		// call says where a request comes from through this proxy (see
		// call), as a load balancer in front of Perch would.
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Limits: server.LimitOptions{
			User: perch.Limit{Count: 1000, Period: time.Minute},
			Auth: perch.Limit{Count: 1000, Period: time.Minute},
		},
		PasswordParams: fastHashes,
		Now:            clock.Now,
	}
	for _, f := range adjust {
		f(&o)
	}
	outbox := o.Mailer == nil
	if outbox {
		// The outbox seals what it keeps, as serve's does, under a key of
		// the test's own.
		box, err := secrets.New(secrets.NewKey())
		if err != nil {
			t.Fatal(err)
		}
		o.Mailer = mail.NewMailer(nil, s, box, logger)
	}
	o.Ingest = ingest.New(s, o.Fanout, logger)
	if o.Runs == nil {
		o.Runs = worker.NewRecorder(s, logger)
	}
	writerCtx, stopWriter := context.WithCancel(context.Background())
	writerDone := make(chan struct{})
	go func() { o.Ingest.Run(writerCtx); close(writerDone) }()
	t.Cleanup(func() { stopWriter(); <-writerDone })
	srv := server.New(o)
	subCtx, unsubscribe := context.WithCancel(context.Background())
	if err := o.Fanout.Subscribe(subCtx, srv.Deliver, srv.Lost); err != nil {
		t.Fatal(err)
	}

	// As serve.go: the dashboard beside the API, one middleware around both.
	dashboard := web.New(web.Options{API: srv.API(), BaseURL: o.BaseURL, Logger: logger,
		MailOutbox: outbox, AnonymousBroadcast: o.Webhooks.AnonymousBroadcast,
		GitHubSigned: o.Webhooks.GitHubSecret != "", PagerDutySigned: o.Webhooks.PagerDutySecret != "", SignInProviders: srv.SignInProviders(), Now: clock.Now,
		Billing: o.Billing.Provider != nil})
	ts := httptest.NewUnstartedServer(srv.WithPages(dashboard))
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(func() {
		// WebSockets first: they would keep ts.Close waiting.
		srv.Close(context.Background())
		ts.Close()
		unsubscribe()
	})
	client := &http.Client{Transport: ts.Client().Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &site{t: t, srv: srv, ts: ts, http: client, store: s, clock: clock, logs: logs, mail: smtp, metrics: o.Metrics.Registry, runs: o.Runs}
}

// response is an answer with its body decoded when it is JSON.
type response = apitest.Response

// expect fails the test unless res has the given status (and, for errors,
// the API's error shape with the code that goes with it).
var expect = apitest.Expect

// call sends a request over HTTP and does not follow a redirect; body may
// be nil, a string (sent as is) or a value (sent as JSON). Extra headers
// come in pairs. The request comes from 192.0.2.1, or from the address of
// a "RemoteAddr" pair, through the loopback proxy the site trusts.
func (a *site) call(method, path, token string, body any, headers ...string) *response {
	a.t.Helper()
	req, err := http.NewRequest(method, a.ts.URL+path, apitest.Body(a.t, body))
	if err != nil {
		a.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("X-Forwarded-For", "192.0.2.1")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "RemoteAddr" {
			host, _, _ := net.SplitHostPort(headers[i+1])
			req.Header.Set("X-Forwarded-For", host)
			continue
		}
		req.Header.Add(headers[i], headers[i+1])
	}
	res, err := a.http.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	return apitest.NewResponse(a.t, method+" "+path, res.StatusCode, res.Header, raw)
}

// account is a registered user and their first sign-in.
type account struct {
	ID, Email, OrgID string
	Access, Refresh  string
}

const goodPassword = "correct horse battery"

// register signs up a user named name, with an address derived from it,
// through the API.
func (a *site) register(name string) *account {
	a.t.Helper()
	a.clock.Advance(time.Second) // sign-ups never share an instant
	email := emailFor(name)
	res := expect(a.t, a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": name, "email": email, "password": goodPassword}), 201)
	d := res.Data()
	u := d["user"].(map[string]any)
	return &account{ID: u["id"].(string), Email: email, OrgID: u["org_id"].(string), Access: d["access_token"].(string), Refresh: d["refresh_token"].(string)}
}

// emailFor is the address register derives from a name.
var emailFor = apitest.EmailFor

// syncWriter lets background goroutines (mail) log while a test reads.
type syncWriter = apitest.Log
