package storetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/testenv"
)

// Migrating a database costs more than most store tests do in all (26
// migrations, most of the median test's time), so each test process
// migrates one database per dialect, once, and every test gets a copy of
// it: on SQLite the template's bytes written to the test's own file, on
// PostgreSQL a database of the test's own made with CREATE DATABASE …
// TEMPLATE. The store still runs Migrate on the copy, which finds nothing
// to do, so a test of Migrate on a migrated database stays true.

// migrated returns the DSN of a migrated database of dialect of its own for
// tb, dropped when tb ends. It skips tb when the dialect is PostgreSQL and
// no server is configured.
func migrated(tb testing.TB, dialect store.Dialect) string {
	tb.Helper()
	if dialect == store.SQLite {
		return sqliteCopy(tb)
	}
	return postgresCopy(tb)
}

var sqliteTemplate struct {
	once  sync.Once
	bytes []byte
	err   error
}

// sqliteCopy writes the migrated template to a new file in tb's temporary
// directory and returns its path. The file is made 0600, as the store
// makes a new database (createPrivate), and the store opens it as it
// finds it.
func sqliteCopy(tb testing.TB) string {
	tb.Helper()
	sqliteTemplate.once.Do(func() {
		sqliteTemplate.bytes, sqliteTemplate.err = makeSQLiteTemplate()
	})
	if sqliteTemplate.err != nil {
		tb.Fatalf("sqlite template: %v", sqliteTemplate.err)
	}
	path := filepath.Join(tb.TempDir(), "perch.db")
	if err := os.WriteFile(path, sqliteTemplate.bytes, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// makeSQLiteTemplate migrates a database in a directory of its own and
// answers a clean copy's bytes: VACUUM INTO writes the whole database to
// one file, with nothing left in a WAL beside it.
func makeSQLiteTemplate() ([]byte, error) {
	dir, err := os.MkdirTemp("", "perch-storetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "template.db")
	ctx := context.Background()
	s, err := store.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	if err := s.Migrate(ctx, discard); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	clean := filepath.Join(dir, "clean.db")
	if _, err := db.Exec(`VACUUM INTO ?`, clean); err != nil {
		return nil, err
	}
	return os.ReadFile(clean)
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

var postgresTemplate struct {
	once sync.Once
	name string
	err  error
}

// postgresCopy creates a database of tb's own from the migrated template,
// dropped (with any connection left to it) when tb ends, and returns its
// URL.
func postgresCopy(tb testing.TB) string {
	tb.Helper()
	base := postgresURL(tb)
	postgresTemplate.once.Do(func() {
		postgresTemplate.name, postgresTemplate.err = makePostgresTemplate(base)
	})
	if postgresTemplate.err != nil {
		tb.Fatalf("postgres template: %v", postgresTemplate.err)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatalf("postgres: %v", err)
	}
	defer admin.Close()
	name := fmt.Sprintf("t_%s_%d", shortName(tb), os.Getpid()) + randomSuffix()
	// STRATEGY WAL_LOG (PostgreSQL 15's default), measured against
	// FILE_COPY and against migrating a new schema, three rounds each on the
	// 2-core test host under load: a database ready (made, opened, Migrate
	// finding nothing to do) in 0.5 to 1.3 s with WAL_LOG, 1.9 to 8.1 s with
	// FILE_COPY, whose two checkpoints of the whole server wait behind
	// every other test's writes, and 2.3 to 27.8 s for a migrated schema,
	// whose 26 migrations wait in turn for goose's advisory lock, one per
	// database, shared by every test in the one test database.
	if _, err := admin.Exec(`CREATE DATABASE "` + name + `" TEMPLATE "` + postgresTemplate.name + `" STRATEGY WAL_LOG`); err != nil {
		tb.Fatalf("postgres: create database: %v", err)
	}
	tb.Cleanup(func() { dropDatabase(base, name) })
	dsn, err := withDatabase(base, name)
	if err != nil {
		tb.Fatal(err)
	}
	return dsn
}

// makePostgresTemplate makes, once per version of the migrations, the
// database every test's database is copied from: named by the migrations'
// hash, so that a changed migration gets a template of its own and test
// processes of the same code share one. A session-level advisory lock on
// the server's shared test database keeps two processes from making it at
// once; the database's comment says it is complete (a maker that died
// half-way leaves one without, which the next maker drops). Nothing
// connects to a template once it is complete: CREATE DATABASE refuses a
// template with connections.
func makePostgresTemplate(base string) (string, error) {
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "perch_tpl_" + sum
	ctx := context.Background()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	conn, err := admin.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	// The lock's key is the first eight bytes of "perch storetest template"'s
	// SHA-256, as a bigint: any fixed number no other user of the server
	// takes.
	const lockKey = `('x' || left(encode(sha256('perch storetest template'), 'hex'), 16))::bit(64)::bigint`
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(`+lockKey+`)`); err != nil {
		return "", err
	}
	defer conn.ExecContext(ctx, `SELECT pg_advisory_unlock(`+lockKey+`)`)

	var comment sql.NullString
	err = conn.QueryRowContext(ctx, `SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1`, name).Scan(&comment)
	switch {
	case err == nil && strings.HasPrefix(comment.String, templateComplete+" "):
		return name, nil
	case err == nil:
		if _, err := conn.ExecContext(ctx, `DROP DATABASE "`+name+`" WITH (FORCE)`); err != nil {
			return "", fmt.Errorf("drop incomplete template: %w", err)
		}
	case !errors.Is(err, sql.ErrNoRows):
		return "", err
	}
	if _, err := conn.ExecContext(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		return "", err
	}
	dsn, err := withDatabase(base, name)
	if err != nil {
		return "", err
	}
	s, err := store.Open(ctx, dsn)
	if err != nil {
		return "", err
	}
	err = s.Migrate(ctx, discard)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, `COMMENT ON DATABASE "`+name+`" IS '`+templateComplete+" "+time.Now().UTC().Format(time.RFC3339)+`'`); err != nil {
		return "", err
	}
	dropStaleTemplates(ctx, conn, name)
	return name, nil
}

// templateComplete begins the comment of a template whose migrations all
// ran; the time it was made follows.
const templateComplete = "perch storetest template: complete"

// dropStaleTemplates drops the templates of other versions of the
// migrations made more than a day ago. Another checkout's tests (an older
// branch, say) may be copying a recent one right now, and dropping it under
// them would fail their tests; a day-old one is left behind by a change
// of the migrations. DROP DATABASE without FORCE fails, and leaves the
// template, while anyone is connected to it.
func dropStaleTemplates(ctx context.Context, conn *sql.Conn, keep string) {
	rows, err := conn.QueryContext(ctx, `SELECT datname, shobj_description(oid, 'pg_database') FROM pg_database
		WHERE datname LIKE 'perch\_tpl\_%' AND datname <> $1`, keep)
	if err != nil {
		return
	}
	var stale []string
	for rows.Next() {
		var n string
		var comment sql.NullString
		if rows.Scan(&n, &comment) != nil {
			continue
		}
		made, ok := strings.CutPrefix(comment.String, templateComplete+" ")
		if t, err := time.Parse(time.RFC3339, made); ok && err == nil && time.Since(t) > 24*time.Hour {
			stale = append(stale, n)
		}
	}
	rows.Close()
	for _, n := range stale {
		conn.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+n+`"`)
	}
}

// migrationsHash is the SHA-256 of every PostgreSQL migration file's name
// and contents, in order, shortened to 16 hex digits.
func migrationsHash() (string, error) {
	fsys, err := store.Migrations(store.Postgres)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	err = fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// postgresURL returns the test server's URL, or skips tb (fails it under
// PERCH_TEST_STRICT) when none is set.
func postgresURL(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(PostgresURLEnv)
	if base == "" {
		testenv.SkipUnlessStrict(tb, "PostgreSQL tests skipped: set %s (e.g. postgres://postgres@127.0.0.1:5432/test) to run them", PostgresURLEnv)
	}
	return base
}

// withDatabase returns base with its database replaced by name, and its
// commits asynchronous: a test's database need not outlive a crash of the
// server, and without the wait for the WAL to reach the disk at every
// commit a test waits only for its statements. What a commit makes
// visible, and when, is unchanged, and so is everything a test checks.
func withDatabase(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("%s: %w", PostgresURLEnv, err)
	}
	u.Path = "/" + name
	q := u.Query()
	q.Set("synchronous_commit", "off")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// dropDatabase drops a test's database, ending any connection still open
// to it (a pool the test did not close); a failure leaves a database
// behind and nothing more, so it is not reported.
func dropDatabase(base, name string) {
	db, err := sql.Open("pgx", base)
	if err != nil {
		return
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
}

// shortName is tb's name as a fragment of a database name: lower case,
// separators as underscores, at most 30 characters, so that a left-over
// database says which test made it.
func shortName(tb testing.TB) string {
	n := strings.ToLower(strings.NewReplacer("/", "_", "-", "_", " ", "_", ".", "_").Replace(tb.Name()))
	if len(n) > 30 {
		n = n[:30]
	}
	return n
}
