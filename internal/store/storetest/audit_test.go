package storetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// appendAudit adds entries to the log, one per action, a second apart.
func appendAudit(t *testing.T, s *store.Store, clock *storetest.Clock, org string, actions ...string) []*perch.AuditEntry {
	t.Helper()
	var out []*perch.AuditEntry
	for i, a := range actions {
		clock.Advance(time.Second)
		e := &perch.AuditEntry{Action: a, Actor: perch.AuditActor{Type: perch.ActorUser, ID: fmt.Sprintf("u%d", i%2), Email: "ada@example.com"},
			Target: perch.AuditTarget{Type: "team", ID: fmt.Sprintf("t%d", i)}, OrgID: org, IP: "192.0.2.1",
			UserAgent: "curl/8", RequestID: fmt.Sprintf("req-%d", i), Changes: map[string]any{"name": "Ops", "n": float64(i)}}
		if err := s.AppendAudit(context.Background(), e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func ids(entries []*perch.AuditEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.ID)
	}
	return out
}

func TestAuditLogReadsBackNewestFirstAPageAtATime(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		written := appendAudit(t, s, clock, "org1", "org.team.created", "org.team.updated", "org.member.role_changed", "api_token.created", "org.team.deleted")

		first, next, err := s.AuditLog(ctx, perch.AuditFilter{Page: perch.Page{Limit: 2}})
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != 2 || first[0].ID != written[4].ID || first[1].ID != written[3].ID || next == "" {
			t.Fatalf("first page: %v, next %q; want the two newest and a cursor", ids(first), next)
		}
		got := first[0]
		want := written[4]
		if got.Action != want.Action || got.Actor != want.Actor || got.Target != want.Target || got.OrgID != "org1" ||
			got.IP != "192.0.2.1" || got.UserAgent != "curl/8" || got.RequestID != "req-4" || !got.At.Equal(want.At) ||
			got.Changes["name"] != "Ops" || got.Changes["n"] != 4.0 {
			t.Errorf("read back %+v, wrote %+v", got, want)
		}
		var all []*perch.AuditEntry
		all = append(all, first...)
		for next != "" {
			var page []*perch.AuditEntry
			page, next, err = s.AuditLog(ctx, perch.AuditFilter{Page: perch.Page{Cursor: next, Limit: 2}})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page...)
		}
		wantIDs := ids(written)
		slices.Reverse(wantIDs)
		if !slices.Equal(ids(all), wantIDs) {
			t.Errorf("paged through %v, want %v", ids(all), wantIDs)
		}
		if _, _, err := s.AuditLog(ctx, perch.AuditFilter{Page: perch.Page{Cursor: "x1"}}); perch.ErrorCode(err) != perch.EBADREQUEST {
			t.Errorf("a cursor this store never answered: %v, want bad_request", err)
		}
	})
}

func TestAuditLogFilters(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		a := appendAudit(t, s, clock, "org1", "org.team.created", "org.member.role_changed", "api_token.created")
		b := appendAudit(t, s, clock, "org2", "org.team.created", "org_x.not_a_prefix_match")

		cases := []struct {
			name string
			f    perch.AuditFilter
			want []*perch.AuditEntry
		}{
			{"organisation", perch.AuditFilter{OrgID: "org2"}, []*perch.AuditEntry{b[1], b[0]}},
			{"action prefix", perch.AuditFilter{Action: "org."}, []*perch.AuditEntry{b[0], a[1], a[0]}},
			{"whole action", perch.AuditFilter{Action: "api_token.created"}, []*perch.AuditEntry{a[2]}},
			{"actor", perch.AuditFilter{ActorID: "u1", OrgID: "org1"}, []*perch.AuditEntry{a[1]}},
			{"from is inclusive, to is not", perch.AuditFilter{From: a[1].At, To: b[0].At}, []*perch.AuditEntry{a[2], a[1]}},
			{"nothing", perch.AuditFilter{Action: "billing."}, nil},
		}
		for _, c := range cases {
			got, next, err := s.AuditLog(ctx, c.f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), ids(c.want)) || next != "" {
				t.Errorf("%s: got %v (next %q), want %v", c.name, ids(got), next, ids(c.want))
			}
		}
	})
}

// EachAudit reads past its chunk size and keeps the filter across chunks.
func TestAuditLogStreamsEveryEntry(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		const n = 1234 // more than two chunks
		for i := range n {
			org := "org1"
			if i%3 == 0 {
				org = "org2"
			}
			if err := s.AppendAudit(ctx, &perch.AuditEntry{Action: "org.team.created", Actor: perch.AuditActor{Type: perch.ActorUser}, OrgID: org}); err != nil {
				t.Fatal(err)
			}
		}
		var seen []int64
		err := s.EachAudit(ctx, perch.AuditFilter{OrgID: "org1", Page: perch.Page{Limit: 5}}, func(e *perch.AuditEntry) error {
			if e.OrgID != "org1" {
				t.Fatalf("entry %s of %s streamed for org1", e.ID, e.OrgID)
			}
			var id int64
			fmt.Sscan(e.ID, &id)
			seen = append(seen, id)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := n - (n+2)/3; len(seen) != want {
			t.Fatalf("streamed %d entries, want %d", len(seen), want)
		}
		if !slices.IsSortedFunc(seen, func(a, b int64) int { return int(b - a) }) {
			t.Error("not newest first")
		}
		stop := fmt.Errorf("enough")
		calls := 0
		if err := s.EachAudit(ctx, perch.AuditFilter{}, func(*perch.AuditEntry) error { calls++; return stop }); err != stop || calls != 1 {
			t.Errorf("EachAudit went on after an error: %v after %d calls", err, calls)
		}
	})
}

func TestAuditLogPrunesPastRetention(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		old := appendAudit(t, s, clock, "org1", "auth.signed_in", "auth.signed_out")
		clock.Advance(400 * 24 * time.Hour)
		recent := appendAudit(t, s, clock, "org1", "auth.signed_in")
		n, err := s.PruneAudit(ctx, clock.Now().Add(-365*24*time.Hour))
		if err != nil || n != int64(len(old)) {
			t.Fatalf("pruned %d (%v), want %d", n, err, len(old))
		}
		left, _, err := s.AuditLog(ctx, perch.AuditFilter{})
		if err != nil || !slices.Equal(ids(left), ids(recent)) {
			t.Errorf("left %v (%v), want %v", ids(left), err, ids(recent))
		}
	})
}

// The table itself refuses to change an entry, whoever asks.
func TestAuditEntriesCannotBeChanged(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Backends {
		t.Run(string(dialect), func(t *testing.T) {
			dsn := storetest.DSN(t, dialect)
			s, err := store.Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Migrate(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
				t.Fatal(err)
			}
			e := &perch.AuditEntry{Action: "auth.signed_in", Actor: perch.AuditActor{Type: perch.ActorUser, ID: "u1"}}
			if err := s.AppendAudit(context.Background(), e); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open(map[store.Dialect]string{store.SQLite: "sqlite", store.Postgres: "pgx"}[dialect], dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE audit_log SET actor_id = 'someone else'`); err == nil {
				t.Error("an audit entry was changed")
			}
			got, _, err := s.AuditLog(context.Background(), perch.AuditFilter{})
			if err != nil || len(got) != 1 || got[0].Actor.ID != "u1" {
				t.Errorf("after the refused update: %+v, %v", got, err)
			}
		})
	}
}
