package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/perch-dev/perch"
)

// TestOutagesAreKnownByTheirCodes: the PostgreSQL errors that show the
// database unable to serve, and only those, are outages, whatever their
// text says; so are a connection that was never made or broke.
func TestOutagesAreKnownByTheirCodes(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // nothing listens there now
	_, refused := pgconn.Connect(context.Background(), "postgres://perch@"+ln.Addr().String()+"/perch?connect_timeout=5")
	if _, ok := errors.AsType[*pgconn.ConnectError](refused); !ok {
		t.Fatalf("connecting to a closed port: %v", refused)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{&pgconn.PgError{Code: "53100", Message: "could not extend file"}, causeFull},
		{&pgconn.PgError{Code: "53200"}, causeResources},
		{&pgconn.PgError{Code: "53300"}, causeResources},
		{&pgconn.PgError{Code: "08006"}, causeUnreachable},
		{&pgconn.PgError{Code: "08P01"}, causeUnreachable},
		{&pgconn.PgError{Code: "57P01"}, causeShutdown},
		{&pgconn.PgError{Code: "57P02"}, causeShutdown},
		{&pgconn.PgError{Code: "57P03"}, causeShutdown},
		{&pgconn.PgError{Code: "25006"}, causeReadOnly},
		{fmt.Errorf("begin: %w", refused), causeUnreachable},
		{io.ErrUnexpectedEOF, causeUnreachable},
		{fmt.Errorf("commit: %w", pgconn.ErrConnClosed), causeUnreachable},
		{driver.ErrBadConn, causeUnreachable},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, causeUnreachable},

		// Errors of the request or of the code: not outages, even when
		// their text sounds like one.
		{&pgconn.PgError{Code: "23505", Message: "disk full"}, ""},
		{&pgconn.PgError{Code: "22021"}, ""},
		{&pgconn.PgError{Code: "40001"}, ""},
		{&pgconn.PgError{Code: "42P01", Message: "connection refused"}, ""},
		{&pgconn.PgError{Code: "57014"}, ""}, // query_canceled: the caller's doing
		{sql.ErrNoRows, ""},
		{errors.New("database or disk is full"), ""},
		{perch.Errorf(perch.ENOTFOUND, "No such thing."), ""},
		{nil, ""},
	} {
		if got := outageCause(c.err); got != c.want {
			t.Errorf("outageCause(%#v) = %q, want %q", c.err, got, c.want)
		}
		if got := unavailable(c.err); (perch.ErrorCode(got) == perch.EUNAVAILABLE) != (c.want != "") || (c.want == "" && got != c.err) {
			t.Errorf("unavailable(%#v) = %v", c.err, got)
		}
	}
}

// TestSQLiteOutagesAreKnownByTheirCodes: errors SQLite itself raises, on
// connections of the test's own, are outages by their codes: a full disk
// (a database capped at its size), a read-only database, a lock held past
// the busy timeout, a file that cannot be opened; a unique clash is not.
func TestSQLiteOutagesAreKnownByTheirCodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "raw.db")
	open := func(pragmas string) *sql.DB {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(0)"+pragmas)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		return db
	}
	db := open("")
	exec := func(db *sql.DB, q string, args ...any) error {
		_, err := db.ExecContext(ctx, q, args...)
		return err
	}
	if err := exec(db, `CREATE TABLE t (k TEXT PRIMARY KEY, v BLOB)`); err != nil {
		t.Fatal(err)
	}
	if err := exec(db, `INSERT INTO t VALUES ('a', 'x')`); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		name string
		err  error
		want string
	}
	cases := []outcome{
		{"unique", exec(db, `INSERT INTO t VALUES ('a', 'x')`), ""},
		{"full", exec(open("&_pragma=max_page_count(1)"), `INSERT INTO t VALUES ('b', zeroblob(100000))`), causeFull}, // capped at the present size
		{"read-only", exec(open("&_pragma=query_only(1)"), `INSERT INTO t VALUES ('c', 'x')`), causeReadOnly},
	}

	holder, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, outcome{"busy", exec(open(""), `INSERT INTO t VALUES ('d', 'x')`), causeBusy})
	holder.ExecContext(ctx, `ROLLBACK`)
	holder.Close()

	missing, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "no", "such", "dir.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer missing.Close()
	cases = append(cases, outcome{"cannot open", missing.PingContext(ctx), causeCantOpen})

	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if got := outageCause(c.err); got != c.want {
			t.Errorf("%s: outageCause(%v) = %q, want %q", c.name, c.err, got, c.want)
		}
	}
}

// TestSQLiteFullDiskIsAnOutage: a SQLite store that cannot grow its
// database, as on a full disk, answers a batch of notifications, and any
// other write, with unavailable naming the full disk, counts the batches in
// a row, and recovers with the first that goes in once there is room.
func TestSQLiteFullDiskIsAnOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "perch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	ada, err := s.CreateUser(ctx, "Ada", "ada@example.com", "hash")
	if err != nil {
		t.Fatal(err)
	}
	big := []NewNotification{{Notification: perch.Notification{Title: "big", Message: strings.Repeat("x", 3000), Tab: "T",
		Severity: perch.SeverityInfo, Source: "inbound", Scope: perch.Scope{Type: perch.ScopeAll}}}}
	if _, err := s.w.ExecContext(ctx, `PRAGMA max_page_count = 1`); err != nil { // kept at the present size
		t.Fatal(err)
	}
	// The first batches may still fit in pages the database has; once it
	// needs a new one, every batch fails alike.
	failed := 0
	for range 20 {
		if _, err = s.InsertNotifications(ctx, big, nil); err != nil {
			failed++
			if perch.ErrorCode(err) != perch.EUNAVAILABLE || OutageCause(err) != causeFull {
				t.Fatalf("on a full disk: %v", err)
			}
			if h := s.WriteHealth(); h.Failures != failed || h.Cause != causeFull {
				t.Fatalf("WriteHealth = %+v after %d failed batches", h, failed)
			}
		} else if failed > 0 {
			t.Fatal("a batch went in after one failed for a full disk")
		}
	}
	if failed == 0 {
		t.Fatal("no batch failed")
	}
	_, err = s.CreateTeam(ctx, ada.OrgID, "Ops", strings.Repeat("about ", 1000)) // more than a page
	if perch.ErrorCode(err) != perch.EUNAVAILABLE {
		t.Fatalf("a team on a full disk: %v", err)
	}

	if _, err := s.w.ExecContext(ctx, `PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InsertNotifications(ctx, big, nil); err != nil {
		t.Fatal(err)
	}
	if h := s.WriteHealth(); h.Failures != 0 {
		t.Fatalf("WriteHealth = %+v once a batch went in", h)
	}
}
