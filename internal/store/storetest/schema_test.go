package storetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// column is what the two dialects must agree on about a column: its name
// and whether it may be NULL. Types are spelled per dialect (INTEGER and
// BIGINT, TEXT and VARCHAR) and are not compared.
type column struct {
	name    string
	notNull bool
}

// schema is a migrated database's tables with their columns, and its
// indexes that were created by name (not those a dialect makes for a key).
type schema struct {
	tables  map[string][]column
	indexes []string
}

// migratedSchema migrates a fresh database of dialect and reads its schema
// back through a connection of its own.
func migratedSchema(t *testing.T, dialect store.Dialect) schema {
	t.Helper()
	dsn := storetest.DSN(t, dialect)
	s, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	driver := map[store.Dialect]string{store.SQLite: "sqlite", store.Postgres: "pgx"}[dialect]
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sc schema
	if dialect == store.SQLite {
		sc = sqliteSchema(t, db)
	} else {
		sc = postgresSchema(t, db)
	}
	delete(sc.tables, "goose_db_version") // the migration tool's own
	return sc
}

func sqliteSchema(t *testing.T, db *sql.DB) schema {
	sc := schema{tables: map[string][]column{}}
	for _, name := range strs(t, db, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`) {
		rows, err := db.Query(fmt.Sprintf(`SELECT name, "notnull", pk FROM pragma_table_info('%s')`, name))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c column
			var pk int
			if err := rows.Scan(&c.name, &c.notNull, &pk); err != nil {
				t.Fatal(err)
			}
			c.notNull = c.notNull || pk > 0 // PostgreSQL's keys are NOT NULL; SQLite's may say otherwise
			sc.tables[name] = append(sc.tables[name], c)
		}
		rows.Close()
	}
	sc.indexes = strs(t, db, `SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL`)
	return sc
}

func postgresSchema(t *testing.T, db *sql.DB) schema {
	sc := schema{tables: map[string][]column{}}
	rows, err := db.Query(`SELECT table_name, column_name, is_nullable = 'NO' FROM information_schema.columns
		WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var table string
		var c column
		if err := rows.Scan(&table, &c.name, &c.notNull); err != nil {
			t.Fatal(err)
		}
		sc.tables[table] = append(sc.tables[table], c)
	}
	// Indexes made by CREATE INDEX, not those behind a primary key or a
	// UNIQUE constraint.
	sc.indexes = strs(t, db, `SELECT i.indexname FROM pg_indexes i WHERE i.schemaname = current_schema()
		AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname AND c.connamespace = current_schema()::regnamespace)`)
	return sc
}

func strs(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// TestMigrationsGiveTheSameSchema: the SQLite and PostgreSQL migrations are
// written twice, once per dialect; they must make the same tables, columns,
// nullability and named indexes.
func TestMigrationsGiveTheSameSchema(t *testing.T) {
	t.Parallel()
	lite, pg := migratedSchema(t, store.SQLite), migratedSchema(t, store.Postgres)
	tables := slices.Sorted(maps.Keys(lite.tables))
	if len(tables) < 10 || len(lite.indexes) == 0 {
		t.Fatalf("read %d tables and %d indexes: the schema was not read", len(tables), len(lite.indexes))
	}
	t.Logf("%d tables, %d named indexes alike", len(tables), len(lite.indexes))
	if got := slices.Sorted(maps.Keys(pg.tables)); !slices.Equal(tables, got) {
		t.Fatalf("tables differ:\nsqlite:   %v\npostgres: %v", tables, got)
	}
	for _, table := range tables {
		l, p := lite.tables[table], pg.tables[table]
		byName := func(a, b column) int { return strings.Compare(a.name, b.name) }
		slices.SortFunc(l, byName)
		slices.SortFunc(p, byName)
		if !slices.Equal(l, p) {
			t.Errorf("table %s differs:\nsqlite:   %v\npostgres: %v", table, l, p)
		}
	}
	if !slices.Equal(lite.indexes, pg.indexes) {
		t.Errorf("indexes differ:\nsqlite:   %v\npostgres: %v", lite.indexes, pg.indexes)
	}
}
