package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/perch-dev/perch"
)

// MaxKeptPayload bounds the payload kept with a notification, in bytes: a
// larger one is not kept (docs/DESIGN.md, Kept payloads).
const MaxKeptPayload = 64 << 10

// payloadRows is how many payloads one insert statement carries at most.
const payloadRows = 16

// keepPayloads stores, in tx, the payloads of the batch's notifications
// that are new (a redelivery keeps the payload of the first delivery).
func (s *Store) keepPayloads(ctx context.Context, tx *sql.Tx, batch []NewNotification, out []Stored) error {
	var args []any
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		values := strings.Repeat("(?, ?),", len(args)/2)
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO notification_payloads (notification_id, body) VALUES `+values[:len(values)-1]), args...)
		args = args[:0]
		return err
	}
	for i, nn := range batch {
		if nn.Payload == nil || out[i].Duplicate {
			continue
		}
		if len(nn.Payload) > MaxKeptPayload {
			return fmt.Errorf("keep payload: %d bytes, more than %d", len(nn.Payload), MaxKeptPayload)
		}
		id, err := strconv.ParseInt(out[i].Notification.ID, 10, 64)
		if err != nil {
			return err
		}
		args = append(args, id, nn.Payload)
		if len(args) == 2*payloadRows {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
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
