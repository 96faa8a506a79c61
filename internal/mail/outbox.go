package mail

import (
	"context"
	"fmt"
	"log/slog"
)

// OutboxStore keeps messages that were not sent. The storage layer implements
// it with an outbox table.
type OutboxStore interface {
	SaveMail(ctx context.Context, m Message) error
}

// Outbox is the Sender used when no SMTP server is configured. It logs each
// message, link included, so that a self-hoster without mail can still verify
// an address or reset a password from the server log, and keeps it in a store
// for the admin pages.
type Outbox struct {
	store OutboxStore
	log   *slog.Logger
}

// NewOutbox returns an Outbox that saves to store and logs to logger. A nil
// store only logs; a nil logger means slog.Default().
func NewOutbox(store OutboxStore, logger *slog.Logger) *Outbox {
	if logger == nil {
		logger = slog.Default()
	}
	return &Outbox{store: store, log: logger}
}

// Send logs m at info level and saves it.
func (o *Outbox) Send(ctx context.Context, m Message) error {
	// Logged before saving: the link is what the operator needs, and it
	// should reach the log even when the store is failing.
	o.log.InfoContext(ctx, "mail kept in the outbox: no SMTP server configured",
		"to", m.To, "subject", m.Subject, "kind", m.Kind, "link", m.Link)
	if o.store == nil {
		return nil
	}
	if err := o.store.SaveMail(ctx, m); err != nil {
		return fmt.Errorf("mail: save %s to %s in the outbox: %w", m.Kind, m.To, err)
	}
	return nil
}
