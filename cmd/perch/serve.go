package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/billing"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/feed"
	"github.com/perch-dev/perch/internal/heartbeat"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/ingest"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/ratelimit"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/web"
	"github.com/perch-dev/perch/internal/worker"

	"github.com/redis/go-redis/v9"
)

// shutdownGrace is how long in-flight requests get to finish on SIGTERM.
const shutdownGrace = 15 * time.Second

func newLogger(c *config, w io.Writer) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openStore connects to the configured database and brings its schema up
// to date.
func openStore(ctx context.Context, c *config, logger *slog.Logger) (*store.Store, error) {
	s, err := store.Open(ctx, c.DatabaseURL, store.WithSQLiteSync(c.SQLiteSync))
	if err != nil {
		return nil, err
	}
	if err := s.Migrate(ctx, logger); err != nil {
		s.Close()
		return nil, err
	}
	warnReadableDatabase(s.Path(), logger)
	return s, nil
}

// warnReadableDatabase tells the operator when the SQLite database at path
// ("" on PostgreSQL) can be read or written by users other than its owner
// and group: a file an older Perch made 0644, or one copied in. Perch
// makes a new database 0600 and leaves an existing one's mode as the
// operator set it (store.Open), so this is the only nudge. Windows keeps
// no such bits.
func warnReadableDatabase(path string, logger *slog.Logger) {
	if path == "" || runtime.GOOS == "windows" {
		return
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm()&0o007 == 0 {
		return
	}
	logger.Warn("the database file is open to every user of this machine: it holds password hashes, sealed secrets and the audit log",
		"path", path, "mode", info.Mode().Perm().String(), "fix", "chmod 600 "+path+" "+path+"-wal "+path+"-shm")
}

// gcHeadroom is how far past twice the live heap the heap may grow before a
// collection.
const gcHeadroom = 16 << 20

// serve runs the server until ctx ends or SIGINT/SIGTERM arrives, then
// drains: no new connections, in-flight requests finished.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parseConfig("serve", args, getenv, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := newLogger(c, stderr)

	// GC headroom: a buffer the collector counts as live and nothing writes;
	// fresh from the operating system, its pages never become resident. The
	// heap may then grow gcHeadroom past twice its live size between
	// collections, where ingest's live heap of a few MB would otherwise be
	// collected many times a second (docs/perf.md, "GC headroom"). The
	// few MB more RSS at start is garbage the larger goal lets wait.
	headroom := make([]byte, gcHeadroom/2)
	defer runtime.KeepAlive(headroom)

	st, err := openStore(ctx, c, logger)
	if err != nil {
		return err
	}
	defer st.Close()

	box, err := openSecrets(c, st, logger)
	if err != nil {
		return err
	}
	mailSettings, err := newMailSettings(c, st, box, logger)
	if err != nil {
		return err
	}
	mailer := mail.NewMailer(mailSettings.Source, st, box, logger)
	sealOutbox(ctx, st, box, logger)

	// Events: the hub hears everything fan-out carries; the writer stores and
	// publishes. Both outlive the HTTP server's drain, which still needs them.
	fan, limiter, closeRedis, err := scaleOut(ctx, c, st, logger)
	if err != nil {
		return err
	}
	defer closeRedis()
	h := hub.New()
	writer := ingest.New(st, fan, logger)
	writerCtx, stopWriter := context.WithCancel(context.Background())
	writerDone := make(chan struct{})
	go func() { writer.Run(writerCtx); close(writerDone) }()
	defer func() { stopWriter(); <-writerDone }()

	// The workflow worker: forwards, e-mail jobs and digests. It stops
	// before the writer and the store it uses (defers run last first), so
	// that a digest it is delivering is either written or held again.
	provider := paymentProvider(c)
	wk := worker.New(worker.Options{Store: st, Ingest: writer, Mailer: mailer, Secrets: box, Logger: logger,
		BaseURL: c.BaseURL, AllowPrivate: c.WorkflowPrivate, Billing: provider})
	workerCtx, stopWorker := context.WithCancel(context.Background())
	workerDone := make(chan struct{})
	go func() { wk.Run(workerCtx); close(workerDone) }()
	defer func() { stopWorker(); <-workerDone }()

	var wakeups func() error // the wake-up channel between instances, for /readyz
	if f, ok := fan.(*feed.Feed); ok {
		wakeups = f.WakeupHealth
	}
	srv := server.New(server.Options{
		Store:          st,
		Logger:         logger,
		Mailer:         mailer,
		MailSettings:   mailSettings,
		Secrets:        box,
		Limiter:        limiter,
		BaseURL:        c.BaseURL,
		Region:         c.Region,
		Regions:        c.Regions,
		AdminEmails:    c.AdminEmails,
		TrustedProxies: c.TrustedProxies,
		Limits:         server.LimitOptions{User: c.UserLimit, Auth: c.AuthLimit, Actions: c.ActionLimit},
		PasswordParams: auth.DefaultParams,
		Fanout:         fan,
		Hub:            h,
		Ingest:         writer,

		Webhooks: server.WebhookOptions{
			AnonymousBroadcast:       c.AnonymousBroadcast,
			BroadcastLimit:           c.UserLimit,
			MaxDeliveryNotifications: c.MaxPerDelivery,
			GitHubSecret:             c.GitHubSecret,
			PagerDutySecret:          c.PagerDutySecret,
		},
		Billing: server.BillingOptions{
			Provider:            provider,
			StripeWebhookSecret: c.Stripe.WebhookSecret,
			PaddleWebhookSecret: c.Paddle.WebhookSecret,
			PricePlans:          pricePlans(c.Stripe.Prices, c.Paddle.Prices),
		},
		SSO:          server.SSOOptions{GitHub: c.GitHub, Google: c.Google, AnyDomain: c.SSOAnyDomain},
		Actions:      server.ActionOptions{PagerDutyURL: c.PagerDutyURL},
		Metrics:      server.MetricsOptions{Token: c.MetricsToken, Separate: c.MetricsListen != ""},
		Worker:       wk,
		WakeupHealth: wakeups,
	})
	if err := srv.SeedStarters(ctx); err != nil {
		logger.Warn("seeding the marketplace's starter workflows failed; the next start tries again", "err", err)
	}
	if err := srv.SyncListedAdmins(ctx); err != nil {
		logger.Warn("auditing the platform admins of PERCH_ADMIN_EMAILS failed; the next start tries again", "err", err)
	}

	subCtx, unsubscribe := context.WithCancel(context.Background())
	defer unsubscribe()
	if err := fan.Subscribe(subCtx, srv.Deliver, srv.Lost); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.Listen, err)
	}
	// The dashboard beside the API: it calls the API in-process, and one
	// outer middleware logs and counts each request once.
	// Whether mail waits in the outbox can change while Perch runs: an admin
	// may store e-mail settings.
	outboxNow := func(ctx context.Context) bool {
		_, ok, err := mailSettings.Source(ctx)
		return !ok && err == nil
	}
	dashboard := web.New(web.Options{API: srv.API(), BaseURL: c.BaseURL, Logger: logger, Regions: c.Regions,
		MailOutbox: c.SMTPURL == "", MailOutboxNow: outboxNow, AnonymousBroadcast: c.AnonymousBroadcast,
		GitHubSigned: c.GitHubSecret != "", PagerDutySigned: c.PagerDutySecret != "", SignInProviders: srv.SignInProviders(),
		Billing: c.BillingProvider != ""})
	servers := []*http.Server{newHTTPServer(srv.WithPages(dashboard), logger)}
	listeners := []net.Listener{ln}
	if c.MetricsListen != "" {
		mln, err := net.Listen("tcp", c.MetricsListen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen on %s (PERCH_METRICS_LISTEN): %w", c.MetricsListen, err)
		}
		servers, listeners = append(servers, newHTTPServer(srv.MetricsHandler(), logger)), append(listeners, mln)
		fmt.Fprintf(stdout, "perch metrics on http://%s/metrics\n", mln.Addr())
		logger.Info("serving metrics apart", "addr", mln.Addr().String(), "token", c.MetricsToken != "")
	}
	fmt.Fprintf(stdout, "perch listening on http://%s (database: %s)\n", ln.Addr(), st.Dialect())
	logger.Info("listening", "addr", ln.Addr().String(), "database", string(st.Dialect()), "base_url", c.BaseURL)
	setupLink(ctx, srv, logger)
	if c.AnonymousBroadcast {
		logger.Warn("webhook deliveries without a token are broadcast to every user (PERCH_ANONYMOUS_BROADCAST=true); " +
			"set PERCH_ANONYMOUS_BROADCAST=false to require a token")
	}

	if c.WorkflowPrivate {
		logger.Warn("workflow forwards may reach loopback, private, link-local and cloud metadata addresses (PERCH_WORKFLOW_ALLOW_PRIVATE=true); " +
			"any organisation's workflow can then call services on Perch's own network")
	}

	// Every goroutine started here is joined before run returns: the
	// periodic jobs end with jobsCtx (on shutdown, or when a listener
	// fails), and each listener's Serve once its server is shut down or
	// closed, which every way out of this function does first.
	jobsCtx, stopJobs := context.WithCancel(ctx)
	var jobs sync.WaitGroup
	defer func() { stopJobs(); jobs.Wait() }()
	jobs.Go(func() { prune(jobsCtx, st, c.Retention, c.AuditRetention, logger) })
	jobs.Go(func() { billingJobs(jobsCtx, st, srv, logger) })
	beats := &heartbeat.Beater{Store: st, ID: heartbeat.NewID(), Clients: h.Len, Log: logger}
	jobs.Go(func() { beats.Run(jobsCtx, heartbeat.Every) })

	errc := make(chan error, len(servers))
	var serving sync.WaitGroup
	defer serving.Wait()
	for i, hs := range servers {
		serving.Go(func() { errc <- hs.Serve(listeners[i]) })
	}
	select {
	case err := <-errc:
		for _, hs := range servers {
			hs.Close()
		}
		// The server's WebSockets, event loop and mail end as they do on
		// shutdown.
		cctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		srv.Close(cctx)
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining in-flight requests", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	// The metrics listener, if any, goes last: the drain can be watched.
	for _, hs := range servers {
		if err := hs.Shutdown(sctx); err != nil {
			for _, hs := range servers {
				hs.Close()
			}
			return fmt.Errorf("shutdown: %w", err)
		}
	}
	if err := srv.Close(sctx); err != nil {
		logger.Warn("mail still being sent at shutdown", "err", err)
	}
	for range servers {
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	logger.Info("stopped")
	return nil
}

// setupLink logs, once and at warn level (it shows at the default level,
// and in journalctl -u perch), a one-time link that makes the first
// platform admin, when no account is one (server.SetupLink). The code is
// in the link's fragment, which browsers never send: it reaches no access
// log and no Referer.
func setupLink(ctx context.Context, srv *server.Server, logger *slog.Logger) {
	link, expires, err := srv.SetupLink(ctx)
	switch {
	case err != nil:
		logger.Warn("no account is a platform admin, and making a setup link failed; the next start tries again, "+
			"or make one with perch admin grant EMAIL", "err", err)
	case link != "":
		logger.Warn("no account is a platform admin yet: to become it, open this one-time link in the browser, "+
			"signed in to your account (or sign up there first); it works once, until it expires, and each start "+
			"prints a new one while no admin exists. perch admin grant EMAIL makes an admin too",
			"link", link, "expires", expires.UTC().Format(time.RFC3339))
	}
}

// newHTTPServer serves h with the timeouts and limits of every listener.
func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// newMailSettings are where mail goes: an admin's settings stored in the
// database, over PERCH_SMTP_URL, over the outbox table (and the log).
func newMailSettings(c *config, st *store.Store, box *secrets.Box, logger *slog.Logger) (*mail.Settings, error) {
	if c.SMTPURL == "" {
		logger.Info("no PERCH_SMTP_URL: mail is logged and kept in the outbox, unless an admin stores e-mail settings")
		return mail.NewSettings(st, box, nil), nil
	}
	cfg, err := mail.ParseURL(c.SMTPURL)
	if err != nil {
		return nil, err
	}
	cfg.From = c.MailFrom
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("mail settings: %s", perch.ErrorMessage(err))
	}
	return mail.NewSettings(st, box, &cfg), nil
}

// openSecrets returns what seals the secrets kept in the database: under
// PERCH_SECRET_KEY, or on SQLite under the key file beside the database,
// made on the first start. On PostgreSQL without the key it is nil: storing
// a secret is then refused with a message naming the setting.
func openSecrets(c *config, st *store.Store, logger *slog.Logger) (*secrets.Box, error) {
	key := c.SecretKey
	if key == nil {
		if st.Dialect() != store.SQLite {
			logger.Warn("no PERCH_SECRET_KEY: secrets such as the SMTP password cannot be stored in the database, nor the newsletter sent, " +
				"and mail waiting in the outbox (no SMTP server) is kept without its links; " +
				"set it to 32 random bytes in base64, e.g. from openssl rand -base64 32")
			return nil, nil
		}
		path := filepath.Join(filepath.Dir(st.Path()), secrets.KeyFileName)
		var created bool
		var err error
		if key, created, err = secrets.LoadOrCreateKeyFile(path); err != nil {
			return nil, fmt.Errorf("secret key (PERCH_SECRET_KEY unset): %w", err)
		}
		if created {
			logger.Info("made a key for the secrets kept in the database; back it up with the database", "path", path)
		}
	}
	return secrets.New(key)
}

// sealOutbox seals the mail an older Perch kept in the outbox in the clear.
// Without a key it stays as it was, readable until its links expire.
func sealOutbox(ctx context.Context, st *store.Store, box *secrets.Box, logger *slog.Logger) {
	if box == nil {
		return
	}
	n, err := st.SealOutbox(ctx, func(k perch.KeptMail) []byte { return mail.Seal(k, box) })
	if err != nil {
		logger.Warn("sealing the mail kept in the outbox failed; the next start tries again", "err", err)
	} else if n > 0 {
		logger.Info("sealed the links of mail kept in the outbox before", "count", n)
	}
}

// prune deletes expired sign-in tokens, SAML sign-ins never answered and
// used assertions past their validity, mail kept in the outbox whose links
// expired, notifications, workflow runs, given-up workflow jobs and audit
// entries past their retention, and ended workflow throttle windows, every
// ten minutes until ctx ends.
func prune(ctx context.Context, st *store.Store, retention, auditRetention time.Duration, logger *slog.Logger) {
	t := time.NewTicker(pruneEvery / 10) // a job runs once per pruneEvery across all instances
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := st.RunJob(ctx, "prune", pruneEvery, func(ctx context.Context) error {
			if n, err := st.PruneSessions(ctx); err != nil {
				logger.Warn("pruning sessions failed", "err", err)
			} else if n > 0 {
				logger.Info("pruned expired sign-in tokens", "count", n)
			}
			cutoff := time.Now().Add(-retention)
			if n, err := st.PruneNotifications(ctx, cutoff.UnixMilli()); err != nil {
				logger.Warn("pruning notifications failed", "err", err)
			} else if n > 0 {
				logger.Info("pruned notifications past retention", "count", n, "retention", retention)
			}
			// Workflow runs, and the jobs that finished (delivered,
			// refused or given up, shown beside them), are kept as long as
			// notifications.
			if n, err := st.PruneWorkflowRuns(ctx, cutoff); err != nil {
				logger.Warn("pruning workflow runs failed", "err", err)
			} else if n > 0 {
				logger.Info("pruned workflow runs past retention", "count", n, "retention", retention)
			}
			if n, err := st.PruneJobs(ctx, cutoff); err != nil {
				logger.Warn("pruning finished workflow jobs failed", "err", err)
			} else if n > 0 {
				logger.Info("pruned finished workflow jobs past retention", "count", n)
			}
			// Scheduled notifications delivered or cancelled are kept, for
			// their dedupe keys, as long as notifications.
			if n, err := st.PruneScheduled(ctx, cutoff); err != nil {
				logger.Warn("pruning finished scheduled notifications failed", "err", err)
			} else if n > 0 {
				logger.Info("pruned finished scheduled notifications past retention", "count", n)
			}
			if n, err := st.PruneWorkflowState(ctx, time.Now()); err != nil {
				logger.Warn("pruning workflow throttle windows failed", "err", err)
			} else if n > 0 {
				logger.Info("pruned ended workflow throttle windows", "count", n)
			}
			if n, err := st.PruneAudit(ctx, time.Now().Add(-auditRetention)); err != nil {
				logger.Warn("pruning the audit log failed", "err", err)
			} else if n > 0 {
				logger.Info("pruned audit entries past retention", "count", n, "retention", auditRetention)
			}
			if n, err := st.PruneFanoutLog(ctx); err != nil {
				logger.Warn("pruning the fan-out log failed", "err", err)
			} else if n > 0 {
				logger.Info("pruned the fan-out log", "count", n)
			}
			if n, err := st.PruneSAML(ctx); err != nil {
				logger.Warn("pruning SAML sign-ins failed", "err", err)
			} else if n > 0 {
				logger.Info("pruned expired SAML sign-ins and used assertions", "count", n)
			}
			if n, err := st.PruneOutbox(ctx); err != nil {
				logger.Warn("pruning the outbox failed", "err", err)
			} else if n > 0 {
				logger.Info("pruned mail kept in the outbox whose links expired", "count", n)
			}
			if n, err := st.PruneBillingEvents(ctx, time.Now().Add(-billingEventRetention)); err != nil {
				logger.Warn("pruning billing events failed", "err", err)
			} else if n > 0 {
				logger.Info("pruned old billing events", "count", n)
			}
			return nil
		})
		if err != nil && ctx.Err() == nil {
			logger.Warn("scheduling the pruning job failed", "err", err)
		}
	}
}

// paymentProvider is the configured provider of checkout, nil when
// billing is off.
func paymentProvider(c *config) billing.Provider {
	switch c.BillingProvider {
	case perch.BillingStripe:
		return billing.NewStripe(c.Stripe.Key, c.Stripe.APIURL, c.Stripe.Prices, nil)
	case perch.BillingPaddle:
		return billing.NewPaddle(c.Paddle.Key, c.Paddle.APIURL, c.Paddle.Prices, nil)
	}
	return nil
}

// pricePlans maps every configured price id, of either provider, to its
// plan: a receiver reads the plan of a subscription from its price.
func pricePlans(all ...billing.Prices) map[string]string {
	out := map[string]string{}
	for _, prices := range all {
		for plan, price := range prices {
			out[price] = plan
		}
	}
	return out
}

// billingJobs runs the server's billing jobs (trials ending, ended) on one
// instance of the cluster every billingEvery until ctx ends.
func billingJobs(ctx context.Context, st *store.Store, srv *server.Server, logger *slog.Logger) {
	t := time.NewTicker(billingEvery / 10)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := st.RunJob(ctx, "billing", billingEvery, srv.BillingJobs); err != nil && ctx.Err() == nil {
			logger.Warn("the billing job failed", "err", err)
		}
	}
}

// billingEventRetention is how long a provider's event ids are kept to
// recognise a redelivery (Stripe and Paddle retry for up to three days).
const billingEventRetention = 90 * 24 * time.Hour

// billingEvery is how often trials are looked at.
const billingEvery = 10 * time.Minute

// pruneEvery is how often expired sessions and old notifications are
// deleted, by one instance of the cluster.
const pruneEvery = 10 * time.Minute

// scaleOut returns the fan-out and the rate limiter: in-process ones, or,
// with PERCH_REDIS_URL, those of many instances. Their fan-out is the
// store's logs, Redis only a wake-up (internal/feed): each instance
// delivers by reading the notifications table and the fan-out log from
// where it last read, woken through Redis pub/sub, and every
// feed.DefaultPoll without it. Their limits are kept in Redis, shared by
// every instance (with per-instance limits while Redis is away).
func scaleOut(ctx context.Context, c *config, st *store.Store, logger *slog.Logger) (perch.Fanout, perch.RateLimiter, func(), error) {
	if c.RedisURL == "" {
		return fanout.NewLocal(), ratelimit.NewMemory(), func() {}, nil
	}
	opt, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("PERCH_REDIS_URL: %w", err)
	}
	// Short timeouts: while Redis is away, requests fall back to local
	// limits and notifications wait in the database, instead of hanging.
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 2*time.Second, time.Second, time.Second
	rc := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rc.Ping(pctx).Err(); err != nil {
		rc.Close()
		return nil, nil, nil, fmt.Errorf("connecting to Redis at %s: %w", opt.Addr, err)
	}
	if !strings.HasPrefix(c.DatabaseURL, "postgres") {
		logger.Warn("PERCH_REDIS_URL is set with SQLite: several instances need PostgreSQL; one instance does not need Redis")
	}
	limiter := &ratelimit.Fallback{Shared: ratelimit.NewRedis(rc, c.RedisPrefix+":"), Local: ratelimit.NewMemory(), Log: logger}
	wakeups := fanout.NewRedis(rc, c.RedisPrefix+":fanout", logger)
	return feed.New(st, wakeups, 0, logger), limiter, func() { rc.Close() }, nil
}

// migrate applies the migrations and exits.
func migrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parseConfig("migrate", args, getenv, stderr)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, c, newLogger(c, stderr))
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(stdout, "%s database is up to date\n", st.Dialect())
	return nil
}
