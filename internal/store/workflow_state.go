package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/perch-dev/perch"
)

// MaxDigestNotifications is how many notifications one digest holds; those
// beyond it are only counted (Digest.More), so that a flood cannot grow a
// digest without bound.
const MaxDigestNotifications = 1000

// maxDueDigests bounds how many digests one DueDigests call claims: each
// may hold MaxDigestNotifications notifications.
const maxDueDigests = 100

// maxStateKey is the longest key kept as it is; longer ones (and any that a
// database cannot store as text) are kept as a hash of themselves.
const maxStateKey = 200

// stateKey answers the form in which key is stored: itself when it is
// short, valid UTF-8 without NUL (PostgreSQL refuses NUL in text), else
// "sha256:" and its hash. Keys come from the organisation's CEL
// expressions, so they can be anything; equal keys still meet.
func stateKey(key string) string {
	if len(key) <= maxStateKey && utf8.ValidString(key) && !strings.ContainsRune(key, 0) {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// isForeignKeyViolation reports whether err is a reference to a row that
// does not exist: here, an organisation.
func isForeignKeyViolation(err error) bool {
	if e, ok := errors.AsType[*sqlite.Error](err); ok {
		return e.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
	}
	if e, ok := errors.AsType[*pgconn.PgError](err); ok {
		return e.Code == "23503"
	}
	return false
}

// orgMissing turns a foreign-key violation into ENOTFOUND for the
// organisation, and leaves any other error as it is.
func orgMissing(err error) error {
	if isForeignKeyViolation(err) {
		return perch.Errorf(perch.ENOTFOUND, "Organisation not found.")
	}
	return err
}

// Throttle counts one notification against (orgID, key) in the fixed window
// of length per that contains now (it starts at now truncated to per, in
// Unix ms) and reports whether the count is within max. Counting is one
// upsert that answers the new count, so instances sharing the database let
// exactly max through per window between them. A window of another length
// on the same key is counted apart. Old windows are removed by
// PruneWorkflowState.
//
// A max below 1 or a per below a millisecond is EBADREQUEST; an
// organisation that does not exist is ENOTFOUND.
func (s *Store) Throttle(ctx context.Context, orgID, key string, max int, per time.Duration, now time.Time) (bool, error) {
	perMS := per.Milliseconds()
	if max < 1 || perMS < 1 {
		return false, perch.Errorf(perch.EBADREQUEST, "A throttle needs a max of at least 1 and a window of at least 1ms, not %d per %s.", max, per)
	}
	at := ms(now)
	start := at - at%perMS
	if at < 0 && at%perMS != 0 { // truncate towards the past before 1970 too
		start -= perMS
	}
	var hits int64
	err := s.w.QueryRowContext(ctx, s.q(`INSERT INTO workflow_throttles (org_id, key, window_start, window_end, hits)
		VALUES (?, ?, ?, ?, 1)
		ON CONFLICT (org_id, key, window_start, window_end) DO UPDATE SET hits = workflow_throttles.hits + 1
		RETURNING hits`), orgID, stateKey(key), start, start+perMS).Scan(&hits)
	if err != nil {
		return false, orgMissing(err)
	}
	return hits <= int64(max), nil
}

// PruneWorkflowState removes the throttle windows that ended at or before
// now, and answers how many it removed.
func (s *Store) PruneWorkflowState(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM workflow_throttles WHERE window_end <= ?`), ms(now))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Digest is the notifications held under one key of an organisation until
// their window ended, to be delivered as one summary.
type Digest struct {
	OrgID         string
	Key           string // as stored: a key longer than 200 bytes is "sha256:" and its hash
	Notifications []perch.Notification
	More          int // notifications that came beyond MaxDigestNotifications: counted, not kept
	WindowEnd     time.Time
}

// HoldForDigest holds n under (orgID, key) and answers the end of the
// digest's window: the first notification starts a window ending at
// now+window; the ones after it join it, whatever their own now. One that
// comes after the window ended but before the digest was claimed joins it
// too, and goes out with it. Beyond MaxDigestNotifications they are only
// counted.
//
// A window below a millisecond, or a notification that cannot be written
// as JSON, is EBADREQUEST; an organisation that does not exist is
// ENOTFOUND.
func (s *Store) HoldForDigest(ctx context.Context, orgID, key string, window time.Duration, n perch.Notification, now time.Time) (time.Time, error) {
	if window < time.Millisecond {
		return time.Time{}, perch.Errorf(perch.EBADREQUEST, "A digest needs a window of at least 1ms, not %s.", window)
	}
	body, err := json.Marshal(n)
	if err != nil {
		return time.Time{}, perch.Errorf(perch.EBADREQUEST, "The notification cannot be held for a digest: %v.", err)
	}
	var end int64
	// The upsert holds the digest's row until the item is in (PostgreSQL),
	// and SQLite has one writer: a claimer never sees a digest without the
	// notification just counted into it.
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var id string
		var held, more int64
		err := tx.QueryRowContext(ctx, s.q(`INSERT INTO workflow_digests (id, org_id, key, window_end, held, more)
			VALUES (?, ?, ?, ?, 1, 0)
			ON CONFLICT (org_id, key) DO UPDATE SET
				held = CASE WHEN workflow_digests.held < ? THEN workflow_digests.held + 1 ELSE workflow_digests.held END,
				more = CASE WHEN workflow_digests.held < ? THEN workflow_digests.more ELSE workflow_digests.more + 1 END
			RETURNING id, window_end, held, more`),
			newID(), orgID, stateKey(key), ms(now.Add(window)), MaxDigestNotifications, MaxDigestNotifications,
		).Scan(&id, &end, &held, &more)
		if err != nil {
			return orgMissing(err)
		}
		if more > 0 {
			return nil // counted beyond the cap
		}
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO workflow_digest_items (digest_id, seq, org_id, body) VALUES (?, ?, ?, ?)`),
			id, held, orgID, string(body))
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	return fromMS(end), nil
}

// DueDigests claims the digests whose window ended at or before now, at
// most limit of them (and at most 100 per call), earliest first, and
// answers them with their notifications in the order they were held. A
// claimed digest is deleted with its notifications in the same
// transaction, so that however many instances claim at once, each digest
// is answered once; a later notification under its key starts a new one.
// The caller owns the delivery from then on.
func (s *Store) DueDigests(ctx context.Context, now time.Time, limit int) ([]*Digest, error) {
	limit = min(limit, maxDueDigests)
	if limit < 1 {
		return []*Digest{}, nil
	}
	skipLocked := ""
	if s.dialect == Postgres {
		skipLocked = ` FOR UPDATE SKIP LOCKED`
	}
	var out []*Digest
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = []*Digest{}
		rows, err := tx.QueryContext(ctx, s.q(`DELETE FROM workflow_digests WHERE id IN (
			SELECT id FROM workflow_digests WHERE window_end <= ? ORDER BY window_end, id LIMIT ?`+skipLocked+`)
			RETURNING id, org_id, key, window_end, more`), ms(now), limit)
		if err != nil {
			return err
		}
		byID := map[string]*Digest{}
		var ids []any
		for rows.Next() {
			var id string
			var end int64
			d := &Digest{Notifications: []perch.Notification{}}
			if err := rows.Scan(&id, &d.OrgID, &d.Key, &end, &d.More); err != nil {
				rows.Close()
				return err
			}
			d.WindowEnd = fromMS(end)
			byID[id], ids = d, append(ids, id)
			out = append(out, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		return s.takeDigestItems(ctx, tx, ids, byID)
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b *Digest) int { return a.WindowEnd.Compare(b.WindowEnd) })
	return out, nil
}

// takeDigestItems deletes the notifications of the digests ids and puts
// them, in the order they were held, into their digests.
func (s *Store) takeDigestItems(ctx context.Context, tx *sql.Tx, ids []any, byID map[string]*Digest) error {
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ")
	rows, err := tx.QueryContext(ctx, s.q(`DELETE FROM workflow_digest_items WHERE digest_id IN (`+marks+`)
		RETURNING digest_id, seq, body`), ids...)
	if err != nil {
		return err
	}
	defer rows.Close()
	type item struct {
		seq int64
		n   perch.Notification
	}
	items := map[string][]item{}
	for rows.Next() {
		var id, body string
		var it item
		if err := rows.Scan(&id, &it.seq, &body); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(body), &it.n); err != nil {
			return err // written by HoldForDigest from a perch.Notification: never expected
		}
		items[id] = append(items[id], it)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for id, list := range items {
		slices.SortFunc(list, func(a, b item) int { return int(a.seq - b.seq) })
		d := byID[id]
		for _, it := range list {
			d.Notifications = append(d.Notifications, it.n)
		}
	}
	return nil
}
