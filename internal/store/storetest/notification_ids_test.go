package storetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// mustOpen opens the database at dsn as a store, migrated, closed when tb
// ends (closing it sooner is fine).
func mustOpen(tb testing.TB, dsn string) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		tb.Fatal(err)
	}
	return s
}

// broadcast is a notification to everyone, with key as its dedupe key.
func broadcast(title, key string) store.NewNotification {
	return store.NewNotification{DedupeKey: key, Notification: perch.Notification{Title: title, Tab: "T", Severity: "info", Source: "inbound",
		Scope: perch.Scope{Type: perch.ScopeAll}}}
}

// mustInsert stores batch and returns the ids of the rows that were new,
// in order, checking that they increase and stay above after.
func mustInsert(tb testing.TB, s *store.Store, after int64, batch ...store.NewNotification) []int64 {
	tb.Helper()
	stored, err := s.InsertNotifications(context.Background(), batch, nil)
	if err != nil {
		tb.Fatal(err)
	}
	var ids []int64
	for i, st := range stored {
		if st.Duplicate {
			continue
		}
		id, err := store.ParseNotificationID(st.Notification.ID)
		if err != nil || id <= after {
			tb.Fatalf("row %d of %d got id %s (%v), not above %d", i, len(batch), st.Notification.ID, err, after)
		}
		after = id
		ids = append(ids, id)
	}
	return ids
}

// TestNotificationIDsAreNeverReused stores batches of every kind of size
// (one statement, several on either database), prunes every row and stores
// again, from the same store and from one opened afresh on the database
// (which on SQLite must work out the next id from what it finds): ids only
// grow.
func TestNotificationIDsAreNeverReused(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Backends {
		t.Run(string(dialect), func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, dialect)
			s := mustOpen(t, dsn)
			clock := storetest.NewClock()
			s.Now = clock.Now
			var last int64
			for _, n := range []int{1, 10, 64, 65, 200, 3} {
				batch := make([]store.NewNotification, n)
				for i := range batch {
					key := ""
					if i%4 == 1 {
						key = fmt.Sprintf("k%d-%d", n, i)
					}
					batch[i] = broadcast(fmt.Sprintf("%d/%d", i, n), key)
				}
				ids := mustInsert(t, s, last, batch...)
				if len(ids) != n {
					t.Fatalf("batch of %d: %d stored", n, len(ids))
				}
				last = ids[len(ids)-1]
			}

			prune := func(s *store.Store) {
				t.Helper()
				clock.Advance(31 * 24 * time.Hour)
				if _, err := s.PruneNotifications(ctx, clock.Now().Add(-30*24*time.Hour).UnixMilli()); err != nil {
					t.Fatal(err)
				}
				if after, gap, err := s.ReplayStart(ctx, "0"); err != nil || after != 0 || !gap {
					t.Fatalf("ReplayStart(0) after pruning = %d, %v, %v; want a gap", after, gap, err)
				}
			}
			prune(s)
			last = mustInsert(t, s, last, broadcast("after pruning", ""), broadcast("keyed after pruning", "k-after"))[1]

			// Everything pruned again, and a store that has to find the
			// next id for itself.
			prune(s)
			s.Close()
			fresh := mustOpen(t, dsn)
			fresh.Now = clock.Now
			mustInsert(t, fresh, last, broadcast("from a fresh store", ""), broadcast("keyed from a fresh store", "k-fresh"))
		})
	}
}

// TestNotificationIDsSurviveAnotherWriter: on SQLite the store gives ids
// itself and keeps the next one. A row added behind its back (another
// connection to the file) takes that id; the store's insert clashes, reads
// the next id again, and succeeds above it.
func TestNotificationIDsSurviveAnotherWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := storetest.DSN(t, store.SQLite)
	s := mustOpen(t, dsn)
	last := mustInsert(t, s, 0, broadcast("first", ""), broadcast("second", ""))[1]

	db, err := sql.Open("sqlite", "file:"+dsn+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `INSERT INTO notifications (id, scope_type, scope_id, tab, title, message, severity, source, url, created_at)
		VALUES (?, 'all', '', 'T', 'behind its back', '', 'info', 'inbound', '', 0)`, last+1); err != nil {
		t.Fatal(err)
	}
	ids := mustInsert(t, s, last+1, broadcast("third", ""), broadcast("fourth", "k4"))
	if len(ids) != 2 {
		t.Fatalf("stored %v", ids)
	}
}

// TestInsertNotificationsDedupesWithinAndAcrossBatches stores a batch of the
// usual size (one statement) mixing rows without keys, new keys, a key
// repeated within the batch and keys of an earlier batch, ending with a
// duplicate: each duplicate is answered with the notification it repeats,
// and the next batch's ids are still above every id given.
func TestInsertNotificationsDedupesWithinAndAcrossBatches(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		first := mustInsert(t, s, 0, broadcast("a", "k1"), broadcast("plain 0", ""), broadcast("b", "k2"))
		batch := []store.NewNotification{
			broadcast("plain 1", ""), broadcast("a again", "k1"), broadcast("c", "k3"), broadcast("plain 2", ""), broadcast("c again", "k3"),
			broadcast("plain 3", ""), broadcast("b again", "k2"), broadcast("plain 4", ""), broadcast("d", "k4"), broadcast("d again", "k4"),
		}
		stored, err := s.InsertNotifications(ctx, batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		repeats := map[int]string{1: "a", 4: "c", 6: "b", 9: "d"}
		last := first[len(first)-1]
		for i, st := range stored {
			if want, ok := repeats[i]; ok {
				if !st.Duplicate || st.Notification.Title != want {
					t.Fatalf("row %d = %+v; want a duplicate of %q", i, st, want)
				}
				continue
			}
			if id := mustID(t, st.Notification.ID); st.Duplicate || st.Notification.Title != batch[i].Notification.Title || id <= last {
				t.Fatalf("row %d = %+v (previous id %d); want it stored, with a larger id", i, st, last)
			} else {
				last = id
			}
		}
		if stored[4].Notification.ID != stored[2].Notification.ID || stored[9].Notification.ID != stored[8].Notification.ID ||
			stored[1].Notification.ID != fmt.Sprint(first[0]) || stored[6].Notification.ID != fmt.Sprint(first[2]) {
			t.Fatalf("duplicates answered with the wrong ids: %+v", stored)
		}
		next := mustInsert(t, s, last, broadcast("plain 5", ""), broadcast("e", "k5"))
		all, err := s.Notifications(ctx, &perch.Audience{UserID: "nobody", OrgID: "none"}, "0", 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range all {
			got = append(got, n.ID+" "+n.Title)
		}
		want := []string{fmt.Sprint(first[0], " a"), fmt.Sprint(first[1], " plain 0"), fmt.Sprint(first[2], " b")}
		for i, st := range stored {
			if _, ok := repeats[i]; !ok {
				want = append(want, st.Notification.ID+" "+st.Notification.Title)
			}
		}
		want = append(want, fmt.Sprint(next[0], " plain 5"), fmt.Sprint(next[1], " e"))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("stored\n%v\nwant\n%v", got, want)
		}
	})
}
