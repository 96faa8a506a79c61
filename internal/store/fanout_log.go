package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/perch-dev/perch"
)

// The logs an instance reads to deliver what happened on any instance
// (internal/feed): the notifications table itself, and the fan-out log of
// everything else (read receipts, changes of grants, revocations, cache
// drops). Both become visible in id order: notifications under the order
// lock of InsertNotifications, fan-out entries under fanoutLogLock. So a
// reader that has read up to id n never later finds a smaller id it has
// not read.

// fanoutLogLock orders the fan-out log's inserts across instances on
// PostgreSQL: held until the inserting transaction commits, it makes ids
// commit, and so become visible, in the order they are given.
const fanoutLogLock = 7_310_002

// FanoutLogRetention is how long fan-out log entries are kept: far longer
// than any instance that is alive lags behind.
const FanoutLogRetention = time.Hour

// LoggedMessage is a fan-out message as the log keeps it.
type LoggedMessage struct {
	ID      int64
	Message perch.FanoutMessage
}

// AppendFanout adds m to the fan-out log and returns its id.
func (s *Store) AppendFanout(ctx context.Context, m perch.FanoutMessage) (int64, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return 0, err
	}
	var id int64
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if s.dialect == Postgres {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, fanoutLogLock); err != nil {
				return err
			}
		}
		return tx.QueryRowContext(ctx, s.q(`INSERT INTO fanout_log (message, created_at) VALUES (?, ?) RETURNING id`),
			string(body), ms(s.now())).Scan(&id)
	})
	return id, err
}

// FanoutAfter returns the fan-out log's entries after id after, oldest
// first, at most limit of them.
func (s *Store) FanoutAfter(ctx context.Context, after int64, limit int) ([]LoggedMessage, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT id, message FROM fanout_log WHERE id > ? ORDER BY id LIMIT ?`), after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []LoggedMessage
	for rows.Next() {
		var e LoggedMessage
		var body string
		if err := rows.Scan(&e.ID, &body); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(body), &e.Message); err != nil {
			return nil, fmt.Errorf("store: fan-out log entry %d: %w", e.ID, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// NotificationsAfter returns the notifications after id after, oldest
// first, at most limit of them, as the writer announced them (Read false).
func (s *Store) NotificationsAfter(ctx context.Context, after int64, limit int) ([]perch.Notification, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+notificationColumns+`, FALSE FROM notifications n WHERE n.id > ? ORDER BY n.id LIMIT ?`), after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []perch.Notification
	for rows.Next() {
		n, err := scanNotification(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *n)
	}
	return out, rows.Err()
}

// LogHeads are where the two logs stand: the newest notification and
// fan-out entry, and how far notifications were pruned (a reader behind it
// has missed some for good).
type LogHeads struct {
	Notifications, Fanout, PrunedThrough int64
}

// LogHeads reads where the logs stand now.
func (s *Store) LogHeads(ctx context.Context) (LogHeads, error) {
	var h LogHeads
	var through sql.NullString
	err := s.r.QueryRowContext(ctx, s.q(`SELECT COALESCE((SELECT MAX(id) FROM notifications), 0),
		COALESCE((SELECT MAX(id) FROM fanout_log), 0), (SELECT value FROM settings WHERE key = ?)`), settingPrunedThrough).
		Scan(&h.Notifications, &h.Fanout, &through)
	if err != nil {
		return h, err
	}
	h.PrunedThrough, _ = strconv.ParseInt(through.String, 10, 64)
	return h, nil
}

// PruneFanoutLog deletes fan-out log entries older than FanoutLogRetention
// and returns how many went.
func (s *Store) PruneFanoutLog(ctx context.Context) (int64, error) {
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM fanout_log WHERE created_at < ?`), ms(s.now().Add(-FanoutLogRetention)))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
