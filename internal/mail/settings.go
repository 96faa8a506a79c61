package mail

import (
	"context"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/store"
)

// Settings is where the server's mail goes: an admin's settings stored
// in the database win over the environment's (PERCH_SMTP_URL with
// PERCH_MAIL_FROM), and without either mail waits in the outbox. They are
// read for every message, so a change takes effect with the next one on
// every instance, and there is no cache to keep in step.
type Settings struct {
	store SettingsStore
	box   *secrets.Box
	env   *Config
}

// SettingsStore is where an admin's settings are stored (*store.Store).
type SettingsStore interface {
	EmailSettings(ctx context.Context) (*store.EmailSettings, error)
}

// NewSettings returns the settings over st, whose stored password box
// opens (nil: no key, and a stored password cannot be read), over env (nil:
// none in the environment).
func NewSettings(st SettingsStore, box *secrets.Box, env *Config) *Settings {
	return &Settings{store: st, box: box, env: env}
}

// Source is the mail.ConfigSource of a Mailer that follows the settings.
func (m *Settings) Source(ctx context.Context) (Config, bool, error) {
	cfg, source, err := m.Current(ctx)
	return cfg, source != perch.MailSourceNone, err
}

// tlsModes maps the settings' TLS modes to the mail package's.
var tlsModes = map[string]TLSMode{
	perch.MailTLSNone:     TLSNone,
	perch.MailTLSStartTLS: TLSStartTLS,
	perch.MailTLSImplicit: TLSImplicit,
}

// Current answers the configuration in force and where it comes from. A
// stored password that cannot be opened (no key, or another key) is an
// EUNAVAILABLE error that says so.
func (m *Settings) Current(ctx context.Context) (Config, string, error) {
	stored, err := m.store.EmailSettings(ctx)
	switch {
	case err == nil:
		cfg := Config{Host: stored.Host, Port: stored.Port, Username: stored.Username, From: stored.From, TLS: tlsModes[stored.TLS]}
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
		return Config{}, "", err
	case m.env != nil:
		return *m.env, perch.MailSourceEnvironment, nil
	}
	return Config{}, perch.MailSourceNone, nil
}

// Describe answers the settings in force as an admin reads them, whether or
// not the stored password can be opened.
func (m *Settings) Describe(ctx context.Context) (*perch.EmailConfig, error) {
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
		case TLSStartTLS:
			tls = perch.MailTLSStartTLS
		case TLSImplicit:
			tls = perch.MailTLSImplicit
		}
		return &perch.EmailConfig{Host: e.Host, Port: e.Port, Username: e.Username, From: e.From, TLS: tls,
			PasswordSet: e.Password != "", Source: perch.MailSourceEnvironment}, nil
	}
	return &perch.EmailConfig{TLS: perch.MailTLSNone, Source: perch.MailSourceNone}, nil
}
