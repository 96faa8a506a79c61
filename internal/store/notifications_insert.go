package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/perch-dev/perch"
)

// NewNotification is a notification to store, and the key that makes a
// redelivery of it a no-op (empty: no de-duplication).
type NewNotification struct {
	Notification perch.Notification // ID and CreatedAt are assigned by the store
	DedupeKey    string
	Jobs         []NotificationJob // queued with the notification when it is new
}

// Stored is the outcome of storing one NewNotification: the notification with
// its id and time, and whether it was a redelivery of one already stored.
type Stored struct {
	Notification perch.Notification
	Duplicate    bool
}

// insertNotifications returns the statement that inserts rows notifications
// at once. A row whose dedupe key is stored already is skipped (the key's
// unique index is partial, so the conflict target names its predicate). On
// SQLite each row gives its id; PostgreSQL takes them from the identity
// column and returns the id and key of each row it did insert.
func (s *Store) insertNotifications(rows int) string {
	var b strings.Builder
	columns, values := `scope_type, scope_id, tab, title, message, severity, source, url, created_at, dedupe_key, priority, extras`, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	if s.dialect == SQLite {
		columns, values = "id, "+columns, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	}
	b.WriteString("INSERT INTO notifications (" + columns + ") VALUES ")
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(values)
	}
	b.WriteString(` ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING`)
	if s.dialect == Postgres {
		b.WriteString(` RETURNING id, dedupe_key`)
	}
	return b.String()
}

// maxInsertRows is the most rows one SQLite insert statement carries; a
// larger batch is split. Up to it, a batch is one statement of exactly its
// size, prepared once per size and kept. The bound is on the memory those
// statements hold (SQLite's program for a statement grows with its rows:
// about 1.2 KB a row, so every size up to 64 is some 2.5 MB, up to 256
// some 40 MB), and is far below SQLite's limit on variables
// (13 × 64 of 32,766). Past 64 rows a statement's fixed cost is a sliver
// of a row's.
const maxInsertRows = 64

// insertChunks are the row counts of PostgreSQL's multi-row insert
// statements, largest first: a batch is cut into these, so a handful of
// prepared statements serve every batch size (each size is prepared on every
// connection of the pool, and a 256-row one holds some 750 KB of the
// server's memory), and one statement's overhead is shared by up to 64
// rows. Workflow runs are inserted in the same sizes.
var insertChunks = []int{64, 16, 4, 1}

func chunkSize(rows int) int {
	for _, n := range insertChunks {
		if rows >= n {
			return n
		}
	}
	return 1
}

// statementRows is how many of the rows left of a batch its next insert
// statement carries.
func (s *Store) statementRows(left int) int {
	if s.dialect == SQLite {
		return min(left, maxInsertRows)
	}
	return chunkSize(left)
}

// notificationsLock is the PostgreSQL advisory lock that serializes
// notification inserts across instances: taken inside the inserting
// transaction and held until it commits, it makes ids commit, and so become
// visible, in the order they are given (a reader that has seen id n never
// later finds a smaller one).
const notificationsLock = 7_310_001

// notificationIDs is, on SQLite, the id the next notification gets. The
// table has no AUTOINCREMENT (its sqlite_sequence row cost every insert
// statement a read and a write), and SQLite's own choice, one past the
// largest rowid, would give an id again once pruning emptied the table.
// The store gives ids itself instead: one past both the largest id and the
// highest pruned one, read in the first writing transaction and then kept,
// since this store's inserts are the only ones. It is forgotten whenever a
// transaction that used it fails.
type notificationIDs struct {
	mu   sync.Mutex // held across the inserting transaction
	next int64      // 0: read it again
}

// InsertNotifications stores a batch in one transaction, in order, and
// returns one Stored per input. Ids increase in commit order across every
// writer, and become visible in that order (on PostgreSQL under the order
// lock, notificationsLock), which is what lets ?since= replay, and every
// instance's reader of the log (internal/feed), go without gaps.
//
// announce, when not nil, is called with the result after the commit, by
// the one goroutine that writes (the ingest writer), so in commit order;
// announce should be quick.
//
// How the batch went counts in WriteHealth; an outage fails it with a
// perch.EUNAVAILABLE error.
func (s *Store) InsertNotifications(ctx context.Context, batch []NewNotification, announce func([]Stored)) (_ []Stored, err error) {
	defer func() { err = s.wrote(ctx, err) }()
	now := s.now()
	out := make([]Stored, len(batch))
	for i := range batch {
		n := &batch[i].Notification
		n.Priority = priority(n)
	}
	hasJobs := slices.ContainsFunc(batch, func(nn NewNotification) bool { return len(nn.Jobs) > 0 })
	if s.dialect == Postgres && !hasJobs {
		if err := s.insertPipelined(ctx, batch, out, now); err != nil {
			return nil, err
		}
		if announce != nil {
			announce(out)
		}
		return out, nil
	}
	// Statements are prepared before the transaction: on SQLite the
	// transaction holds the only writer connection, which preparing would
	// wait for.
	var stmts []*sql.Stmt
	for start := 0; start < len(batch); {
		n := s.statementRows(len(batch) - start)
		st, err := s.insertStatement(ctx, n)
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, st)
		start += n
	}
	// insert runs the statements in tx, or, with tx nil, on the writer
	// itself (on SQLite, a batch of one statement and no jobs: see
	// insertSQLite); on SQLite the rows take the ids from next on.
	insert := func(tx *sql.Tx, next int64) error {
		var q querier = s.w
		if tx != nil {
			q = tx
		}
		start := 0
		for _, st := range stmts {
			rows := s.statementRows(len(batch) - start)
			chunk, into := batch[start:start+rows], out[start:start+rows]
			if tx != nil {
				st = tx.StmtContext(ctx, st)
			}
			var err error
			if s.dialect == SQLite {
				err = s.insertWithIDs(ctx, q, st, next, now, chunk, into)
				next += int64(rows)
			} else {
				err = s.insertReturning(ctx, q, st, now, chunk, into)
			}
			if err != nil {
				return err
			}
			start += rows
		}
		if hasJobs {
			return s.queueNotificationJobs(ctx, tx, batch, out, now)
		}
		return nil
	}
	if s.dialect == Postgres { // a batch with jobs to queue beside it
		err := inTx(ctx, s.w, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, notificationsLock); err != nil {
				return err
			}
			return insert(tx, 0)
		})
		if err != nil {
			return nil, err
		}
		if announce != nil {
			announce(out)
		}
		return out, nil
	}
	// SQLite: one process, one writer connection; the caller's single
	// writer goroutine keeps commit and announcement in order.
	if err := s.insertSQLite(ctx, len(batch), len(stmts) == 1 && !hasJobs, insert); err != nil {
		return nil, err
	}
	if announce != nil {
		announce(out)
	}
	return out, nil
}

// insertStatement is the prepared insert of rows notifications, kept by
// its row count once prepared.
func (s *Store) insertStatement(ctx context.Context, rows int) (*sql.Stmt, error) {
	slot := &s.insertStmts[rows]
	if st := slot.Load(); st != nil {
		return st, nil
	}
	st, err := s.prepared(ctx, s.w, s.insertNotifications(rows))
	if err != nil {
		return nil, err
	}
	slot.Store(st)
	return st, nil
}

// insertSQLite runs insert, for rows notifications, with the ids that come
// next: in a transaction, or, when alone is set (the batch is one
// statement and queues no jobs), as that statement alone, which SQLite
// makes a transaction of its own without a BEGIN and a COMMIT to parse and
// run. Should another connection to the file have added notifications after
// the ids were read (a clash on an id), they are read again and the insert
// runs once more.
func (s *Store) insertSQLite(ctx context.Context, rows int, alone bool, insert func(tx *sql.Tx, next int64) error) error {
	ids := &s.notificationIDs
	ids.mu.Lock()
	defer ids.mu.Unlock()
	for attempt := 0; ; attempt++ {
		next := ids.next
		err := func() error {
			if next == 0 {
				if err := s.w.QueryRowContext(ctx, `SELECT MAX(COALESCE((SELECT MAX(id) FROM notifications), 0),
					COALESCE((SELECT CAST(value AS INTEGER) FROM settings WHERE key = ?), 0)) + 1`, settingPrunedThrough).Scan(&next); err != nil {
					return err
				}
			}
			if alone {
				return insert(nil, next)
			}
			return inTx(ctx, s.w, func(tx *sql.Tx) error { return insert(tx, next) }) // counted once, by InsertNotifications
		}()
		if err == nil {
			ids.next = next + int64(rows)
			return nil
		}
		ids.next = 0
		if attempt > 0 || !isPrimaryKeyClash(err) {
			return err
		}
	}
}

// isPrimaryKeyClash reports whether err is SQLite's clash on a row's key.
func isPrimaryKeyClash(err error) bool {
	e, ok := errors.AsType[*sqlite.Error](err)
	return ok && e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// insertWithIDs inserts one statement's worth of rows on SQLite, the first
// with id first and the rest after it in order, and fills out. When every
// row went in (as it does for rows without a key, and nearly always), that
// says it all: no RETURNING, which costs SQLite a temporary table for every
// statement. Otherwise the ids that went in say which rows did; the others'
// keys were stored before (or earlier in the batch): duplicates.
func (s *Store) insertWithIDs(ctx context.Context, q querier, insert *sql.Stmt, first int64, now time.Time, chunk []NewNotification, out []Stored) error {
	args := insertArgs(chunk, now, first)
	res, err := insert.ExecContext(ctx, *args...)
	args.release()
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	inserted := func(int64) bool { return true }
	if n != int64(len(chunk)) {
		ids, err := column[int64](q.QueryContext(ctx, `SELECT id FROM notifications WHERE id >= ? AND id < ? ORDER BY id`, first, first+int64(len(chunk))))
		if err != nil {
			return err
		}
		if len(ids) != int(n) {
			return fmt.Errorf("insert notifications: %d rows inserted, %d found", n, len(ids))
		}
		inserted = func(id int64) bool { _, found := slices.BinarySearch(ids, id); return found }
	}
	for i, nn := range chunk {
		id := first + int64(i)
		if !inserted(id) {
			existing, err := s.keyed(ctx, q, nn.DedupeKey)
			if err != nil {
				return err
			}
			out[i] = Stored{Notification: *existing, Duplicate: true}
			continue
		}
		n := nn.Notification
		n.ID, n.CreatedAt, n.Read = strconv.FormatInt(id, 10), now, false
		out[i] = Stored{Notification: n}
	}
	return nil
}

// keyed returns the stored notification with dedupe key k.
func (s *Store) keyed(ctx context.Context, q querier, k string) (*perch.Notification, error) {
	return scanNotification(q.QueryRowContext(ctx, s.q(`SELECT `+notificationColumns+`, FALSE FROM notifications n WHERE n.dedupe_key = ?`), k))
}

// rowArgs are a statement's arguments, kept for the next statement once
// it has run: an insert of a dozen rows takes over a hundred.
type rowArgs []any

var rowArgsPool = sync.Pool{New: func() any { return new(rowArgs) }}

// release empties a and hands it back for reuse.
func (a *rowArgs) release() {
	clear(*a)
	*a = (*a)[:0]
	rowArgsPool.Put(a)
}

// insertArgs are the values of insertNotifications' rows; with first (on
// SQLite, not 0), each row's id from first on. Release them once the
// statement has run.
func insertArgs(chunk []NewNotification, now time.Time, first int64) *rowArgs {
	a := rowArgsPool.Get().(*rowArgs)
	args := slices.Grow(*a, 13*len(chunk))
	created := any(ms(now)) // boxed once for every row
	for i, nn := range chunk {
		n := &nn.Notification
		var key any // NULL without a key
		if nn.DedupeKey != "" {
			key = nn.DedupeKey
		}
		if first != 0 {
			args = append(args, first+int64(i))
		}
		args = append(args, n.Scope.Type, n.Scope.ID, n.Tab, n.Title, n.Message, n.Severity, n.Source, n.URL, created, key, n.Priority, encodeExtras(n))
	}
	*a = args
	return a
}

// insertReturning inserts one statement's worth of rows on PostgreSQL and
// fills out. Ids come in the order of the VALUES rows, so sorted they pair
// off with the rows that were inserted: every row but those whose key was
// stored before (or earlier in the same batch), which are duplicates.
func (s *Store) insertReturning(ctx context.Context, q querier, insert *sql.Stmt, now time.Time, chunk []NewNotification, out []Stored) error {
	args := insertArgs(chunk, now, 0)
	rows, err := insert.QueryContext(ctx, *args...)
	args.release() // the query has sent them
	if err != nil {
		return err
	}
	var r returned
	for rows.Next() {
		var id int64
		var key sql.NullString
		if err := rows.Scan(&id, &key); err != nil {
			rows.Close()
			return err
		}
		r.add(id, key)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return s.pairReturned(ctx, q, r, now, chunk, out)
}

// returned is what an insert of PostgreSQL answered: the ids and keys of
// the rows that went in.
type returned struct {
	ids      []int64
	inserted map[string]bool
}

func (r *returned) add(id int64, key sql.NullString) {
	r.ids = append(r.ids, id)
	if key.Valid {
		if r.inserted == nil {
			r.inserted = map[string]bool{}
		}
		r.inserted[key.String] = true
	}
}

// pairReturned fills out for chunk from what its insert answered; a row
// whose key was stored before is the duplicate of that row, read with q.
func (s *Store) pairReturned(ctx context.Context, q querier, r returned, now time.Time, chunk []NewNotification, out []Stored) error {
	ids, inserted := r.ids, r.inserted
	slices.Sort(ids)
	next := 0
	for i, nn := range chunk {
		if k := nn.DedupeKey; k != "" {
			if !inserted[k] {
				existing, err := s.keyed(ctx, q, k)
				if err != nil {
					return err
				}
				out[i] = Stored{Notification: *existing, Duplicate: true}
				continue
			}
			delete(inserted, k) // a later row with the same key is a duplicate of this one
		}
		if next >= len(ids) {
			return fmt.Errorf("insert notifications: %d ids returned for more rows", len(ids))
		}
		n := nn.Notification
		n.ID, n.CreatedAt, n.Read = strconv.FormatInt(ids[next], 10), now, false
		out[i] = Stored{Notification: n}
		next++
	}
	return nil
}
