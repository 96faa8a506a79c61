package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/perch-dev/perch"
)

// MaxKeptPayload bounds the payload kept with a notification, in bytes: a
// larger one is not kept (docs/DESIGN.md, Kept payloads).
const MaxKeptPayload = 64 << 10

// payloadRows is how many payloads one insert statement carries at most.
const payloadRows = 16

// KeptPayload is a sender's payload to keep with the notification it made.
type KeptPayload struct {
	NotificationID string
	Body           []byte // at most MaxKeptPayload bytes
}

// KeepPayloads stores payloads beside their notifications, in one
// transaction of its own: they are written after the notifications, in
// batches, off the ingest path (worker.Recorder). A notification that keeps
// one already keeps the first. EBADREQUEST for a body over MaxKeptPayload
// or a malformed id, and nothing is stored.
func (s *Store) KeepPayloads(ctx context.Context, kept []KeptPayload) (err error) {
	if len(kept) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(kept))
	for _, k := range kept {
		if len(k.Body) > MaxKeptPayload {
			return perch.Errorf(perch.EBADREQUEST, "A kept payload is at most %d bytes; this one is %d.", MaxKeptPayload, len(k.Body))
		}
		id, err := ParseNotificationID(k.NotificationID)
		if err != nil {
			return err
		}
		args = append(args, id, k.Body)
	}
	defer func() { err = s.wrote(ctx, err) }()
	return inTx(ctx, s.w, func(tx *sql.Tx) error {
		for start := 0; start < len(args); start += 2 * payloadRows {
			chunk := args[start:min(start+2*payloadRows, len(args))]
			values := strings.Repeat("(?, ?),", len(chunk)/2)
			q := `INSERT INTO notification_payloads (notification_id, body) VALUES ` + values[:len(values)-1] + ` ON CONFLICT (notification_id) DO NOTHING`
			if _, err := tx.ExecContext(ctx, s.q(q), chunk...); err != nil {
				return err
			}
		}
		return nil
	})
}

// NotificationPayload is the payload kept with notification id; ENOTFOUND
// when none was kept (the organisation had no workflow switched on when it
// came, the payload was larger than MaxKeptPayload, or the sender sent
// none).
func (s *Store) NotificationPayload(ctx context.Context, id string) ([]byte, error) {
	n, err := ParseNotificationID(id)
	if err != nil {
		return nil, err
	}
	var body []byte
	err = s.r.QueryRowContext(ctx, s.q(`SELECT body FROM notification_payloads WHERE notification_id = ?`), n).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, perch.Errorf(perch.ENOTFOUND, "No payload was kept with this notification.")
	}
	return body, err
}
