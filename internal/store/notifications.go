package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
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
	columns, values := `scope_type, scope_id, tab, title, message, severity, source, url, created_at, dedupe_key`, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	if s.dialect == SQLite {
		columns, values = "id, "+columns, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
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
// (11 × 64 of 32,766). Past 64 rows a statement's fixed cost is a sliver
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
// notification inserts, and their announcement, across instances: ids become
// visible in order (a reader that has seen id n never later finds a smaller
// one) and are announced in that order too.
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
// writer, which is what lets ?since= replay without gaps.
//
// announce, when not nil, is called with the result after the commit, while
// no other writer can commit: on PostgreSQL the order lock is held across
// instances until it returns. Fan-out published from announce therefore
// reaches every instance in id order, so a client that has seen id n is
// never sent a smaller one later. announce should be quick.
func (s *Store) InsertNotifications(ctx context.Context, batch []NewNotification, announce func([]Stored)) ([]Stored, error) {
	now := s.now()
	out := make([]Stored, len(batch))
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
	hasJobs := slices.ContainsFunc(batch, func(nn NewNotification) bool { return len(nn.Jobs) > 0 })
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
	if s.dialect == Postgres {
		err := s.orderedPG(ctx, func(tx *sql.Tx) error { return insert(tx, 0) }, func() {
			if announce != nil {
				announce(out)
			}
		})
		if err != nil {
			return nil, err
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
			return s.tx(ctx, func(tx *sql.Tx) error { return insert(tx, next) })
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

// orderedPG runs insert in a transaction and then announce, under the
// session-level order lock on a connection of its own.
func (s *Store) orderedPG(ctx context.Context, insert func(*sql.Tx) error, announce func()) (err error) {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, notificationsLock); err != nil {
		return err
	}
	defer func() {
		if _, uerr := conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, notificationsLock); uerr != nil {
			// A connection that may still hold the lock must not go back to
			// the pool: closing it releases the lock.
			conn.Raw(func(any) error { return driver.ErrBadConn })
			if err == nil {
				err = uerr
			}
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := insert(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	announce()
	return nil
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
	args := slices.Grow(*a, 11*len(chunk))
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
		args = append(args, n.Scope.Type, n.Scope.ID, n.Tab, n.Title, n.Message, n.Severity, n.Source, n.URL, created, key)
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
	var ids []int64
	inserted := map[string]bool{}
	for rows.Next() {
		var id int64
		var key sql.NullString
		if err := rows.Scan(&id, &key); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
		if key.Valid {
			inserted[key.String] = true
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
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

const notificationColumns = `n.id, n.scope_type, n.scope_id, n.tab, n.title, n.message, n.severity, n.source, n.url, n.created_at`

func scanNotification(row interface{ Scan(...any) error }) (*perch.Notification, error) {
	var n perch.Notification
	var id, created int64
	if err := row.Scan(&id, &n.Scope.Type, &n.Scope.ID, &n.Tab, &n.Title, &n.Message, &n.Severity, &n.Source, &n.URL, &created, &n.Read); err != nil {
		return nil, err
	}
	n.ID, n.CreatedAt = strconv.FormatInt(id, 10), fromMS(created)
	return &n, nil
}

// visibleTo is the condition for the notifications a user's clients receive:
// addressed to them, their organisation, one of their teams, or everyone
// since the account was made. It takes the user id, the org id, the time the
// user joined (ms) and the user id again.
const visibleTo = `((n.scope_type = 'user' AND n.scope_id = ?) OR (n.scope_type = 'org' AND n.scope_id = ?)
	OR (n.scope_type = 'all' AND n.created_at >= ?)
	OR (n.scope_type = 'team' AND n.scope_id IN (SELECT team_id FROM team_members WHERE user_id = ?)))`

// ParseNotificationID reads a notification id; anything else is EBADREQUEST.
func ParseNotificationID(id string) (int64, error) {
	v, err := strconv.ParseInt(id, 10, 64)
	if err != nil || v < 0 {
		return 0, perch.Errorf(perch.EBADREQUEST, "%q is not a notification id.", id)
	}
	return v, nil
}

// Audience returns who a user is as a recipient: themselves, their
// organisation and their teams.
func (s *Store) Audience(ctx context.Context, u *perch.User) (*perch.Audience, error) {
	teams, err := s.UserTeamIDs(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	return &perch.Audience{UserID: u.ID, OrgID: u.OrgID, TeamIDs: teams, Joined: u.CreatedAt}, nil
}

// Notifications returns what the audience may see, with the user's read
// state: with
// since, the oldest limit after it (oldest first); without, the newest limit
// (still oldest first).
//
// It asks each scope the user hears (themselves, their organisation,
// everyone, each of their teams) on its own, through the (scope_type,
// scope_id, id) index, and merges: one query with OR over the scopes cannot
// use the index, and would read the whole table for a user with little in it.
func (s *Store) Notifications(ctx context.Context, a *perch.Audience, since string, limit int) ([]*perch.Notification, error) {
	var after int64
	if since != "" {
		var err error
		if after, err = ParseNotificationID(since); err != nil {
			return nil, err
		}
	}
	scopes := []perch.Scope{{Type: perch.ScopeUser, ID: a.UserID}, {Type: perch.ScopeOrg, ID: a.OrgID}, {Type: perch.ScopeAll}}
	for _, t := range a.TeamIDs {
		scopes = append(scopes, perch.Scope{Type: perch.ScopeTeam, ID: t})
	}
	order := "ASC"
	if since == "" {
		order = "DESC"
	}
	var ids []int64
	for _, sc := range scopes {
		// Broadcasts are for the accounts there when they were sent.
		var since int64
		if sc.Type == perch.ScopeAll {
			since = ms(a.Joined)
		}
		found, err := s.ids(ctx, `SELECT id FROM notifications WHERE scope_type = ? AND scope_id = ? AND id > ? AND created_at >= ? ORDER BY id `+order+` LIMIT ?`,
			sc.Type, sc.ID, after, since, limit)
		if err != nil {
			return nil, err
		}
		ids = append(ids, found...)
	}
	slices.Sort(ids)
	if since == "" && len(ids) > limit {
		ids = ids[len(ids)-limit:]
	} else if len(ids) > limit {
		ids = ids[:limit]
	}
	list := []*perch.Notification{}
	if len(ids) == 0 {
		return list, nil
	}
	args := []any{a.UserID}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+notificationColumns+`, r.user_id IS NOT NULL FROM notifications n
		LEFT JOIN notification_reads r ON r.notification_id = n.id AND r.user_id = ?
		WHERE n.id IN (?`+strings.Repeat(", ?", len(ids)-1)+`) ORDER BY n.id`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		n, err := scanNotification(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, n)
	}
	return list, rows.Err()
}

// ids runs a query that selects one integer column.
func (s *Store) ids(ctx context.Context, query string, args ...any) ([]int64, error) {
	return column[int64](s.r.QueryContext(ctx, s.q(query), args...))
}

// column reads the one column of rows (as a query returns them, with its
// error) into a slice, and closes them.
func column[T any](rows *sql.Rows, err error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// MarkRead records that the user read the given notifications (or, with all,
// every one they can see) and returns the ids newly marked; ids the user
// cannot see are passed over.
func (s *Store) MarkRead(ctx context.Context, u *perch.User, ids []string, all bool) ([]string, error) {
	query := `SELECT n.id FROM notifications n WHERE ` + visibleTo + `
		AND NOT EXISTS (SELECT 1 FROM notification_reads r WHERE r.notification_id = n.id AND r.user_id = ?)`
	args := []any{u.ID, u.OrgID, ms(u.CreatedAt), u.ID, u.ID}
	if !all {
		if len(ids) == 0 {
			return []string{}, nil
		}
		nums := make([]any, len(ids))
		for i, id := range ids {
			v, err := ParseNotificationID(id)
			if err != nil {
				return nil, err
			}
			nums[i] = v
		}
		query += ` AND n.id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`
		args = append(args, nums...)
	}
	marked := []string{}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.q(query+` ORDER BY n.id`), args...)
		if err != nil {
			return err
		}
		var found []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			found = append(found, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		now := ms(s.now())
		for _, id := range found {
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO notification_reads (user_id, notification_id, read_at) VALUES (?, ?, ?)
				ON CONFLICT (user_id, notification_id) DO NOTHING`), u.ID, id, now); err != nil {
				return err
			}
			marked = append(marked, strconv.FormatInt(id, 10))
		}
		return nil
	})
	return marked, err
}

// settingPrunedThrough is the settings key of the highest notification id
// that retention has deleted.
const settingPrunedThrough = "notifications.pruned_through"

// pruneChunk is how many notifications one pruning transaction deletes at
// most: a long backlog is deleted in many short transactions, so the ingest
// writer, which shares SQLite's single write lock, never waits long.
const pruneChunk = 2000

// PruneNotifications deletes notifications created before cutoff and
// remembers the highest id deleted, so that a replay from an older id can
// report the gap. It returns how many it deleted.
//
// It walks the table in id order and stops at the first notification young
// enough to keep: ids grow with creation time, so this reads only what it
// deletes, with no index on created_at for every insert to maintain. A
// notification stamped earlier than one before it (the clock stepped back)
// waits for the next pass.
func (s *Store) PruneNotifications(ctx context.Context, cutoffMS int64) (int64, error) {
	var total int64
	for {
		n, err := s.pruneNotificationsChunk(ctx, cutoffMS)
		total += n
		if err != nil || n < pruneChunk {
			return total, err
		}
	}
}

func (s *Store) pruneNotificationsChunk(ctx context.Context, cutoffMS int64) (int64, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var through int64 // the last id to delete; 0 when none is old enough
		rows, err := tx.QueryContext(ctx, s.q(`SELECT id, created_at FROM notifications ORDER BY id LIMIT ?`), pruneChunk)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id, created int64
			if err := rows.Scan(&id, &created); err != nil {
				rows.Close()
				return err
			}
			if created >= cutoffMS {
				break
			}
			through = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if through == 0 {
			return nil
		}
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM notifications WHERE id <= ?`), through)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`), settingPrunedThrough, strconv.FormatInt(through, 10))
		return err
	})
	return n, err
}

// ReplayStart says where a replay that resumes after the notification id
// since begins, and whether it has a gap. Notifications after since may have
// been pruned before the client saw them: gap. An id newer than any this
// server has given (another server's, or from before a database was
// restored) would hide every notification up to it: the replay starts from
// the oldest kept instead, also with a gap. Errors: EBADREQUEST for a
// malformed id.
func (s *Store) ReplayStart(ctx context.Context, since string) (after int64, gap bool, err error) {
	if after, err = ParseNotificationID(since); err != nil {
		return 0, false, err
	}
	var newest int64
	var through sql.NullString
	err = s.r.QueryRowContext(ctx, s.q(`SELECT COALESCE((SELECT MAX(id) FROM notifications), 0),
		(SELECT value FROM settings WHERE key = ?)`), settingPrunedThrough).Scan(&newest, &through)
	if err != nil {
		return 0, false, err
	}
	pruned, _ := strconv.ParseInt(through.String, 10, 64)
	if after > max(newest, pruned) {
		return 0, true, nil
	}
	return after, after < pruned, nil
}
