// Package server is Perch's HTTP edge: the JSON API under /api/v1, the
// webhook receivers, the WebSocket and the operational endpoints. Every
// route is listed in routes.go; handlers return errors and one writer turns
// them into the one error shape. The dashboard (internal/web) is
// composed beside it by WithPages and calls it in-process through API.
package server

import (
	"cmp"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/billing"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/ingest"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/netguard"
	"github.com/perch-dev/perch/internal/pagerduty"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/worker"
	"github.com/perch-dev/perch/internal/wsloop"
)

// DefaultMaxDeliveryNotifications is how many notifications one delivery may
// make unless configured otherwise.
const DefaultMaxDeliveryNotifications = 100

// Options are a Server's dependencies and settings.
type Options struct {
	Store   *store.Store
	Logger  *slog.Logger
	Limiter perch.RateLimiter
	Metrics MetricsOptions
	// Mailer sends account and invitation mail.
	Mailer mail.Sender
	// MailSettings is where mail goes, for the admins' e-mail settings: the
	// Mailer should follow its Source. nil: settings on Store and Secrets,
	// with none from the environment.
	MailSettings *mail.Settings
	// Secrets seals what the database keeps for the server to read back
	// (the SMTP password) and signs the newsletter's unsubscribe links;
	// nil when no key is set (PERCH_SECRET_KEY), and storing a secret or
	// sending the newsletter is then 503.
	Secrets *secrets.Box
	// Fanout carries notifications, read receipts and changes of access to
	// every instance; Hub is this instance's connected clients, subscribed to
	// Fanout by the caller; Ingest stores accepted events.
	Fanout perch.Fanout
	Hub    *hub.Hub
	Ingest *ingest.Writer

	BaseURL        string
	Region         string         // this deployment's region, sent as X-Perch-Region; "" for none
	Regions        []perch.Region // every region, for GET /api/v1/regions; empty: this one alone
	AdminEmails    []string       // platform admins by address, besides those granted in the store
	TrustedProxies []netip.Prefix // whose X-Forwarded-For is believed
	PasswordParams auth.Params

	Limits   LimitOptions
	Webhooks WebhookOptions
	Billing  BillingOptions
	SSO      SSOOptions
	Actions  ActionOptions

	// Worker carries out the workflows' jobs, which the receivers wake it
	// for; nil: nothing is woken (the caller's worker polls). Runs records
	// workflow runs and stats; nil: New makes one, and Close waits for it
	// either way.
	Worker *worker.Worker
	Runs   *worker.Recorder
	// Now is the server's clock (token expiry, rate-limit headers, when a
	// token was last used); nil means time.Now. Tests pass one they move.
	Now func() time.Time

	// WakeupHealth reports whether the wake-up channel between instances
	// works (nil error) or not; /readyz shows it as its "wakeups" check,
	// which leaves the instance ready (delivery goes on without wake-ups)
	// but says "degraded". nil: no such check.
	WakeupHealth func() error
}

// MetricsOptions configures the Prometheus metrics: Registry receives the
// server's collectors, and /metrics serves it, only to "Authorization:
// Bearer <Token>" when Token is set, and only through MetricsHandler (on a
// listener of its own) when Separate is set: the main handler then answers
// /metrics 404. A nil Registry: New makes one.
type MetricsOptions struct {
	Registry *prometheus.Registry
	Token    string
	Separate bool
}

// LimitOptions configures the rate limits of the API's callers and how long
// a request body may take.
type LimitOptions struct {
	User perch.Limit // per signed-in user, on authenticated endpoints
	Auth perch.Limit // per client IP, on sign-in endpoints
	// BodyTimeout is how long a request body may take to arrive once the
	// headers are in, but on the receivers; 0 means the default, 30 s.
	BodyTimeout time.Duration
	// Actions is how many notification actions one user may run, on top
	// of User; zero means DefaultActionLimit.
	Actions perch.Limit
}

// ActionOptions configures the notifications' actions
// (notification_actions.go). Their http requests go through the worker's
// SSRF guard (PERCH_WORKFLOW_ALLOW_PRIVATE) and are signed under the
// server's key.
type ActionOptions struct {
	// PagerDutyURL is PagerDuty's REST API, which native actions call
	// (PERCH_PAGERDUTY_API_URL; tests point it at pagerdutyfake); "" is
	// pagerduty.DefaultBaseURL. It is a configured API, not a URL a sender
	// chose: it is not called through the SSRF guard.
	PagerDutyURL string
}

// WebhookOptions configures the senders' receivers (/webhooks/…): their
// signatures, broadcasts and bounds.
type WebhookOptions struct {
	GitHubSecret    string // checks X-Hub-Signature-256 when set
	PagerDutySecret string // checks X-PagerDuty-Signature when set
	// ReceiverBodyTimeout is how long a receiver's request body may take to
	// arrive once the headers are in; 0 means the default, 10 s.
	ReceiverBodyTimeout time.Duration
	// MaxDeliveryNotifications caps the notifications one delivery may make
	// (a PagerDuty V2 delivery carries a list); 0 means the default, 100.
	MaxDeliveryNotifications int
	AnonymousBroadcast       bool        // token-less receiver calls broadcast (else 401)
	BroadcastLimit           perch.Limit // per client IP, on the notifications of token-less receiver calls
}

// BillingOptions configures payments: the provider of checkout and the
// portal, and its webhooks.
type BillingOptions struct {
	// Provider is the payment provider of checkout and the portal; nil is
	// billing off (self-hosting: trials never end, admins set plans).
	Provider billing.Provider
	// The payment receivers' secrets: a receiver without its secret
	// refuses every delivery (payment events are never taken unsigned).
	StripeWebhookSecret, PaddleWebhookSecret string
	// PaymentLimit is the payment receivers' allowance per client address;
	// zero means DefaultPaymentLimit.
	PaymentLimit perch.Limit
	// PricePlans maps both providers' price ids to plan slugs.
	PricePlans map[string]string
}

// SSOOptions configures sign-in through other parties: GitHub and Google,
// and organisations' SAML identity providers and their domains.
type SSOOptions struct {
	// GitHub and Google are the apps of sign-in with those providers
	// (docs/DESIGN.md, GitHub and Google); a provider without a client id
	// and secret is not offered, and its routes answer 404.
	GitHub GitHubApp
	Google GoogleApp
	// LookupTXT looks up the DNS TXT records of a name, for the
	// verification of an organisation's SSO domains; nil means the system's
	// resolver. Tests pass a stub.
	LookupTXT func(ctx context.Context, name string) ([]string, error)
	// SAMLMetadataLoopback lets the server fetch an identity provider's
	// metadata from a loopback address, which it otherwise refuses with
	// every private, link-local and shared one (tests).
	SAMLMetadataLoopback bool
	// AnyDomain lets an organisation's identity provider (SAML just-in-time
	// accounts, SCIM) make accounts for addresses outside the
	// organisation's verified domains (PERCH_SSO_ANY_DOMAIN), for a
	// single-company server. Those accounts' mailboxes are still not
	// proven.
	AnyDomain bool
	// NewKey makes the service provider key of an organisation that
	// configures SAML; nil means a new 2048-bit RSA key each time. Tests
	// pass keys made once per process (samltest.Key).
	NewKey func() (*rsa.PrivateKey, error)
}

// Server is Perch's HTTP handler.
type Server struct {
	stores  // storage, by what each handler group needs of it (stores.go)
	log     *slog.Logger
	limiter perch.RateLimiter
	metrics *metrics
	opts    Options
	admins  map[string]bool
	mux     *http.ServeMux
	api     http.Handler // mux with body limits and panic recovery
	handler http.Handler // api under observe
	now     func() time.Time
	mailer  mail.Sender
	mailing sync.WaitGroup // mail being sent in the background
	mailCfg *mail.Settings
	fanout  perch.Fanout
	hub     *hub.Hub
	ingest  *ingest.Writer
	ws      *wsloop.Loop                // the WebSockets' event loop, started by New, stopped by Close
	wsErr   error                       // why ws could not start: /ws answers it
	origins *http.CrossOriginProtection // of requests that sign in by cookie
	tokens  *tokenCache                 // webhook tokens by hash
	flows   *flows                      // compiled workflows by organisation
	runs    *worker.Recorder            // workflow runs and stats, written in batches
	worker  *worker.Worker              // woken when a delivery queued jobs
	touches *tokenTouches               // webhook tokens' last use, written in batches
	replays replaySlots                 // WebSocket replays under way, per user
	prom    http.Handler                // the Prometheus registry, in its text format
	scraper [sha256.Size]byte           // SHA-256 of Options.Metrics.Token

	providers    map[string]signInProvider // the configured sign-in providers, by name
	providerHTTP *http.Client              // calls to them
	pagerduty    *pagerduty.Client         // native PagerDuty actions; nil when its URL is not one

	// forwardResolver resolves the hosts of the server's calls out through
	// netguard (identity providers' metadata; workflow forwards are the
	// worker's); nil: the system's. Tests stub it.
	forwardResolver netguard.Resolver

	probing sync.Mutex // held by the /readyz that is trying a write
}

// New returns a Server with every route in place.
func New(o Options) *Server {
	if o.Metrics.Registry == nil {
		o.Metrics.Registry = prometheus.NewRegistry()
	}
	if o.Webhooks.MaxDeliveryNotifications <= 0 {
		o.Webhooks.MaxDeliveryNotifications = DefaultMaxDeliveryNotifications
	}
	o.Webhooks.ReceiverBodyTimeout = cmp.Or(o.Webhooks.ReceiverBodyTimeout, receiverBodyTimeout)
	o.Limits.BodyTimeout = cmp.Or(o.Limits.BodyTimeout, defaultBodyTimeout)
	if o.Billing.PaymentLimit.Count <= 0 || o.Billing.PaymentLimit.Period <= 0 {
		o.Billing.PaymentLimit = DefaultPaymentLimit
	}
	if o.Limits.Actions.Count <= 0 || o.Limits.Actions.Period <= 0 {
		o.Limits.Actions = DefaultActionLimit
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SSO.LookupTXT == nil {
		o.SSO.LookupTXT = net.DefaultResolver.LookupTXT
	}
	s := &Server{
		log:     o.Logger,
		limiter: o.Limiter,
		metrics: newMetrics(o.Metrics.Registry, o.Ingest, o.Hub),
		opts:    o,
		admins:  map[string]bool{},
		mux:     http.NewServeMux(),
		now:     o.Now,
		mailer:  o.Mailer,
		mailCfg: o.MailSettings,
		fanout:  o.Fanout,
		hub:     o.Hub,
		ingest:  o.Ingest,
		tokens:  newTokenCache(),
		flows:   newFlows(),
		runs:    o.Runs,
		worker:  o.Worker,
		touches: newTokenTouches(o.Store, o.Logger),
		prom:    promhttp.HandlerFor(o.Metrics.Registry, promhttp.HandlerOpts{}),
		scraper: sha256.Sum256([]byte(o.Metrics.Token)),
	}
	s.stores = newStores(o.Store)
	// The event loop starts with the server, not with the first
	// WebSocket: a failure is then answered by /ws as it comes.
	if s.ws, s.wsErr = wsloop.Start(o.Hub, o.Now, s.receipt); s.wsErr != nil {
		s.wsErr = fmt.Errorf("websocket event loop: %w", s.wsErr)
	}
	if s.runs == nil {
		s.runs = worker.NewRecorder(o.Store, o.Logger)
	}
	if s.mailCfg == nil {
		s.mailCfg = mail.NewSettings(o.Store, o.Secrets, nil)
	}
	s.providerHTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: providerTimeout}
	s.providers = newProviders(o, s.providerHTTP)
	if pd, err := pagerduty.New(o.Actions.PagerDutyURL); err == nil {
		s.pagerduty = pd
	} else if o.Logger != nil {
		o.Logger.Error("PagerDuty's native actions are off", "err", err)
	}
	s.origins = http.NewCrossOriginProtection()
	if u, err := url.Parse(o.BaseURL); err == nil && u.Host != "" {
		s.origins.AddTrustedOrigin(u.Scheme + "://" + u.Host)
	}
	for _, e := range o.AdminEmails {
		s.admins[perch.NormalizeEmail(e)] = true
	}
	s.routes()
	s.api = s.recoverPanics(s.limitBodies(s.routed()))
	s.handler = s.observe(s.api)
	return s
}

// ServeHTTP serves one request of the API alone: anything that is not one
// of its routes is a 404 in the error shape.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// API is the API without the outer middleware (request id, log line,
// metrics), for the dashboard's in-process calls: a page is logged and
// counted once, as the request the browser made, not once per call.
func (s *Server) API() http.Handler { return s.api }

// WithPages serves the API's paths (see apiPaths) with the API and every
// other path with pages, the dashboard, under one outer middleware: one
// request id, log line and metric per request whichever serves it.
func (s *Server) WithPages(pages http.Handler) http.Handler {
	top := http.NewServeMux()
	for _, p := range apiPaths {
		top.Handle(p, s.routed())
	}
	top.Handle("/", pages)
	return s.observe(s.recoverPanics(s.limitBodies(top)))
}

// routed is the mux behind a check that the path holds no control
// characters (a %00 in an id, say): no route or id has one, so such a path
// is not found, on every database alike, before any handler sees it.
func (s *Server) routed() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.ContainsFunc(r.URL.Path, unicode.IsControl) {
			s.writeError(w, r, perch.Errorf(perch.ENOTFOUND, "There is nothing at %q.", r.URL.Path))
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// apiPaths are the paths the API serves; everything else is the
// dashboard's.
var apiPaths = []string{"/api/", "/webhooks/", "/scim/", "/ws", "/healthz", "/readyz", "/metrics", "/docs/api"}

// Close ends what the HTTP server's Shutdown does not: it closes every
// WebSocket with 1001 (going away) so clients reconnect elsewhere, and
// waits for those connections and for mail being sent, or for ctx.
func (s *Server) Close(ctx context.Context) error {
	s.providerHTTP.CloseIdleConnections()
	if s.pagerduty != nil {
		s.pagerduty.CloseIdleConnections()
	}
	if s.hub != nil {
		s.hub.DropAll(hub.ReasonShutdown)
	}
	done := make(chan struct{})
	go func() {
		if s.ws != nil {
			s.ws.Wait(context.Background())
		}
		s.mailing.Wait()
		s.runs.Wait()
		s.touches.wait()
		close(done)
	}()
	// The event loop ends last, closing what connections are left.
	if s.ws != nil {
		defer s.ws.Stop()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
