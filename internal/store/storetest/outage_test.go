package storetest_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// oneNotification is a batch of one broadcast notification.
func oneNotification(title string) []store.NewNotification {
	return []store.NewNotification{{Notification: perch.Notification{Title: title, Tab: "Inbound", Severity: perch.SeverityInfo,
		Source: "inbound", Scope: perch.Scope{Type: perch.ScopeAll}}}}
}

// wantFailures fails tb unless the store counts n writes in a row that
// failed for an outage.
func wantFailures(tb testing.TB, s *store.Store, n int) store.WriteHealth {
	tb.Helper()
	h := s.WriteHealth()
	if h.Failures != n {
		tb.Fatalf("WriteHealth().Failures = %d (%+v), want %d", h.Failures, h, n)
	}
	return h
}

// TestAnOutageIsUnavailableAndCountedInARow: while the database cannot
// serve (SQLite refusing writes, PostgreSQL unreachable) a write fails with
// unavailable, whichever way it goes (a batch of notifications, a
// transaction, a single statement); the batches and transactions that fail
// so are counted in a row, with when and why; a write whose caller gave up,
// or that failed for a reason of its own, counts neither way; and the first
// write that succeeds ends the run.
func TestAnOutageIsUnavailableAndCountedInARow(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Backends {
		t.Run(string(dialect), func(t *testing.T) {
			s, outage := storetest.WithOutage(t, dialect)
			clock := storetest.NewClock()
			s.Now = clock.Now
			ctx := context.Background()
			ada := mustCreateUser(t, s, "Ada", "ada@example.com")
			if _, err := s.CreateUser(ctx, "Ada again", "ada@example.com", "hash"); perch.ErrorCode(err) != perch.ECONFLICT {
				t.Fatalf("a second account for one address: %v", err)
			}
			wantFailures(t, s, 0)

			outage.Start()
			start := clock.Now()
			_, err := s.InsertNotifications(ctx, oneNotification("during the outage"), nil)
			wantCode(t, err, perch.EUNAVAILABLE)
			if store.OutageCause(err) == "" {
				t.Fatalf("no cause for %v", err)
			}
			h := wantFailures(t, s, 1)
			if !h.Since.Equal(start) || !h.Last.Equal(start) || h.Cause != store.OutageCause(err) || !errors.Is(h.Err, err) {
				t.Fatalf("WriteHealth = %+v after %v at %s", h, err, start)
			}

			clock.Advance(time.Second)
			wantCode(t, s.ProbeWrite(ctx), perch.EUNAVAILABLE) // a transaction
			h = wantFailures(t, s, 2)
			if !h.Since.Equal(start) || !h.Last.Equal(clock.Now()) {
				t.Fatalf("WriteHealth = %+v, want the run from %s to %s", h, start, clock.Now())
			}
			_, err = s.CreateAPIToken(ctx, ada.ID, "laptop", "pat_x", "hash-x") // one statement
			wantCode(t, err, perch.EUNAVAILABLE)

			canceled, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := s.InsertNotifications(canceled, oneNotification("given up on"), nil); err == nil {
				t.Fatal("a write with a canceled context succeeded")
			}
			wantFailures(t, s, 2)

			outage.End()
			if _, err := s.InsertNotifications(ctx, oneNotification("after the outage"), nil); err != nil {
				t.Fatal(err)
			}
			if h := wantFailures(t, s, 0); h.Cause != "" || h.Err != nil {
				t.Fatalf("WriteHealth = %+v after a write succeeded", h)
			}
		})
	}
}

// TestAFullDiskIsAnOutage: PostgreSQL's disk_full (53100), as a statement
// meets it, is unavailable with the full disk as its cause, and counted.
// (SQLite's SQLITE_FULL is checked in the store's own tests, where the
// writer's size can be capped.)
func TestAFullDiskIsAnOutage(t *testing.T) {
	t.Parallel()
	// PostgreSQL only: SQLite's full disk is internal/store's
	// TestSQLiteFullDiskIsAnOutage.
	storetest.RunWithSQLOn(t, []store.Dialect{store.Postgres}, func(t *testing.T, s *store.Store, db *sql.DB) {
		for _, stmt := range []string{
			`CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100'; END $$`,
			`CREATE TRIGGER disk_full BEFORE INSERT ON notifications FOR EACH ROW EXECUTE FUNCTION disk_full()`,
		} {
			if _, err := db.Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
		_, err := s.InsertNotifications(context.Background(), oneNotification("on a full disk"), nil)
		wantCode(t, err, perch.EUNAVAILABLE)
		if h := wantFailures(t, s, 1); h.Cause != "the database's disk is full" {
			t.Fatalf("cause %q", h.Cause)
		}
	})
}
