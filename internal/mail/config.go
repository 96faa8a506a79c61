package mail

import (
	"crypto/x509"
	"log/slog"
	"net"
	netmail "net/mail"
	"net/url"
	"strconv"
	"strings"

	"github.com/perch-dev/perch"
)

// TLSMode says how the connection to the SMTP server is protected.
type TLSMode int

const (
	// TLSOpportunistic upgrades with STARTTLS when the server offers it
	// (smtp://). Credentials are still never sent in the clear to a server
	// other than localhost: without TLS, authentication fails instead.
	TLSOpportunistic TLSMode = iota
	// TLSStartTLS requires STARTTLS and fails when the server does not offer
	// it (smtp+starttls://).
	TLSStartTLS
	// TLSImplicit speaks TLS from the first byte (smtps://).
	TLSImplicit
	// TLSNone never encrypts, even when the server offers STARTTLS: for a
	// relay whose certificate cannot be verified (an admin's "tls: none").
	// As with TLSOpportunistic, credentials go only to localhost.
	TLSNone
)

// Default ports: submission (RFC 6409) and submissions (RFC 8314).
const (
	DefaultSubmissionPort  = 587
	DefaultSubmissionsPort = 465
)

var schemes = map[string]TLSMode{
	"smtp":          TLSOpportunistic,
	"smtp+starttls": TLSStartTLS,
	"smtps":         TLSImplicit,
}

// Config is how to reach an SMTP server and whom mail comes from.
type Config struct {
	Host     string
	Port     int
	Username string // empty: no authentication
	Password string
	TLS      TLSMode
	// From is the From address, e.g. "Perch <perch@example.com>"
	// (PERCH_MAIL_FROM). ParseURL leaves it empty.
	From string
	// RootCAs verifies the server's certificate; nil means the system roots.
	RootCAs *x509.CertPool
}

// ParseURL reads PERCH_SMTP_URL: smtp://user:pass@host:port (STARTTLS when
// offered), smtp+starttls:// (STARTTLS required) or smtps:// (implicit TLS).
// The port defaults to 587, or 465 for smtps. The user name and password may
// be percent-encoded, and must be when they contain one of / ? # @ :.
//
// Errors are *perch.Error values with code EVALIDATION whose message never
// repeats the URL, since it may hold a password.
func ParseURL(raw string) (Config, error) {
	if strings.TrimSpace(raw) == "" {
		return Config{}, invalid("The SMTP URL is empty.")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the whole URL in its error: describe it instead.
		if strings.Contains(err.Error(), "invalid port") {
			return Config{}, invalid("The SMTP URL has an invalid port. " +
				"If the user name or password contains / ? # @ or :, percent-encode it.")
		}
		return Config{}, invalid("The SMTP URL is malformed. " +
			"If the user name or password contains special characters, percent-encode them.")
	}
	mode, ok := schemes[u.Scheme]
	if !ok {
		return Config{}, invalid("The SMTP URL scheme %q is not supported; use smtp://, smtp+starttls:// or smtps://.", u.Scheme)
	}
	cfg := Config{Host: u.Hostname(), TLS: mode}
	if cfg.Host == "" {
		return Config{}, invalid("The SMTP URL has no host.")
	}
	if cfg.Port, err = parsePort(u.Port(), mode); err != nil {
		return Config{}, err
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return Config{}, invalid("The SMTP URL must not have a path, query or fragment.")
	}
	if u.User != nil {
		cfg.Username = u.User.Username()
		cfg.Password, _ = u.User.Password()
	}
	return cfg, nil
}

func parsePort(s string, mode TLSMode) (int, error) {
	if s == "" {
		if mode == TLSImplicit {
			return DefaultSubmissionsPort, nil
		}
		return DefaultSubmissionPort, nil
	}
	port, err := strconv.Atoi(s)
	if err != nil || port < 1 || port > 65535 {
		return 0, invalid("The SMTP URL port %q is not a number from 1 to 65535.", s)
	}
	return port, nil
}

// Validate reports the first reason c cannot be used to send mail.
func (c Config) Validate() error {
	switch {
	case c.Host == "":
		return invalid("The SMTP host is missing.")
	case c.Port < 1 || c.Port > 65535:
		return invalid("The SMTP port %d is not a number from 1 to 65535.", c.Port)
	case c.TLS < TLSOpportunistic || c.TLS > TLSNone:
		return invalid("The SMTP TLS mode %d is unknown.", c.TLS)
	case c.From == "":
		return invalid("A From address (PERCH_MAIL_FROM) is required to send e-mail over SMTP.")
	}
	if _, err := netmail.ParseAddress(c.From); err != nil {
		return invalid("The From address %q is not a valid e-mail address.", c.From)
	}
	return nil
}

// addr is the host:port to dial; JoinHostPort brackets IPv6 literals.
func (c Config) addr() string {
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

// String returns the configuration as a URL with the password masked, so a
// Config can be printed or logged safely.
func (c Config) String() string {
	scheme := "smtp"
	for s, m := range schemes {
		if m == c.TLS {
			scheme = s
		}
	}
	u := url.URL{Scheme: scheme, Host: c.addr()}
	switch {
	case c.Password != "":
		u.User = url.UserPassword(c.Username, "xxxxx")
	case c.Username != "":
		u.User = url.User(c.Username)
	}
	return u.String()
}

// LogValue keeps the password out of structured logs, whatever the handler.
func (c Config) LogValue() slog.Value {
	return slog.StringValue(c.String())
}

func invalid(format string, args ...any) error {
	return perch.Errorf(perch.EVALIDATION, format, args...)
}
