package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/store"
)

// testSendTimeout bounds an admin's test send, which the request waits for.
const testSendTimeout = 30 * time.Second

// MailSettings is where the server's mail goes: an admin's settings stored
// in the database win over the environment's (PERCH_SMTP_URL with
// PERCH_MAIL_FROM), and without either mail waits in the outbox. They are
// read for every message, so a change takes effect with the next one on
// every instance, and there is no cache to keep in step.
type MailSettings struct {
	store *store.Store
	box   *secrets.Box
	env   *mail.Config
}

// NewMailSettings returns the settings over st, whose stored password box
// opens (nil: no key, and a stored password cannot be read), over env (nil:
// none in the environment).
func NewMailSettings(st *store.Store, box *secrets.Box, env *mail.Config) *MailSettings {
	return &MailSettings{store: st, box: box, env: env}
}

// Source is the mail.ConfigSource of a Mailer that follows the settings.
func (m *MailSettings) Source(ctx context.Context) (mail.Config, bool, error) {
	cfg, source, err := m.current(ctx)
	return cfg, source != perch.MailSourceNone, err
}

// tlsModes maps the settings' TLS modes to the mail package's.
var tlsModes = map[string]mail.TLSMode{
	perch.MailTLSNone:     mail.TLSNone,
	perch.MailTLSStartTLS: mail.TLSStartTLS,
	perch.MailTLSImplicit: mail.TLSImplicit,
}

// current answers the configuration in force and where it comes from. A
// stored password that cannot be opened (no key, or another key) is an
// EUNAVAILABLE error that says so.
func (m *MailSettings) current(ctx context.Context) (mail.Config, string, error) {
	stored, err := m.store.EmailSettings(ctx)
	switch {
	case err == nil:
		cfg := mail.Config{Host: stored.Host, Port: stored.Port, Username: stored.Username, From: stored.From, TLS: tlsModes[stored.TLS]}
		if stored.SealedPassword != nil {
			if m.box == nil {
				return cfg, perch.MailSourceDatabase, perch.Errorf(perch.EUNAVAILABLE,
					"The stored SMTP password cannot be read without the key it was sealed under: set PERCH_SECRET_KEY.")
			}
			pw, err := m.box.Open(stored.SealedPassword)
			if err != nil {
				return cfg, perch.MailSourceDatabase, perch.Errorf(perch.EUNAVAILABLE,
					"The stored SMTP password cannot be read (%v); store the e-mail settings again with the password.", err)
			}
			cfg.Password = string(pw)
		}
		return cfg, perch.MailSourceDatabase, nil
	case perch.ErrorCode(err) != perch.ENOTFOUND:
		return mail.Config{}, "", err
	case m.env != nil:
		return *m.env, perch.MailSourceEnvironment, nil
	}
	return mail.Config{}, perch.MailSourceNone, nil
}

// describe answers the settings in force as an admin reads them, whether or
// not the stored password can be opened.
func (m *MailSettings) describe(ctx context.Context) (*perch.EmailConfig, error) {
	stored, err := m.store.EmailSettings(ctx)
	switch {
	case err == nil:
		return &perch.EmailConfig{Host: stored.Host, Port: stored.Port, Username: stored.Username, From: stored.From,
			TLS: stored.TLS, PasswordSet: stored.SealedPassword != nil, Source: perch.MailSourceDatabase}, nil
	case perch.ErrorCode(err) != perch.ENOTFOUND:
		return nil, err
	case m.env != nil:
		e := m.env
		// smtp:// upgrades when the server offers STARTTLS but does not
		// require it, so it reads as none: TLS is not assured.
		tls := perch.MailTLSNone
		switch e.TLS {
		case mail.TLSStartTLS:
			tls = perch.MailTLSStartTLS
		case mail.TLSImplicit:
			tls = perch.MailTLSImplicit
		}
		return &perch.EmailConfig{Host: e.Host, Port: e.Port, Username: e.Username, From: e.From, TLS: tls,
			PasswordSet: e.Password != "", Source: perch.MailSourceEnvironment}, nil
	}
	return &perch.EmailConfig{TLS: perch.MailTLSNone, Source: perch.MailSourceNone}, nil
}

// errNoSecretKey answers an attempt to store a secret on a server without a
// key (PostgreSQL without PERCH_SECRET_KEY).
var errNoSecretKey = perch.Errorf(perch.EUNAVAILABLE,
	"This server has no secret key to encrypt secrets with: set PERCH_SECRET_KEY (32 random bytes in base64, e.g. the output of openssl rand -base64 32) and restart it.")

func (s *Server) getEmailConfig(w http.ResponseWriter, r *http.Request) error {
	cfg, err := s.mailCfg.describe(r.Context())
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, cfg)
}

// putEmailConfig stores the e-mail settings, which take effect with the
// next message. The password is sealed; omitted, the stored one stays.
func (s *Server) putEmailConfig(w http.ResponseWriter, r *http.Request) error {
	var in perch.EmailSettings
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := in.Validate(); err != nil {
		return err
	}
	keep := in.Password == nil
	var sealed []byte
	if !keep && *in.Password != "" {
		if s.opts.Secrets == nil {
			return errNoSecretKey
		}
		sealed = s.opts.Secrets.Seal([]byte(*in.Password))
	}
	_, err := s.adminDB.PutEmailSettings(r.Context(), store.EmailSettings{Host: in.Host, Port: in.Port, Username: in.Username,
		SealedPassword: sealed, From: in.From, TLS: in.TLS}, keep)
	if err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditEmailConfigUpdated, Target: perch.AuditTarget{Type: "email_config"},
		Changes: map[string]any{"host": in.Host, "port": in.Port, "username": in.Username, "from": in.From, "tls": in.TLS,
			"password_changed": !keep}})
	cfg, err := s.mailCfg.describe(r.Context())
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, cfg)
}

// testResult is the verdict of a test send.
type testResult struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// testEmailConfig sends a test message with the settings in force and
// answers what the SMTP server said: 200 either way, ok false when the
// message did not go.
func (s *Server) testEmailConfig(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		To string `json:"to"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	in.To = strings.TrimSpace(in.To)
	p := perch.Problems{}
	perch.ValidateEmail(p, in.To)
	if problem, bad := p["email"]; bad {
		return perch.Problems{"to": problem}.Err()
	}
	cfg, source, err := s.mailCfg.current(r.Context())
	var res testResult
	switch {
	case perch.ErrorCode(err) == perch.EINTERNAL:
		return err
	case err != nil:
		res.Message = perch.ErrorMessage(err)
	case source == perch.MailSourceNone:
		res.Message = "No SMTP server is set, so mail waits in the outbox: store the settings first (or set PERCH_SMTP_URL)."
	default:
		res = s.sendTest(r.Context(), cfg, mail.TestMessage(in.To, principal(r).User.Email, s.opts.BaseURL))
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditEmailConfigTested, Target: perch.AuditTarget{Type: "email_config"},
		Changes: map[string]any{"to": in.To, "source": source, "ok": res.OK}})
	return respond(w, http.StatusOK, res)
}

// sendTest sends m through cfg now and reports the server's verdict.
func (s *Server) sendTest(ctx context.Context, cfg mail.Config, m mail.Message) testResult {
	sender, err := mail.NewSMTP(cfg)
	if err != nil {
		return testResult{Message: perch.ErrorMessage(err)}
	}
	ctx, cancel := context.WithTimeout(ctx, testSendTimeout)
	defer cancel()
	reply, err := sender.Deliver(ctx, m)
	if err != nil {
		return testResult{Message: err.Error()}
	}
	if reply == "" {
		reply = "OK"
	}
	return testResult{OK: true, Message: "The server accepted the message: " + reply}
}
