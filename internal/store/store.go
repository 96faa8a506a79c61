// Package store keeps Perch's state in SQLite or PostgreSQL. One Store type
// serves both: the Go is shared, the SQL is written once with ? placeholders
// (rebound to $n for PostgreSQL), and each dialect has its own embedded,
// numbered migrations. Missing rows are perch.ENOTFOUND errors, never nil
// results, and driver errors are mapped by their codes (isUniqueViolation
// where a clash means something; pgError for every PostgreSQL statement).
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/perch-dev/perch"
)

//go:embed migrations
var migrations embed.FS

// Dialect names the database behind a Store.
type Dialect string

// The two supported dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Store is Perch's state. It is safe for concurrent use.
type Store struct {
	dialect Dialect
	w       *sql.DB // writes; a single connection on SQLite, which has one writer
	r       *sql.DB // reads; the same pool as w on PostgreSQL

	// Now is the clock; tests replace it.
	Now func() time.Time

	rebound sync.Map // query with ? → query with $n, for PostgreSQL
	stmts   sync.Map // stmtKey → *sql.Stmt, for the hot paths

	// insertStmts are the notification inserts by row count (see
	// insertStatement), which spares hashing their long text on every batch.
	insertStmts [maxInsertRows + 1]atomic.Pointer[sql.Stmt]

	ckpt *checkpointer // SQLite only
	path string        // the SQLite file; "" on PostgreSQL
	sync Sync          // SQLite only

	writes writeHealth // how writes have gone lately (WriteHealth)

	notificationIDs notificationIDs // SQLite only
}

type stmtKey struct {
	db    *sql.DB
	query string
}

// Sync is how a commit on SQLite reaches the disk (PRAGMA synchronous, in
// WAL mode).
type Sync string

// The two settings of Sync that Perch offers.
const (
	// SyncNormal syncs the log only before a checkpoint (the background
	// checkpointer runs one every second): a commit survives the process
	// being killed, but a power loss or an operating-system crash may take
	// the commits of about the last second before it; the database stays
	// consistent either way.
	SyncNormal Sync = "normal"
	// SyncFull syncs the log at every commit, before the commit returns:
	// a commit survives power loss too.
	SyncFull Sync = "full"
)

// Option is a setting of Open.
type Option func(*Store)

// WithSQLiteSync sets how SQLite commits reach the disk ("" leaves the
// default, SyncNormal); PostgreSQL ignores it (its own synchronous_commit
// rules).
func WithSQLiteSync(sync Sync) Option {
	return func(s *Store) {
		if sync != "" {
			s.sync = sync
		}
	}
}

// Open connects to the database named by dsn: a postgres:// or postgresql://
// URL, or else a SQLite file path (optionally written sqlite://path or
// file:path). It does not migrate; call Migrate.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	s := &Store{Now: time.Now, sync: SyncNormal}
	for _, o := range opts {
		o(s)
	}
	if s.sync != SyncNormal && s.sync != SyncFull {
		return nil, fmt.Errorf("open: SQLite sync %q is neither %q nor %q", s.sync, SyncNormal, SyncFull)
	}
	var err error
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		s.dialect = Postgres
		c, err := openPostgres(dsn)
		if err != nil {
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		s.w = sql.OpenDB(c)
		s.w.SetMaxOpenConns(20)
		s.w.SetMaxIdleConns(20)
		s.w.SetConnMaxIdleTime(5 * time.Minute)
		s.r = s.w
	} else {
		s.dialect = SQLite
		path := SQLitePath(dsn)
		if path == "" {
			return nil, errors.New("open sqlite: empty file path")
		}
		s.path = path
		if err := createPrivate(path); err != nil {
			return nil, fmt.Errorf("open sqlite: %w", err)
		}
		if s.w, err = openSQLite(sqliteDSN(path, sqliteWriter, s.sync)); err != nil {
			return nil, fmt.Errorf("open sqlite: %w", err)
		}
		s.w.SetMaxOpenConns(1)
		s.w.SetMaxIdleConns(1)
		s.w.SetConnMaxLifetime(0)
		if s.r, err = openSQLite(sqliteDSN(path, sqliteReader, s.sync)); err != nil {
			s.w.Close()
			return nil, fmt.Errorf("open sqlite: %w", err)
		}
		// Keep every reader open: database/sql keeps two idle by default, and
		// reopening a SQLite connection costs its pragmas and re-preparing.
		readers := max(4, runtime.NumCPU())
		s.r.SetMaxOpenConns(readers)
		s.r.SetMaxIdleConns(readers)
		if err := s.startCheckpointer(path); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// SQLitePath is the file a SQLite dsn names (as Open reads it: a path,
// optionally written sqlite://path or file:path); "" for a PostgreSQL URL.
func SQLitePath(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return ""
	}
	return strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite://"), "file:")
}

// createPrivate creates the SQLite database file at path, empty (which
// SQLite reads as a new database), readable and writable by its owner alone
// (0600), when there is none: the database holds password hashes, sealed
// secrets and the audit log, and SQLite itself would create it 0644, which
// every user of the machine can read. SQLite creates the -wal and -shm
// files with the mode of the database file (the unix VFS copies it), so
// they are 0600 too. An existing file is left as it is: its mode is the
// operator's choice (a backup user's group, say), and a server that
// changed it at every start would undo that choice without asking;
// cmd/perch warns when it is readable by others.
func createPrivate(path string) error {
	if path == ":memory:" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// The roles of SQLite connections: the single writer, the readers, and the
// connection that checkpoints the WAL in the background.
type sqliteRole int

const (
	sqliteWriter sqliteRole = iota
	sqliteReader
	sqliteCheckpointer
)

// sqliteDSN names the pragmas every connection gets: WAL so readers never
// wait for the writer, a busy timeout instead of immediate SQLITE_BUSY,
// commits as durable as sync says, and
// immediate transactions so a writer takes its lock up front, with its
// temporary files in memory. The writer
// leaves checkpoints to the checkpointer (see checkpoint.go) unless the WAL
// grows past walBackstop pages.
func sqliteDSN(path string, role sqliteRole, sync Sync) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+strings.ToUpper(string(sync))+")")
	q.Add("_pragma", "foreign_keys(1)")
	switch role {
	case sqliteWriter:
		q.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(walBackstop)+")")
		// Statement journals (which SQLite keeps for every multi-row
		// INSERT inside a transaction) in memory, not in a temporary file
		// written page by page.
		q.Add("_pragma", "temp_store(MEMORY)")
		q.Set("_txlock", "immediate")
	case sqliteReader:
		q.Add("_pragma", "query_only(1)")
	}
	return "file:" + path + "?" + q.Encode()
}

// Dialect reports which database the store uses.
func (s *Store) Dialect() Dialect { return s.dialect }

// Path is the SQLite database's file, beside which the server keeps its
// key file (perch.key); "" on PostgreSQL.
func (s *Store) Path() string { return s.path }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.r.PingContext(ctx); err != nil {
		return fmt.Errorf("ping %s: %w", s.dialect, err)
	}
	return nil
}

// Close releases every prepared statement and connection.
func (s *Store) Close() error {
	if s.ckpt != nil {
		s.ckpt.stop()
	}
	s.stmts.Range(func(_, st any) bool {
		st.(*sql.Stmt).Close()
		return true
	})
	err := s.w.Close()
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

// Migrate applies every pending migration of the store's dialect. On
// PostgreSQL an advisory lock keeps instances that start together from
// migrating twice.
func (s *Store) Migrate(ctx context.Context, logger *slog.Logger) error {
	fsys, err := fs.Sub(migrations, "migrations/"+string(s.dialect))
	if err != nil {
		return err
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	dialect := goose.DialectSQLite3
	if s.dialect == Postgres {
		dialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(dialect, s.w, fsys, opts...)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", s.dialect, err)
	}
	for _, r := range results {
		logger.Info("migration applied", "dialect", s.dialect, "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	return nil
}

// Migrated reports whether the database holds Perch's schema, as perch
// serve or perch migrate leave it (the migrations' version table and the
// users table), so that the operator's commands can tell the server's
// database from an empty or a stranger's one before they change it.
func (s *Store) Migrated(ctx context.Context) (bool, error) {
	query := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('goose_db_version', 'users')`
	if s.dialect == Postgres {
		query = `SELECT COUNT(*) FROM information_schema.tables
			WHERE table_schema = current_schema() AND table_name IN ('goose_db_version', 'users')`
	}
	var n int
	if err := s.r.QueryRowContext(ctx, query).Scan(&n); err != nil {
		return false, fmt.Errorf("read the %s schema: %w", s.dialect, err)
	}
	return n == 2, nil
}

// q returns query with its ? placeholders written the dialect's way.
func (s *Store) q(query string) string {
	if s.dialect != Postgres {
		return query
	}
	if v, ok := s.rebound.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	s.rebound.Store(query, b.String())
	return b.String()
}

// prepared returns query prepared once on db and kept for the life of the
// store. The hot paths (token lookups, notification inserts) use it: parsing
// their SQL on every call was nearly half of ingest's CPU time on SQLite.
func (s *Store) prepared(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	k := stmtKey{db, query}
	if st, ok := s.stmts.Load(k); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := db.PrepareContext(ctx, s.q(query))
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.stmts.LoadOrStore(k, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// tx runs fn in a write transaction, committing when it returns nil. How
// it went counts in WriteHealth.
func (s *Store) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.wrote(ctx, inTx(ctx, s.w, fn))
}

// inTx runs fn in a transaction begun on db (the pool, or one connection
// of it), committing when fn returns nil and rolling back otherwise.
func inTx(ctx context.Context, db interface {
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
}, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// isUniqueViolation reports whether err is a unique or primary-key clash.
func isUniqueViolation(err error) bool {
	if e, ok := errors.AsType[*sqlite.Error](err); ok {
		c := e.Code()
		return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	if e, ok := errors.AsType[*pgconn.PgError](err); ok {
		return e.Code == "23505"
	}
	return false
}

// notFound turns sql.ErrNoRows into a perch.ENOTFOUND error about what.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return perch.Errorf(perch.ENOTFOUND, "%s not found.", what)
	}
	return err
}

// ms is the stored form of a time: Unix milliseconds, the same in both
// databases and sortable.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS is the inverse of ms.
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// fromNullMS reads an optional time.
func fromNullMS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}

// now is the store's clock at the stored precision.
func (s *Store) now() time.Time { return perch.Timestamp(s.Now()) }
