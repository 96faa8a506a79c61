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

// Outbox is the Sender used when no SMTP server is configured. It keeps each
// message in a store, where the operator reads it (`perch admin outbox`),
// and logs that one is waiting. The log never carries the message's link:
// reset, verification and invitation links are credentials, and whoever
// reads the logs must not be able to take accounts over with them.
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

// Send saves m and logs, without its link, that it is waiting.
func (o *Outbox) Send(ctx context.Context, m Message) error {
	if o.store != nil {
		if err := o.store.SaveMail(ctx, m); err != nil {
			return fmt.Errorf("mail: save %s to %s in the outbox: %w", m.Kind, m.To, err)
		}
	}
	o.log.InfoContext(ctx, "mail waiting in the outbox (no SMTP server configured); read it with: perch admin outbox",
		"to", m.To, "subject", m.Subject, "kind", m.Kind)
	return nil
}
