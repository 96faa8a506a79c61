package storetest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestUnstorableTextIsABadRequest passes the store, bypassing validation,
// text that PostgreSQL cannot hold (SQLSTATE 22021): there it must be a
// bad_request, whichever way the statement is sent (exec, query, prepared,
// in a transaction), and the store must go on working; SQLite stores it or
// finds nothing.
func TestUnstorableTextIsABadRequest(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		pg := s.Dialect() == store.Postgres
		want := func(t *testing.T, err error, onSQLite string) {
			t.Helper()
			if !pg {
				wantCode(t, err, onSQLite)
				return
			}
			wantCode(t, err, perch.EBADREQUEST)
			if msg := perch.ErrorMessage(err); strings.Contains(msg, "22021") || strings.Contains(msg, "UTF8") {
				t.Errorf("message leaks the driver's: %q", msg)
			}
		}
		row := func(title string) store.NewNotification {
			return store.NewNotification{Notification: perch.Notification{
				Title: title, Tab: "T", Severity: perch.SeverityInfo, Source: perch.SourceInbound, Scope: perch.Scope{Type: perch.ScopeAll},
			}}
		}

		t.Run("insert", func(t *testing.T) {
			_, err := s.CreateTeam(ctx, ada.OrgID, "a\x00b", "")
			want(t, err, "")
		})
		t.Run("update", func(t *testing.T) {
			_, err := s.SetUserName(ctx, ada.ID, "bad \xff byte")
			want(t, err, "")
		})
		t.Run("query", func(t *testing.T) {
			_, _, err := s.UserCredentials(ctx, "ada\x00@example.com")
			want(t, err, perch.ENOTFOUND)
		})
		t.Run("id in a lookup", func(t *testing.T) {
			_, err := s.Team(ctx, ada.OrgID, "\x00")
			want(t, err, perch.ENOTFOUND)
		})
		t.Run("transaction", func(t *testing.T) {
			_, err := s.CreateUser(ctx, "Bob\x00", "bob@example.com", "hash")
			want(t, err, "")
		})
		t.Run("prepared statement in a batch", func(t *testing.T) {
			_, err := s.InsertNotifications(ctx, []store.NewNotification{row("fine"), row("a\x00b"), row("fine too")}, nil)
			want(t, err, "")
		})

		// Every connection is still good: the failed batch released the
		// order lock and rolled back.
		for range 3 {
			if _, err := s.InsertNotifications(ctx, []store.NewNotification{row("after")}, nil); err != nil {
				t.Fatalf("insert after a refused one: %v", err)
			}
		}
		if _, err := s.User(ctx, ada.ID); err != nil {
			t.Fatalf("read after refused ones: %v", err)
		}
	})
}
