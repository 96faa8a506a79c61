package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/perch-dev/perch"
)

// An outage is the database failing to serve at all, whatever was asked
// of it: a full disk, files it cannot read, write or open, a database that
// refuses writes, a lock held past the busy timeout, a server that is not
// reachable, shutting down or out of resources. The request was fine and
// may succeed if sent again later, so the store answers it with a
// perch.EUNAVAILABLE error (503 with Retry-After) rather than an internal
// one, and a run of them is what makes the server unready (WriteHealth).

// outageError is a driver's error that shows an outage: a perch.EUNAVAILABLE
// error for the caller, with the driver's error kept behind it for the log
// and for the checks by code (isUniqueViolation and the like).
type outageError struct {
	public *perch.Error // says what is wrong, and nothing of the internals
	cause  string       // what is wrong, for people: "the disk is full"
	err    error        // the driver's
}

func (e *outageError) Error() string   { return e.public.Message + " (" + e.err.Error() + ")" }
func (e *outageError) Unwrap() []error { return []error{e.public, e.err} }

// What an outage's error says is wrong.
const (
	causeFull        = "the database's disk is full"
	causeIO          = "the database cannot read or write its files"
	causeReadOnly    = "the database refuses writes"
	causeCantOpen    = "the database cannot open its files"
	causeBusy        = "the database stayed locked by another process"
	causeUnreachable = "the database is not reachable"
	causeShutdown    = "the database is shutting down or starting up"
	causeResources   = "the database is out of resources"
)

// outageCause says which outage err shows, by the driver's error code (or
// error type, for a connection that is lost or was never made); "" when
// err is no outage.
//
// SQLite: SQLITE_FULL, SQLITE_IOERR*, SQLITE_READONLY*, SQLITE_CANTOPEN*,
// and SQLITE_BUSY*, which reaches the store only once the busy timeout
// (10 s) has run out: another process (a backup, a shell left in a
// transaction) has held the file's lock that long, and the request may
// well pass later.
//
// PostgreSQL: any failure to connect (whatever the server said: a wrong
// password after a rotation is an outage to this instance too), class 08
// (connection exception), 57P01–57P03 (administrator or crash shutdown,
// cannot connect now), class 53 (insufficient resources: 53100 is a full
// disk), 25006 (read-only transaction: a standby after a failover), and a
// connection that breaks under a statement.
func outageCause(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*sqlite.Error](err); ok {
		switch e.Code() & 0xff { // the primary code of an extended one
		case sqlite3.SQLITE_FULL:
			return causeFull
		case sqlite3.SQLITE_IOERR:
			return causeIO
		case sqlite3.SQLITE_READONLY:
			return causeReadOnly
		case sqlite3.SQLITE_CANTOPEN:
			return causeCantOpen
		case sqlite3.SQLITE_BUSY:
			return causeBusy
		}
		return ""
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return causeUnreachable
	}
	if e, ok := errors.AsType[*pgconn.PgError](err); ok {
		switch c := e.Code; {
		case c == "53100":
			return causeFull
		case strings.HasPrefix(c, "53"):
			return causeResources
		case strings.HasPrefix(c, "08"):
			return causeUnreachable
		case c == "57P01", c == "57P02", c == "57P03":
			return causeShutdown
		case c == "25006":
			return causeReadOnly
		}
		return ""
	}
	// A connection lost under a statement: pgx reports the socket's own
	// error (a reset, a timeout, the end of the stream), or that it has
	// closed the connection; database/sql, a connection it could not use.
	if _, ok := errors.AsType[net.Error](err); ok {
		return causeUnreachable
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, driver.ErrBadConn) {
		return causeUnreachable
	}
	return ""
}

// OutageCause says what an error of the store shows to be wrong with the
// database, for people ("the database's disk is full"), when it is an
// outage (a perch.EUNAVAILABLE error of the store's); "" otherwise.
func OutageCause(err error) string {
	if e, ok := errors.AsType[*outageError](err); ok {
		return e.cause
	}
	return ""
}

// unavailable returns err as an outageError when it shows an outage, and
// err unchanged otherwise (nil included).
func unavailable(err error) error {
	if _, ok := errors.AsType[*outageError](err); ok {
		return err // mapped already: by the driver's wrapper, then by tx, say
	}
	cause := outageCause(err)
	if cause == "" {
		return err
	}
	return &outageError{
		public: perch.Errorf(perch.EUNAVAILABLE, "Storage is unavailable: %s. Try again shortly.", cause),
		cause:  cause,
		err:    err,
	}
}

// WriteHealth is how the store's writes have gone lately: what the server's
// readiness reports.
type WriteHealth struct {
	// Failures counts the writes in a row that failed for an outage; a
	// write that succeeds sets it back to 0. A write that fails for any
	// other reason (a conflict, a row not found, a bug), or whose caller
	// gave up on it, counts neither way: it says nothing of the database.
	Failures int
	// Since and Last are when the first and the latest of those failures
	// happened (by Store.Now).
	Since, Last time.Time
	// Cause says what the latest failure showed to be wrong, for people
	// ("the database's disk is full"); Err is that failure, for the log.
	Cause string
	Err   error
}

// writeHealth keeps WriteHealth. Writes that succeed while nothing is
// failing, nearly all of them, only read failing.
type writeHealth struct {
	failing atomic.Bool
	mu      sync.Mutex
	h       WriteHealth
}

// WriteHealth reports how the store's writes have gone lately.
func (s *Store) WriteHealth() WriteHealth {
	s.writes.mu.Lock()
	defer s.writes.mu.Unlock()
	return s.writes.h
}

// wrote counts a write that ended with err in WriteHealth, and returns err,
// as an outageError when it shows an outage. Every transaction (tx) and
// every batch of notifications (InsertNotifications) goes through it.
func (s *Store) wrote(ctx context.Context, err error) error {
	err = unavailable(err)
	w := &s.writes
	switch {
	case err == nil:
		if w.failing.Load() {
			w.mu.Lock()
			w.h = WriteHealth{}
			w.failing.Store(false)
			w.mu.Unlock()
		}
	case ctx.Err() != nil:
		// The caller gave up (a client that went away, a deadline of its
		// own): nothing is known of the database.
	default:
		e, ok := errors.AsType[*outageError](err)
		if !ok {
			return err
		}
		now := s.Now()
		w.mu.Lock()
		if w.h.Failures == 0 {
			w.h.Since = now
		}
		w.h.Failures++
		w.h.Last, w.h.Cause, w.h.Err = now, e.cause, err
		w.failing.Store(true)
		w.mu.Unlock()
	}
	return err
}

// settingWriteProbe is the setting ProbeWrite writes.
const settingWriteProbe = "health.write_probe"

// ProbeWrite writes one small row in a transaction of its own, which counts
// in WriteHealth as every write does: readiness tries it when writes have
// been failing and none has been tried for a while (an instance out of its
// load balancer's rotation gets no other writes to recover by).
func (s *Store) ProbeWrite(ctx context.Context) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`), settingWriteProbe, strconv.FormatInt(ms(s.now()), 10))
		return err
	})
}

// ReadOnlyForTest makes the SQLite writer refuse every write, as a
// database that refuses writes does (SQLITE_READONLY, through
// PRAGMA query_only), or, with readOnly false, write again: for tests of
// what the server answers during an outage. It is an error on PostgreSQL,
// where tests cut the connection instead.
func (s *Store) ReadOnlyForTest(ctx context.Context, readOnly bool) error {
	if s.dialect != SQLite {
		return errors.New("ReadOnlyForTest: SQLite only")
	}
	_, err := s.w.ExecContext(ctx, `PRAGMA query_only = `+strconv.FormatBool(readOnly))
	return err
}
