package mail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/secrets"
)

// OutboxStore keeps messages that were not sent. The storage layer implements
// it with an outbox table.
type OutboxStore interface {
	SaveMail(ctx context.Context, k perch.KeptMail) error
}

// Errors of Open.
var (
	// ErrWithheld: the message was kept without its link and bodies.
	ErrWithheld = errors.New("mail: kept without its link and text, as the server had no PERCH_SECRET_KEY to seal them with; set it and send the mail again")
	// ErrNoKey: the message is sealed and no key was given to open it.
	ErrNoKey = errors.New("mail: sealed, and there is no key to open it: give PERCH_SECRET_KEY as the server has it (on SQLite, perch.key beside the database)")
)

// sealedContent is what Keep seals.
type sealedContent struct {
	Link string `json:"link"`
	Text string `json:"text"`
	HTML string `json:"html"`
}

// Keep is m as the outbox keeps it: its link and bodies sealed with box, or
// withheld when box is nil.
func Keep(m Message, box *secrets.Box) perch.KeptMail {
	k := perch.KeptMail{To: m.To, Subject: m.Subject, Kind: m.Kind}
	if box == nil {
		k.Withheld = true
		return k
	}
	plain, err := json.Marshal(sealedContent{Link: m.Link, Text: m.Text, HTML: m.HTML})
	if err != nil {
		panic(err) // three strings always encode
	}
	k.Sealed = box.Seal(plain)
	return k
}

// Seal seals with box the link and bodies of k, mail an older Perch kept
// in the clear, as Keep would have.
func Seal(k perch.KeptMail, box *secrets.Box) []byte {
	return Keep(Message{To: k.To, Subject: k.Subject, Kind: k.Kind, Link: k.Link, Text: k.Text, HTML: k.HTML}, box).Sealed
}

// Open returns the message k keeps, its link and bodies opened with box:
// ErrWithheld for one kept without them, ErrNoKey when it is sealed and box
// is nil, and the box's errors for one sealed under another key or
// damaged. Mail kept in the clear comes back as it is.
func Open(k perch.KeptMail, box *secrets.Box) (Message, error) {
	m := Message{To: k.To, Subject: k.Subject, Kind: k.Kind, Link: k.Link, Text: k.Text, HTML: k.HTML}
	switch {
	case k.Withheld:
		return m, ErrWithheld
	case k.Sealed == nil:
		return m, nil
	case box == nil:
		return m, ErrNoKey
	}
	plain, err := box.Open(k.Sealed)
	if err != nil {
		return m, err
	}
	var c sealedContent
	if err := json.Unmarshal(plain, &c); err != nil {
		return m, fmt.Errorf("mail: the sealed message does not read: %w", err)
	}
	m.Link, m.Text, m.HTML = c.Link, c.Text, c.HTML
	return m, nil
}

// Outbox is the Sender used when no SMTP server is configured. It keeps each
// message in a store, sealed (Keep), where the operator reads it (`perch
// admin outbox`), and logs that one is waiting. The log never carries the
// message's link, for the same reason the store keeps it sealed.
type Outbox struct {
	store OutboxStore
	box   *secrets.Box
	log   *slog.Logger
}

// NewOutbox returns an Outbox that seals with box (nil: no key, and the
// links and bodies are withheld), saves to store and logs to logger. A nil
// store only logs; a nil logger means slog.Default().
func NewOutbox(store OutboxStore, box *secrets.Box, logger *slog.Logger) *Outbox {
	if logger == nil {
		logger = slog.Default()
	}
	return &Outbox{store: store, box: box, log: logger}
}

// Send saves m, sealed, and logs, without its link, that it is waiting.
func (o *Outbox) Send(ctx context.Context, m Message) error {
	k := Keep(m, o.box)
	if o.store != nil {
		if err := o.store.SaveMail(ctx, k); err != nil {
			return fmt.Errorf("mail: save %s to %s in the outbox: %w", m.Kind, m.To, err)
		}
	}
	if k.Withheld {
		o.log.WarnContext(ctx, "mail waiting in the outbox without its link and text (no SMTP server configured, and no PERCH_SECRET_KEY to seal them with): "+
			"set PERCH_SECRET_KEY or an SMTP server, and send it again",
			"to", m.To, "subject", m.Subject, "kind", m.Kind)
		return nil
	}
	o.log.InfoContext(ctx, "mail waiting in the outbox (no SMTP server configured); read it with: perch admin outbox",
		"to", m.To, "subject", m.Subject, "kind", m.Kind)
	return nil
}
