package storetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// migrator returns a raw connection to the database at dsn (with SQLite's
// foreign keys on, as the store has them) and goose over the store's
// migration files, to move it to a version of its choosing.
func migrator(t *testing.T, dialect store.Dialect, dsn string) (*sql.DB, *goose.Provider) {
	t.Helper()
	driver, source, gd := "pgx", dsn, goose.DialectPostgres
	if dialect == store.SQLite {
		driver, source, gd = "sqlite", "file:"+dsn+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)", goose.DialectSQLite3
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p, err := goose.NewProvider(gd, db, os.DirFS("../migrations/"+string(dialect)), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	return db, p
}

// dump is every row of query, each written out in full, in order.
func dump(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	_, rows := storetest.Rows(t, db, query, args...)
	var out []string
	for _, vals := range rows {
		out = append(out, fmt.Sprint(vals...))
	}
	return out
}

// rawSQL answers what a migration test runs on db in dialect's own SQL:
// q rebinds ? to $n on PostgreSQL, and exec runs a statement or fails.
func rawSQL(t *testing.T, dialect store.Dialect, db *sql.DB) (q func(string) string, exec func(query string, args ...any)) {
	q = func(query string) string { return query }
	if dialect == store.Postgres {
		q = func(query string) string {
			for n := 1; strings.Contains(query, "?"); n++ {
				query = strings.Replace(query, "?", fmt.Sprintf("$%d", n), 1)
			}
			return query
		}
	}
	exec = func(query string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(context.Background(), q(query), args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	return q, exec
}

const (
	allNotifications = `SELECT id, scope_type, scope_id, tab, title, message, severity, source, url, created_at, COALESCE(dedupe_key, '-') FROM notifications ORDER BY id`
	allReads         = `SELECT user_id, notification_id, read_at FROM notification_reads ORDER BY user_id, notification_id`
	// oldInsert is how the store inserted before 00021: its conflict target
	// names the column, which only its UNIQUE (not a partial index) matches.
	oldInsert = `INSERT INTO notifications (scope_type, scope_id, tab, title, message, severity, source, url, created_at, dedupe_key)
		VALUES ('all', '', 'T', 'old style', '', 'info', 'inbound', '', 1, NULL) ON CONFLICT (dedupe_key) DO NOTHING`
)

// TestMigration21KeepsNotificationsAndReads takes a database at 00020 with
// notifications (some keyed), read state and a pruned range, as the store
// left them, up through 00021 and down again. Every row, id and read is
// kept both ways; the store then de-duplicates against the old keys, gives
// new ids above every old one (after pruning everything too), and the read
// state still follows its notifications out; down again, the old insert
// works and its ids continue above every id given.
func TestMigration21KeepsNotificationsAndReads(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Backends {
		t.Run(string(dialect), func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, dialect)
			db, p := migrator(t, dialect, dsn)
			_, exec := rawSQL(t, dialect, db)
			if _, err := p.UpTo(ctx, 20); err != nil {
				t.Fatal(err)
			}
			// Users through a store (its accounts code is the same at 00020);
			// notifications as the old insert wrote them, ids 1 to 9.
			old, err := store.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			ada, eve := mustCreateUser(t, old, "Ada", "ada@example.com"), mustCreateUser(t, old, "Eve", "eve@example.com")
			old.Close()
			created := storetest.NewClock().Now().UnixMilli()
			for i := 1; i <= 9; i++ {
				key := sql.NullString{String: fmt.Sprintf("k%d", i), Valid: i%3 == 2}
				exec(`INSERT INTO notifications (scope_type, scope_id, tab, title, message, severity, source, url, created_at, dedupe_key)
					VALUES ('user', ?, 'T', ?, 'm', 'warning', 'inbound', 'https://example.com', ?, ?) ON CONFLICT (dedupe_key) DO NOTHING`,
					ada.ID, fmt.Sprintf("n%d", i), created+int64(i), key)
			}
			for _, r := range []struct {
				user string
				id   int
			}{{ada.ID, 1}, {ada.ID, 4}, {ada.ID, 5}, {ada.ID, 9}, {eve.ID, 5}} {
				exec(`INSERT INTO notification_reads (user_id, notification_id, read_at) VALUES (?, ?, ?)`, r.user, r.id, created+100)
			}
			// Retention pruned 1 to 3, as PruneNotifications does.
			exec(`DELETE FROM notifications WHERE id <= 3`)
			exec(`INSERT INTO settings (key, value) VALUES ('notifications.pruned_through', '3')`)
			rows, reads := dump(t, db, allNotifications), dump(t, db, allReads)
			if len(rows) != 6 || len(reads) != 4 {
				t.Fatalf("seeded %d notifications and %d reads; want 6 and 4 (the read of 1 went with it)", len(rows), len(reads))
			}

			if _, err := p.UpTo(ctx, 21); err != nil {
				t.Fatal(err)
			}
			if got := dump(t, db, allNotifications); !slices.Equal(got, rows) {
				t.Fatalf("notifications after 00021:\n%v\nwant\n%v", got, rows)
			}
			if got := dump(t, db, allReads); !slices.Equal(got, reads) {
				t.Fatalf("reads after 00021:\n%v\nwant\n%v", got, reads)
			}
			if _, err := db.ExecContext(ctx, oldInsert); err == nil {
				t.Fatal("the column's own UNIQUE is still there: the old conflict target found it")
			}
			if dialect == store.SQLite {
				var table string
				if err := db.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE name = 'notifications'`).Scan(&table); err != nil ||
					strings.Contains(table, "AUTOINCREMENT") || strings.Contains(table, "UNIQUE") {
					t.Fatalf("notifications is %q (%v)", table, err)
				}
				if got := dump(t, db, `SELECT "table", "from", on_delete FROM pragma_foreign_key_list('notification_reads') ORDER BY "table"`); !slices.Equal(got,
					[]string{"notificationsnotification_idCASCADE", "usersuser_idCASCADE"}) {
					t.Fatalf("notification_reads' foreign keys: %v", got)
				}
				if got := dump(t, db, `PRAGMA foreign_key_check`); len(got) != 0 {
					t.Fatalf("foreign_key_check: %v", got)
				}
			}

			// The store on the migrated database.
			s := mustOpen(t, dsn)
			clock := storetest.NewClock()
			clock.Advance(time.Hour)
			s.Now = clock.Now
			stored, err := s.InsertNotifications(ctx, []store.NewNotification{broadcast("new", ""), broadcast("again", "k5"), broadcast("keyed", "k10")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !stored[1].Duplicate || stored[1].Notification.ID != "5" || stored[1].Notification.Title != "n5" {
				t.Fatalf("redelivery of k5 = %+v; want notification 5", stored[1])
			}
			if stored[0].Duplicate || mustID(t, stored[0].Notification.ID) <= 9 || stored[2].Duplicate ||
				mustID(t, stored[2].Notification.ID) <= mustID(t, stored[0].Notification.ID) {
				t.Fatalf("new rows got %+v and %+v; want ids above 9, in order", stored[0], stored[2])
			}
			list, err := s.Notifications(ctx, &perch.Audience{UserID: ada.ID, OrgID: ada.OrgID, Joined: ada.CreatedAt}, "0", 10)
			if err != nil {
				t.Fatal(err)
			}
			var seen []string
			for _, n := range list {
				if n.Scope.Type == perch.ScopeUser {
					seen = append(seen, fmt.Sprintf("%s:%v", n.ID, n.Read))
				}
			}
			if want := []string{"4:true", "5:true", "6:false", "7:false", "8:false", "9:true"}; !slices.Equal(seen, want) {
				t.Fatalf("Ada sees %v; want %v", seen, want)
			}
			// Pruning the old rows takes their reads with them.
			if n, err := s.PruneNotifications(ctx, created+7); err != nil || n != 3 {
				t.Fatalf("PruneNotifications = %d, %v; want 3", n, err)
			}
			if got, want := dump(t, db, allReads), fmt.Sprint(ada.ID, 9, created+100); !slices.Equal(got, []string{want}) {
				t.Fatalf("reads after pruning 4 to 6: %v; want only %s", got, want)
			}

			// Down, with the rows as they are.
			rows, reads = dump(t, db, allNotifications), dump(t, db, allReads)
			var highest int64
			s.Close()
			if _, err := p.DownTo(ctx, 20); err != nil {
				t.Fatal(err)
			}
			if got := dump(t, db, allNotifications); !slices.Equal(got, rows) {
				t.Fatalf("notifications after going back to 00020:\n%v\nwant\n%v", got, rows)
			}
			if got := dump(t, db, allReads); !slices.Equal(got, reads) {
				t.Fatalf("reads after going back to 00020:\n%v\nwant\n%v", got, reads)
			}
			exec(oldInsert)
			if err := db.QueryRowContext(ctx, `SELECT MAX(id) FROM notifications`).Scan(&highest); err != nil {
				t.Fatal(err)
			}

			// Up again, retention prunes every row, and down: the old insert
			// still gives ids above every id given, pruned ones included.
			s = mustOpen(t, dsn)
			if _, err := s.PruneNotifications(ctx, clock.Now().Add(time.Hour).UnixMilli()); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if _, err := p.DownTo(ctx, 20); err != nil {
				t.Fatal(err)
			}
			exec(oldInsert)
			var id int64
			if err := db.QueryRowContext(ctx, `SELECT MAX(id) FROM notifications`).Scan(&id); err != nil || id <= highest {
				t.Fatalf("the old insert got id %d (%v); want one above %d", id, err, highest)
			}
		})
	}
}
