package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	netmail "net/mail"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/billing"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/pagerduty"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
)

// config is the server's configuration: flags over PERCH_* variables over
// defaults (docs/DESIGN.md, Configuration).
type config struct {
	Listen             string
	MetricsListen      string
	MetricsToken       string
	BaseURL            string
	DatabaseURL        string
	SQLiteSync         store.Sync // how SQLite commits reach the disk
	RedisURL           string
	RedisPrefix        string
	AdminEmails        []string
	TrustedProxies     []netip.Prefix
	UserLimit          perch.Limit
	AuthLimit          perch.Limit
	ActionLimit        perch.Limit // notification actions run per user
	PagerDutyURL       string      // PagerDuty's REST API, for native actions
	AnonymousBroadcast bool
	WorkflowPrivate    bool           // workflow forwards may reach loopback, private and metadata addresses
	SSOAnyDomain       bool           // identity providers may make accounts for any domain (a single-company server)
	Region             string         // this deployment's region, "" when none is named
	Regions            []perch.Region // every region, this one marked current; empty when none are listed
	MaxPerDelivery     int
	GitHubSecret       string
	PagerDutySecret    string
	BillingProvider    string           // perch.BillingStripe, perch.BillingPaddle, or "" (billing off)
	Stripe, Paddle     paymentConfig    // each provider's settings; a webhook secret may be set alone
	GitHub             server.GitHubApp // sign-in with GitHub; configured when both client values are set
	Google             server.GoogleApp // sign-in with Google
	SMTPURL            string
	MailFrom           string
	SecretKey          []byte // nil: none given (SQLite then keeps perch.key beside the database)
	Retention          time.Duration
	AuditRetention     time.Duration
	LogFormat          string
	LogLevel           string
}

// setting is one configuration value: its flag, the variable of the same
// name, its default, and how to read it into a config.
type setting struct {
	flag, def, help string
	set             func(c *config, v string) error
}

// env is the variable that goes with a flag: --database-url → PERCH_DATABASE_URL.
func (s setting) env() string {
	return "PERCH_" + strings.ToUpper(strings.ReplaceAll(s.flag, "-", "_"))
}

// defaultDatabaseURL is the database when none is set: perch.db in the
// current directory.
const defaultDatabaseURL = "perch.db"

var settings = []setting{
	{"listen", ":8080", "address to listen on", func(c *config, v string) error {
		if _, _, err := net.SplitHostPort(v); err != nil {
			return fmt.Errorf("want host:port, e.g. :8080 or 127.0.0.1:8080")
		}
		c.Listen = v
		return nil
	}},
	{"metrics-listen", "", "address to serve /metrics on, apart from the API (unset: /metrics is on the main address)", func(c *config, v string) error {
		if v == "" {
			return nil
		}
		if _, _, err := net.SplitHostPort(v); err != nil {
			return fmt.Errorf("want host:port, e.g. 127.0.0.1:9090")
		}
		if _, port, _ := net.SplitHostPort(v); v == c.Listen && port != "0" {
			return fmt.Errorf("must differ from the main address (PERCH_LISTEN)")
		}
		c.MetricsListen = v
		return nil
	}},
	{"metrics-token", "", "bearer token that /metrics requires (unset: /metrics is open)", func(c *config, v string) error {
		if v == "" {
			return nil
		}
		if len(v) < 16 {
			return fmt.Errorf("want at least 16 characters, e.g. the output of openssl rand -hex 32")
		}
		for _, r := range v {
			if r <= ' ' || r >= 0x7f {
				return fmt.Errorf("want printable ASCII without spaces")
			}
		}
		c.MetricsToken = v
		return nil
	}},
	{"base-url", "http://localhost:8080", "public URL of this server, used in links and webhook URLs", func(c *config, v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return fmt.Errorf("want an http(s) URL with no path, e.g. https://perch.example.com")
		}
		c.BaseURL = strings.TrimSuffix(v, "/")
		return nil
	}},
	{"database-url", defaultDatabaseURL, "SQLite file path, or a postgres:// URL", func(c *config, v string) error {
		if strings.HasPrefix(v, "postgres://") || strings.HasPrefix(v, "postgresql://") {
			if _, err := url.Parse(v); err != nil {
				return fmt.Errorf("not a valid URL")
			}
		} else if strings.Contains(v, "://") && !strings.HasPrefix(v, "sqlite://") {
			return fmt.Errorf("want a SQLite file path or a postgres:// URL")
		}
		if v == "" {
			return fmt.Errorf("must not be empty")
		}
		c.DatabaseURL = v
		return nil
	}},
	{"sqlite-sync", "normal", "how a SQLite commit reaches the disk before its 200: normal (the log is synced at the checkpoint every second: what was answered survives Perch crashing, but a power loss or an operating-system crash may take about the last second of it) or full (synced at every commit: it survives a power loss too, for some ingest throughput); PostgreSQL ignores it", func(c *config, v string) error {
		switch s := store.Sync(v); s {
		case store.SyncFull, store.SyncNormal:
			c.SQLiteSync = s
			return nil
		}
		return fmt.Errorf("want full or normal")
	}},
	{"redis-url", "", "redis:// URL for fan-out and shared rate limits across instances (unset: in-process)", func(c *config, v string) error {
		if v == "" {
			return nil
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			return fmt.Errorf("want redis://host:port or rediss://host:port")
		}
		c.RedisURL = v
		return nil
	}},
	{"redis-prefix", "perch", "prefix of Redis keys and channels, to share one Redis between clusters", func(c *config, v string) error {
		if v == "" || strings.ContainsAny(v, " \t\n") {
			return fmt.Errorf("want a non-empty word")
		}
		c.RedisPrefix = v
		return nil
	}},
	{"admin-emails", "", "comma-separated addresses of platform admins", func(c *config, v string) error {
		var bad []string
		for _, e := range splitList(v) {
			p := perch.Problems{}
			if perch.ValidateEmail(p, e); len(p) > 0 {
				bad = append(bad, e)
			}
			c.AdminEmails = append(c.AdminEmails, e)
		}
		if len(bad) > 0 {
			return fmt.Errorf("not e-mail addresses: %s", strings.Join(bad, ", "))
		}
		return nil
	}},
	{"trusted-proxies", "", "comma-separated CIDRs whose X-Forwarded-For is believed", func(c *config, v string) error {
		for _, s := range splitList(v) {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				a, aerr := netip.ParseAddr(s)
				if aerr != nil {
					return fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8", s)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			c.TrustedProxies = append(c.TrustedProxies, p.Masked())
		}
		return nil
	}},
	{"rate-limit-user", "120/1m", "requests per user on authenticated endpoints, N/period", func(c *config, v string) (err error) {
		c.UserLimit, err = perch.ParseLimit(v)
		return err
	}},
	{"rate-limit-auth", "10/15m", "requests per client IP on sign-in endpoints, N/period", func(c *config, v string) (err error) {
		c.AuthLimit, err = perch.ParseLimit(v)
		return err
	}},
	{"rate-limit-actions", "30/1m", "notification actions a user may run (POST /api/v1/notifications/{id}/actions/…), N/period, on top of rate-limit-user", func(c *config, v string) (err error) {
		c.ActionLimit, err = perch.ParseLimit(v)
		return err
	}},
	{"pagerduty-api-url", pagerduty.DefaultBaseURL, "PagerDuty's REST API, which the Acknowledge and Resolve actions of PagerDuty incidents call (https://api.eu.pagerduty.com for its EU region; tests point it at a fake)", func(c *config, v string) error {
		if _, err := pagerduty.New(v); err != nil {
			return fmt.Errorf("want an http(s) URL such as %s", pagerduty.DefaultBaseURL)
		}
		c.PagerDutyURL = v
		return nil
	}},
	{"region", "", "name of this deployment's region, e.g. eu (sent as X-Perch-Region)", func(c *config, v string) error {
		if v != "" {
			if _, err := perch.ParseRegions(v+"=http://x", ""); err != nil {
				return fmt.Errorf("want a short lower-case name such as eu")
			}
		}
		c.Region = v
		return nil
	}},
	{"regions", "", "the deployments of every region, name=URL,…, e.g. us=https://perch.example.com,eu=https://eu.perch.example.com", func(c *config, v string) (err error) {
		if c.Regions, err = perch.ParseRegions(v, c.Region); err != nil {
			return err
		}
		if len(c.Regions) > 0 && c.Region == "" {
			return fmt.Errorf("set PERCH_REGION (--region) to the name of this deployment's region as well")
		}
		return nil
	}},
	{"anonymous-broadcast", "true", "whether token-less receiver calls broadcast (false: 401)", func(c *config, v string) (err error) {
		c.AnonymousBroadcast, err = strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		return nil
	}},
	{"workflow-allow-private", "false", "whether workflow forwards may reach loopback, private, link-local and cloud metadata addresses (true only when the receivers are on Perch's own network)", func(c *config, v string) (err error) {
		c.WorkflowPrivate, err = strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		return nil
	}},
	{"sso-any-domain", "false", "whether an organisation's identity provider (SAML just-in-time, SCIM) may make accounts for addresses outside the organisation's verified domains (true only on a single-company server; those accounts' mailboxes are still not proven)", func(c *config, v string) (err error) {
		c.SSOAnyDomain, err = strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		return nil
	}},
	{"max-notifications-per-delivery", "100", "most notifications one webhook delivery may make (a PagerDuty V2 delivery carries a list)", func(c *config, v string) (err error) {
		c.MaxPerDelivery, err = strconv.Atoi(v)
		if err != nil || c.MaxPerDelivery < 1 || c.MaxPerDelivery > 10_000 {
			return fmt.Errorf("want a whole number from 1 to 10000")
		}
		return nil
	}},
	{"github-webhook-secret", "", "secret that GitHub signs deliveries with (X-Hub-Signature-256)", func(c *config, v string) error {
		c.GitHubSecret = v
		return nil
	}},
	{"pagerduty-webhook-secret", "", "secret that PagerDuty signs deliveries with (X-PagerDuty-Signature)", func(c *config, v string) error {
		c.PagerDutySecret = v
		return nil
	}},
	{"stripe-secret-key", "", "Stripe secret API key (sk_live_… or sk_test_…), for checkout and the portal", func(c *config, v string) error {
		c.Stripe.Key = v
		return nil
	}},
	{"stripe-webhook-secret", "", "secret that Stripe signs webhook events with (whsec_…); the receiver at /webhooks/stripe refuses every delivery without it", func(c *config, v string) error {
		c.Stripe.WebhookSecret = v
		return nil
	}},
	{"stripe-prices", "", "Stripe price ids of the plans: solo=price_…,team=price_…,enterprise=price_…", func(c *config, v string) (err error) {
		c.Stripe.Prices, err = billing.ParsePrices(v, validPlan)
		return err
	}},
	{"stripe-api-url", "https://api.stripe.com", "Stripe's API (tests: stripe-mock)", func(c *config, v string) (err error) {
		c.Stripe.APIURL, err = serviceURL(v)
		return err
	}},
	{"paddle-api-key", "", "Paddle Billing API key, for checkout and the portal", func(c *config, v string) error {
		c.Paddle.Key = v
		return nil
	}},
	{"paddle-webhook-secret", "", "secret key of the Paddle notification destination (pdl_ntfset_…); the receiver at /webhooks/paddle refuses every delivery without it", func(c *config, v string) error {
		c.Paddle.WebhookSecret = v
		return nil
	}},
	{"paddle-prices", "", "Paddle price ids of the plans: solo=pri_…,team=pri_…,enterprise=pri_…", func(c *config, v string) (err error) {
		c.Paddle.Prices, err = billing.ParsePrices(v, validPlan)
		return err
	}},
	{"paddle-api-url", "https://api.paddle.com", "Paddle Billing's API (sandbox: https://sandbox-api.paddle.com)", func(c *config, v string) (err error) {
		c.Paddle.APIURL, err = serviceURL(v)
		return err
	}},
	// After the providers' settings, which it checks.
	{"billing-provider", "", "payment provider of checkout: stripe or paddle (unset: billing off, trials never end and platform admins set plans)", func(c *config, v string) error {
		var p paymentConfig
		switch v {
		case "":
			return nil
		case perch.BillingStripe:
			p = c.Stripe
		case perch.BillingPaddle:
			p = c.Paddle
		default:
			return fmt.Errorf("want stripe, paddle or nothing")
		}
		name := strings.ToUpper(v)
		if p.Key == "" || p.WebhookSecret == "" || len(p.Prices) == 0 {
			return fmt.Errorf("set PERCH_%s_%s, PERCH_%s_WEBHOOK_SECRET and PERCH_%s_PRICES as well", name, map[string]string{"stripe": "SECRET_KEY", "paddle": "API_KEY"}[v], name, name)
		}
		c.BillingProvider = v
		return nil
	}},
	{"github-client-id", "", "client id of the GitHub OAuth app for sign-in with GitHub (unset: not offered)", func(c *config, v string) error {
		c.GitHub.ClientID = v
		return nil
	}},
	{"github-client-secret", "", "client secret of that GitHub OAuth app", func(c *config, v string) error {
		c.GitHub.ClientSecret = v
		return bothOrNeither("PERCH_GITHUB_CLIENT_ID", c.GitHub.ClientID, "PERCH_GITHUB_CLIENT_SECRET", v)
	}},
	{"github-url", "https://github.com", "GitHub's address for sign-in (GitHub Enterprise: https://HOST)", func(c *config, v string) (err error) {
		c.GitHub.URL, err = serviceURL(v)
		return err
	}},
	{"github-api-url", "https://api.github.com", "GitHub's REST API for sign-in (GitHub Enterprise: https://HOST/api/v3)", func(c *config, v string) (err error) {
		c.GitHub.APIURL, err = serviceURL(v)
		return err
	}},
	{"google-client-id", "", "OAuth client id for sign-in with Google (unset: not offered)", func(c *config, v string) error {
		c.Google.ClientID = v
		return nil
	}},
	{"google-client-secret", "", "OAuth client secret for sign-in with Google", func(c *config, v string) error {
		c.Google.ClientSecret = v
		return bothOrNeither("PERCH_GOOGLE_CLIENT_ID", c.Google.ClientID, "PERCH_GOOGLE_CLIENT_SECRET", v)
	}},
	{"google-issuer", "https://accounts.google.com", "OpenID Connect issuer for sign-in with Google, found by discovery when first used", func(c *config, v string) (err error) {
		c.Google.Issuer, err = serviceURL(v)
		return err
	}},
	{"smtp-url", "", "smtp://, smtp+starttls:// or smtps:// URL of the mail server (unset: mail is logged and kept in the outbox)", func(c *config, v string) error {
		if v == "" {
			return nil
		}
		if _, err := mail.ParseURL(v); err != nil {
			return errors.New(perch.ErrorMessage(err))
		}
		c.SMTPURL = v
		return nil
	}},
	{"mail-from", "Perch <perch@localhost>", "From address of Perch's e-mail", func(c *config, v string) error {
		if _, err := netmail.ParseAddress(v); err != nil {
			return fmt.Errorf("want an address, e.g. Perch <perch@example.com>")
		}
		c.MailFrom = v
		return nil
	}},
	{"secret-key", "", "key that encrypts secrets kept in the database (the SMTP password): 32 random bytes in base64 or hex, e.g. from openssl rand -base64 32 (unset: on SQLite a key file perch.key beside the database; on PostgreSQL such secrets cannot be stored)", func(c *config, v string) error {
		if v == "" {
			return nil
		}
		key, err := secrets.ParseKey(v)
		c.SecretKey = key
		return err
	}},
	{"retention", "720h", "how long notifications are kept, e.g. 720h (30 days)", func(c *config, v string) (err error) {
		c.Retention, err = time.ParseDuration(v)
		if err != nil || c.Retention < time.Hour {
			return fmt.Errorf("want a duration of at least 1h, e.g. 720h")
		}
		return nil
	}},
	{"audit-retention", "365d", "how long audit entries are kept: days (365d) or a duration (8760h); at least 1d", func(c *config, v string) (err error) {
		c.AuditRetention, err = parseDays(v)
		if err != nil || c.AuditRetention < 24*time.Hour {
			return fmt.Errorf("want a number of days of at least 1, e.g. 365d, or a duration such as 8760h")
		}
		return nil
	}},
	{"log-format", "text", "log format: text or json", func(c *config, v string) error {
		if v != "text" && v != "json" {
			return fmt.Errorf("want text or json")
		}
		c.LogFormat = v
		return nil
	}},
	{"log-level", "info", "log level: debug, info, warn or error", func(c *config, v string) error {
		switch v {
		case "debug", "info", "warn", "error":
			c.LogLevel = v
			return nil
		}
		return fmt.Errorf("want debug, info, warn or error")
	}},
}

// hiddenSettings are the settings whose values an error never repeats:
// they are keys.
var hiddenSettings = map[string]bool{"secret-key": true, "github-client-secret": true, "google-client-secret": true,
	"stripe-secret-key": true, "stripe-webhook-secret": true, "paddle-api-key": true, "paddle-webhook-secret": true}

// paymentConfig is one payment provider's settings.
type paymentConfig struct {
	Key, WebhookSecret, APIURL string
	Prices                     billing.Prices
}

// validPlan reports whether slug is one of the plans the migrations make.
func validPlan(slug string) bool { return slug == "solo" || slug == "team" || slug == "enterprise" }

// bothOrNeither refuses one of a client id and secret without the other.
func bothOrNeither(idName, id, secretName, secret string) error {
	switch {
	case id != "" && secret == "":
		return fmt.Errorf("%s is set: set %s as well", idName, secretName)
	case id == "" && secret != "":
		return fmt.Errorf("set %s as well", idName)
	}
	return nil
}

// serviceURL reads the address of a service Perch calls: http(s), with a
// host, no query; kept without a trailing "/".
func serviceURL(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("want an http(s) URL such as https://github.example.com")
	}
	return strings.TrimSuffix(v, "/"), nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseConfig reads the flags in args over the PERCH_* variables over the
// defaults, and reports every bad value at once. name is the command as its
// usage line shows it ("serve", "admin grant EMAIL"); -h prints that usage
// and every setting, and is errHelp.
func parseConfig(name string, args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("perch "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: perch %s [flags]\n\nEvery flag has a PERCH_* variable of the same name (--database-url is PERCH_DATABASE_URL); a flag wins over its variable.\n\nflags:\n", name)
		fs.PrintDefaults()
	}
	flags := map[string]*string{}
	for _, s := range settings {
		flags[s.flag] = fs.String(s.flag, "", fmt.Sprintf("%s (env %s, default %q)", s.help, s.env(), s.def))
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		return nil, errUsage
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })

	c := &config{}
	var errs []error
	for _, s := range settings {
		v, from := s.def, "default"
		if env := getenv(s.env()); env != "" {
			v, from = env, s.env()
		}
		if given[s.flag] {
			v, from = *flags[s.flag], "--"+s.flag
		}
		if err := s.set(c, strings.TrimSpace(v)); err != nil {
			shown := strconv.Quote(v)
			if hiddenSettings[s.flag] {
				shown = "(not shown)"
			}
			errs = append(errs, fmt.Errorf("%s=%s: %w", from, shown, err))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("bad configuration:\n  %w", joinIndented(errs))
	}
	return c, nil
}

func joinIndented(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "\n  "))
}

// parseDays reads a duration written in days ("365d") or as Go writes
// durations ("8760h").
func parseDays(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > 100*365 {
			return 0, fmt.Errorf("bad number of days %q", n)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(v)
}
