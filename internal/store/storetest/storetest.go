// Package storetest runs tests against every database Perch supports: SQLite
// always, PostgreSQL when PERCH_TEST_POSTGRES_URL names a server. Each test
// gets a fresh, migrated database of its own, dropped when the test ends: a
// copy of a template migrated once (template.go), a new file or a new
// PostgreSQL database. The conformance suite of the store lives in
// this package's tests; other packages use Run to do the same.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch/internal/store"
)

// PostgresURLEnv names the variable that enables the PostgreSQL runs.
const PostgresURLEnv = "PERCH_TEST_POSTGRES_URL"

// Backends are the dialects Run covers, in order.
var Backends = []store.Dialect{store.SQLite, store.Postgres}

// Run calls fn in one subtest per backend, each with a fresh store. The
// subtests run in parallel (each owns its database), after the calling
// test's function has returned: Run must be the last thing it does, and fn
// may share only what is read, never written, with the other backend's.
// The PostgreSQL subtest is skipped, saying why, when the URL is not set.
func Run(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Helper()
	for _, b := range Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			fn(t, New(t, b))
		})
	}
}

// RunWithSQL is Run with, beside each store, a connection of its own to the
// same database: for setting up what no store method writes, and for
// reading rows as they are at rest, as whoever holds a copy of the
// database would.
func RunWithSQL(t *testing.T, fn func(t *testing.T, s *store.Store, db *sql.DB)) {
	t.Helper()
	RunWithSQLOn(t, Backends, fn)
}

// RunWithSQLOn is RunWithSQL on the given backends alone, for what only
// some databases can do (a test has no subtest, and so no skip, for the
// others).
func RunWithSQLOn(t *testing.T, backends []store.Dialect, fn func(t *testing.T, s *store.Store, db *sql.DB)) {
	t.Helper()
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel() // as Run's
			dsn := migrated(t, b)
			s := open(t, b, dsn)
			db, err := sql.Open(map[store.Dialect]string{store.SQLite: "sqlite", store.Postgres: "pgx"}[b], dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			fn(t, s, db)
		})
	}
}

// Table is every row of table written out, one line per row, each column
// as text: what a test looks through for a secret that must not be there.
func Table(tb testing.TB, db *sql.DB, table string) string {
	tb.Helper()
	cols, rows := Rows(tb, db, `SELECT * FROM `+table)
	var out strings.Builder
	for _, vals := range rows {
		for i, v := range vals {
			fmt.Fprintf(&out, "%s=%v\t", cols[i], v)
		}
		out.WriteString("\n")
	}
	return out.String()
}

// Rows runs query and answers its columns and every row's values, in
// order, bytes as text.
func Rows(tb testing.TB, db *sql.DB, query string, args ...any) (cols []string, out [][]any) {
	tb.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	if cols, err = rows.Columns(); err != nil {
		tb.Fatal(err)
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			tb.Fatal(err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return cols, out
}

// New returns a fresh, migrated store of the given dialect, opened with
// opts, closed and removed when tb ends.
func New(tb testing.TB, dialect store.Dialect, opts ...store.Option) *store.Store {
	tb.Helper()
	return open(tb, dialect, migrated(tb, dialect), opts...)
}

// open opens and migrates the store of dsn, closed when tb ends. On a copy
// of the template, Migrate finds nothing to do; it is called all the same,
// so that the store a test gets has been through what a server does at
// start.
func open(tb testing.TB, dialect store.Dialect, dsn string, opts ...store.Option) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), dsn, opts...)
	if err != nil {
		tb.Fatalf("open %s: %v", dialect, err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background(), discard); err != nil {
		tb.Fatalf("migrate %s: %v", dialect, err)
	}
	return s
}

// DSN returns the connection string of a new, empty database of the given
// dialect that lives as long as tb: a file in a temporary directory, or a
// schema of its own on the test PostgreSQL server. It skips tb when the
// dialect is PostgreSQL and no server is configured.
func DSN(tb testing.TB, dialect store.Dialect) string {
	tb.Helper()
	if dialect == store.SQLite {
		return filepath.Join(tb.TempDir(), "perch.db")
	}
	base := postgresURL(tb)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatalf("postgres: %v", err)
	}
	defer admin.Close()
	schema := "t_" + strings.ToLower(strings.NewReplacer("/", "_", "-", "_", " ", "_").Replace(tb.Name()))
	if len(schema) > 40 {
		schema = schema[:40]
	}
	schema = fmt.Sprintf("%s_%d", schema, os.Getpid()) + randomSuffix()
	if _, err := admin.Exec(`CREATE SCHEMA "` + schema + `"`); err != nil {
		tb.Fatalf("postgres: create schema: %v", err)
	}
	tb.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		db.Exec(`DROP SCHEMA "` + schema + `" CASCADE`)
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("%s: %v", PostgresURLEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("synchronous_commit", "off") // as withDatabase's
	u.RawQuery = q.Encode()
	return u.String()
}

func randomSuffix() string {
	var b [4]byte
	rand.Read(b[:])
	return "_" + hex.EncodeToString(b[:])
}

// Clock is a clock that tests move by hand.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock stopped at a fixed instant.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
