package store

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/testenv"
)

// TestSQLiteCheckpointsInTheBackground writes several times the 1,000 pages
// after which SQLite would checkpoint inside a commit, and checks that the
// writer is set to leave that to the background, which then copies the whole
// log into the database file.
func TestSQLiteCheckpointsInTheBackground(t *testing.T) {
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
	var auto int
	if err := s.w.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil || auto != walBackstop {
		t.Fatalf("the writer checkpoints every %d pages (%v), want %d", auto, err, walBackstop)
	}

	message := strings.Repeat("x", 3000) // about a page a row
	batch := make([]NewNotification, 64)
	for i := range batch {
		batch[i] = NewNotification{Notification: perch.Notification{Title: "big", Message: message, Tab: "T", Severity: "info",
			Source: "inbound", Scope: perch.Scope{Type: perch.ScopeAll}}}
	}
	for range 40 {
		if _, err := s.InsertNotifications(ctx, batch, nil); err != nil {
			t.Fatal(err)
		}
	}
	testenv.EventuallyNil(t, 15*time.Second, func() error {
		runs, last := s.LastCheckpoint()
		if last != nil && last.Frames > 0 && last.Checkpointed == last.Frames {
			return nil
		}
		return fmt.Errorf("after %d background checkpoints the log is still not copied: %+v", runs, last)
	})
}
