package storetest_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func titles(list []*perch.Notification) []string {
	out := []string{}
	for _, n := range list {
		out = append(out, n.Title)
	}
	return out
}

// TestNotificationsPagesOverEveryScopeTheUserHears stores notifications for
// every kind of audience, interleaved, and pages through what one user sees.
func TestNotificationsPagesOverEveryScopeTheUserHears(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		eve := mustCreateUser(t, s, "Eve", "eve@example.com")
		ops, err := s.CreateTeam(ctx, ada.OrgID, "Ops", "")
		if err != nil {
			t.Fatal(err)
		}
		other, _ := s.CreateTeam(ctx, ada.OrgID, "Other", "")
		if err := s.AddTeamMember(ctx, ada.OrgID, ops.ID, ada.ID); err != nil {
			t.Fatal(err)
		}
		scopes := []perch.Scope{
			{Type: perch.ScopeUser, ID: ada.ID}, {Type: perch.ScopeUser, ID: eve.ID}, {Type: perch.ScopeOrg, ID: ada.OrgID},
			{Type: perch.ScopeOrg, ID: eve.OrgID}, {Type: perch.ScopeTeam, ID: ops.ID}, {Type: perch.ScopeTeam, ID: other.ID},
			{Type: perch.ScopeAll},
		}
		var batch []store.NewNotification
		var want []string // what Ada sees, in id order
		for i := range 21 {
			sc := scopes[i%len(scopes)]
			title := fmt.Sprintf("%d %s", i, sc.Type)
			batch = append(batch, store.NewNotification{Notification: perch.Notification{Title: title, Tab: "T", Severity: "info", Source: "inbound", Scope: sc}})
			if (sc.Type == perch.ScopeUser && sc.ID == ada.ID) || (sc.Type == perch.ScopeOrg && sc.ID == ada.OrgID) ||
				(sc.Type == perch.ScopeTeam && sc.ID == ops.ID) || sc.Type == perch.ScopeAll {
				want = append(want, title)
			}
		}
		stored, err := s.InsertNotifications(ctx, batch, nil)
		if err != nil {
			t.Fatal(err)
		}

		adas, err := s.Audience(ctx, ada)
		if err != nil || len(adas.TeamIDs) != 1 || adas.TeamIDs[0] != ops.ID {
			t.Fatalf("Audience = %+v, %v", adas, err)
		}
		eves, _ := s.Audience(ctx, eve)
		newest, err := s.Notifications(ctx, adas, "", 5)
		if err != nil || !slices.Equal(titles(newest), want[len(want)-5:]) {
			t.Fatalf("newest page = %v, %v; want %v", titles(newest), err, want[len(want)-5:])
		}
		var paged []string
		for since := "0"; ; {
			page, err := s.Notifications(ctx, adas, since, 4)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			paged = append(paged, titles(page)...)
			since = page[len(page)-1].ID
		}
		if !slices.Equal(paged, want) {
			t.Fatalf("paged %v, want %v", paged, want)
		}

		// Read state is per user.
		marked, err := s.MarkRead(ctx, ada, []string{stored[0].Notification.ID, stored[1].Notification.ID}, false)
		if err != nil || len(marked) != 1 || marked[0] != stored[0].Notification.ID {
			t.Fatalf("MarkRead = %v, %v (Eve's notification must be passed over)", marked, err)
		}
		first, _ := s.Notifications(ctx, adas, "0", 1)
		if !first[0].Read {
			t.Fatal("not read for Ada")
		}
		evesList, _ := s.Notifications(ctx, eves, "0", 100)
		for _, n := range evesList {
			if n.Read {
				t.Fatalf("read for Eve too: %v", n)
			}
		}
		if _, err := s.Notifications(ctx, adas, "x", 5); perch.ErrorCode(err) != perch.EBADREQUEST {
			t.Fatalf("bad since: %v", err)
		}
	})
}

// TestInsertNotificationsKeepsOrderAndRecognisesRedeliveries stores batches
// large enough to span several multi-row statements (64 + 26 rows on
// SQLite; 64 + 16 + 4 + 4 + 1 + 1 on PostgreSQL), with keys seen in an
// earlier batch, keys repeated within the batch and across its statements,
// and rows without a key.
func TestInsertNotificationsKeepsOrderAndRecognisesRedeliveries(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		scope := perch.Scope{Type: perch.ScopeAll}
		row := func(title, key string) store.NewNotification {
			return store.NewNotification{DedupeKey: key, Notification: perch.Notification{Title: title, Tab: "T", Severity: "info", Source: "inbound", Scope: scope}}
		}
		first, err := s.InsertNotifications(ctx, []store.NewNotification{row("early", "k-early")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var batch []store.NewNotification
		for i := range 90 {
			switch {
			case i == 5 || i == 70:
				batch = append(batch, row(fmt.Sprintf("again %d", i), "k-early"))
			case i%10 == 3:
				batch = append(batch, row(fmt.Sprintf("keyed %d", i), fmt.Sprintf("k%d", i)))
			case i == 81:
				batch = append(batch, row("repeat of 13", "k13")) // repeats a key from another statement
			case i == 14:
				batch = append(batch, row("repeat of 13 at once", "k13"))
			default:
				batch = append(batch, row(fmt.Sprintf("plain %d", i), ""))
			}
		}
		stored, err := s.InsertNotifications(ctx, batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != len(batch) {
			t.Fatalf("%d results for %d rows", len(stored), len(batch))
		}
		var last int64
		for i, st := range stored {
			id, _ := store.ParseNotificationID(st.Notification.ID)
			switch i {
			case 5, 70:
				if !st.Duplicate || st.Notification.ID != first[0].Notification.ID || st.Notification.Title != "early" {
					t.Fatalf("row %d = %+v; want a duplicate of the earlier delivery", i, st)
				}
				continue
			case 14, 81:
				if !st.Duplicate || st.Notification.ID != stored[13].Notification.ID || st.Notification.Title != "keyed 13" {
					t.Fatalf("row %d = %+v; want a duplicate of row 13", i, st)
				}
				continue
			}
			if st.Duplicate || st.Notification.Title != batch[i].Notification.Title || id <= last {
				t.Fatalf("row %d = %+v (previous id %d); want it stored, with a larger id", i, st, last)
			}
			last = id
		}
		all, err := s.Notifications(ctx, &perch.Audience{UserID: "nobody", OrgID: "none"}, "0", 500)
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 + len(batch) - 4; len(all) != want {
			t.Fatalf("%d notifications stored, want %d", len(all), want)
		}
		// Each answer names the row it stored, whichever way its statement
		// learned the ids.
		titles := map[string]string{}
		for _, n := range all {
			titles[n.ID] = n.Title
		}
		for i, st := range stored {
			if got := titles[st.Notification.ID]; got != st.Notification.Title {
				t.Fatalf("row %d was answered with id %s, which holds %q, not %q", i, st.Notification.ID, got, st.Notification.Title)
			}
		}
	})
}

// TestInsertNotificationsWithoutKeysAnswersTheirIDs stores batches without
// dedupe keys, in statements of several sizes, and reads each answered id
// back.
func TestInsertNotificationsWithoutKeysAnswersTheirIDs(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		scope := perch.Scope{Type: perch.ScopeAll}
		batchOf := func(prefix string, n int) []store.NewNotification {
			b := make([]store.NewNotification, n)
			for i := range b {
				b[i] = store.NewNotification{Notification: perch.Notification{Title: fmt.Sprintf("%s %d", prefix, i), Tab: "T", Severity: "info", Source: "inbound", Scope: scope}}
			}
			return b
		}
		var answered []store.Stored
		for _, n := range []int{1, 3, 85, 17} { // 85: 64 + 21 on SQLite, 64 + 16 + 4 + 1 on PostgreSQL
			stored, err := s.InsertNotifications(ctx, batchOf(fmt.Sprintf("batch of %d", n), n), nil)
			if err != nil {
				t.Fatal(err)
			}
			answered = append(answered, stored...)
		}
		all, err := s.Notifications(ctx, &perch.Audience{UserID: "nobody", OrgID: "none"}, "0", 500)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != len(answered) {
			t.Fatalf("%d stored, %d answered", len(all), len(answered))
		}
		for i, st := range answered {
			if st.Duplicate || all[i].ID != st.Notification.ID || all[i].Title != st.Notification.Title {
				t.Fatalf("answer %d = %+v; stored %+v", i, st, all[i])
			}
		}
	})
}

// BenchmarkInsertNotifications is the ingest writer's cost per notification
// at group-commit batch sizes, on each database: a lone delivery, a typical
// batch, one full statement, and the writer's largest batch; and a batch
// whose rows carry dedupe keys (on PostgreSQL, the statement that checks
// them).
func BenchmarkInsertNotifications(b *testing.B) {
	for _, dialect := range []store.Dialect{store.SQLite, store.Postgres} {
		for _, c := range []struct {
			size  int
			keyed bool
		}{{1, false}, {10, false}, {64, false}, {256, false}, {64, true}} {
			name := fmt.Sprintf("%s/batch=%d", dialect, c.size)
			if c.keyed {
				name += "/keyed"
			}
			b.Run(name, func(b *testing.B) {
				s := storetest.New(b, dialect)
				batch := make([]store.NewNotification, c.size)
				for i := range batch {
					batch[i] = store.NewNotification{Notification: perch.Notification{Title: "Deploy finished", Message: "api v1.2.3 is live",
						Tab: "Deploys", Severity: "info", Source: "inbound", Scope: perch.Scope{Type: perch.ScopeOrg, ID: "org_1"}}}
				}
				b.ReportAllocs()
				b.ResetTimer()
				n := 0
				for b.Loop() {
					if c.keyed {
						for i := range batch {
							n++
							batch[i].DedupeKey = "bench|" + strconv.Itoa(n)
						}
					}
					if _, err := s.InsertNotifications(context.Background(), batch, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*c.size), "ns/notification")
			})
		}
	}
}

// TestPruneNotificationsDeletesWhatRetentionPassed prunes a backlog longer
// than one pruning transaction, and checks what a client resuming from
// before, at and after the pruned range is told.
func TestPruneNotificationsDeletesWhatRetentionPassed(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		audience := &perch.Audience{UserID: ada.ID, OrgID: ada.OrgID}
		insert := func(n int, title string) []store.Stored {
			t.Helper()
			batch := make([]store.NewNotification, n)
			for i := range batch {
				batch[i] = store.NewNotification{Notification: perch.Notification{Title: title, Tab: "T", Severity: "info", Source: "inbound",
					Scope: perch.Scope{Type: perch.ScopeUser, ID: ada.ID}}}
			}
			stored, err := s.InsertNotifications(ctx, batch, nil)
			if err != nil {
				t.Fatal(err)
			}
			return stored
		}
		old := insert(2003, "old") // more than one pruning transaction deletes
		if _, err := s.MarkRead(ctx, ada, []string{old[0].Notification.ID}, false); err != nil {
			t.Fatal(err)
		}
		clock.Advance(31 * 24 * time.Hour)
		young := insert(2, "young")
		lastOld := old[len(old)-1].Notification.ID

		n, err := s.PruneNotifications(ctx, clock.Now().Add(-30*24*time.Hour).UnixMilli())
		if err != nil || n != int64(len(old)) {
			t.Fatalf("PruneNotifications = %d, %v; want %d", n, err, len(old))
		}
		left, err := s.Notifications(ctx, audience, "0", 100)
		if err != nil || !slices.Equal(titles(left), []string{"young", "young"}) {
			t.Fatalf("left after pruning: %v, %v", titles(left), err)
		}
		for since, want := range map[string]bool{"0": true, old[0].Notification.ID: true, lastOld: false, young[0].Notification.ID: false} {
			after, gap, err := s.ReplayStart(ctx, since)
			if err != nil || gap != want || strconv.FormatInt(after, 10) != since {
				t.Errorf("ReplayStart(%s) = %d, %v, %v; want %s, %v", since, after, gap, err, since, want)
			}
		}
		// An id this server never gave would hide what comes up to it: the
		// replay starts from the oldest kept, and says there is a gap.
		newest, _ := strconv.ParseInt(young[1].Notification.ID, 10, 64)
		if after, gap, err := s.ReplayStart(ctx, strconv.FormatInt(newest+1000, 10)); err != nil || after != 0 || !gap {
			t.Errorf("ReplayStart(past the newest) = %d, %v, %v; want 0, true", after, gap, err)
		}

		// Everything past retention: the table empties, and ids still never
		// go back, or a client resuming from an old id would miss new ones.
		clock.Advance(31 * 24 * time.Hour)
		if n, err := s.PruneNotifications(ctx, clock.Now().Add(-30*24*time.Hour).UnixMilli()); err != nil || n != 2 {
			t.Fatalf("second PruneNotifications = %d, %v; want 2", n, err)
		}
		next := insert(1, "next")[0].Notification.ID
		if a, b := mustID(t, next), mustID(t, young[1].Notification.ID); a <= b {
			t.Fatalf("id %d after pruning everything, not above the last id %d", a, b)
		}
		if n, err := s.PruneNotifications(ctx, clock.Now().Add(-30*24*time.Hour).UnixMilli()); err != nil || n != 0 {
			t.Fatalf("pruning with nothing old = %d, %v; want 0", n, err)
		}
	})
}

func mustID(t *testing.T, id string) int64 {
	t.Helper()
	v, err := store.ParseNotificationID(id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
