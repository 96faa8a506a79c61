// Package mail sends Perch's e-mail: address verification, password
// resets, invitations, the admins' test message and the newsletter.
//
// Messages are rendered from embedded templates (see templates.go) and handed
// to a [Sender]. [SMTP] delivers them through a mail server; [Outbox] logs
// them and keeps them in the database, sealed, when no server is
// configured, so a fresh install works without one. [Mailer] picks between
// the two on every send, because the admin settings can change the SMTP
// configuration while the server runs.
package mail

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/perch-dev/perch/internal/secrets"
)

// Message is one rendered e-mail to one recipient.
type Message struct {
	To      string // recipient address
	Subject string
	Text    string // text/plain body
	HTML    string // text/html body
	Kind    string // one of the perch.Email* kinds
	// Link is the action link the message carries. It is kept apart from the
	// bodies so that the outbox can show and log it without parsing them.
	Link string
	// Unsubscribe is the one-click unsubscribe URL of mail sent to a list
	// (the newsletter), sent as List-Unsubscribe with List-Unsubscribe-Post
	// (RFC 8058); "" for transactional mail.
	Unsubscribe string
}

// Sender delivers messages. Implementations are safe for concurrent use.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// ConfigSource reports the SMTP configuration in force. ok=false means no
// server is configured and mail goes to the outbox.
type ConfigSource func(ctx context.Context) (cfg Config, ok bool, err error)

// StaticSource returns a ConfigSource that always reports cfg and ok, for a
// configuration read once from the environment.
func StaticSource(cfg Config, ok bool) ConfigSource {
	return func(context.Context) (Config, bool, error) { return cfg, ok, nil }
}

// Mailer is the Sender the rest of Perch uses. It asks its source for the
// configuration on every Send, so a change in the admin settings takes effect
// with the next message, without a restart.
type Mailer struct {
	source ConfigSource
	outbox *Outbox
	log    *slog.Logger
}

// NewMailer returns a Mailer that sends through SMTP when source reports a
// configuration and through an [Outbox] on store, sealing with box,
// otherwise. A nil source always means the outbox; a nil box withholds
// the links and bodies of the mail the outbox keeps; a nil logger means
// slog.Default().
func NewMailer(source ConfigSource, store OutboxStore, box *secrets.Box, logger *slog.Logger) *Mailer {
	if logger == nil {
		logger = slog.Default()
	}
	if source == nil {
		source = StaticSource(Config{}, false)
	}
	return &Mailer{source: source, outbox: NewOutbox(store, box, logger), log: logger}
}

// Send delivers m through the configured SMTP server, or keeps it in the
// outbox when there is none.
func (ml *Mailer) Send(ctx context.Context, m Message) error {
	cfg, ok, err := ml.source(ctx)
	if err != nil {
		return fmt.Errorf("mail: load SMTP settings: %w", err)
	}
	if !ok {
		return ml.outbox.Send(ctx, m)
	}
	s, err := NewSMTP(cfg)
	if err != nil {
		return err
	}
	if err := s.Send(ctx, m); err != nil {
		return err
	}
	ml.log.InfoContext(ctx, "mail sent", "to", m.To, "kind", m.Kind, "smtp", cfg)
	return nil
}
