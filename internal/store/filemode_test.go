//go:build unix

package store

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/perch-dev/perch"
)

// TestSQLiteFilesAreTheOwnersAlone: a new SQLite database and its -wal
// and -shm companions, once written to, can be read by the user the server
// runs as and nobody else (0600; SQLite alone makes them 0644 under the
// usual umask); an existing database keeps the mode its operator gave it.
func TestSQLiteFilesAreTheOwnersAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "perch.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InsertNotifications(ctx, []NewNotification{{Notification: perch.Notification{Title: "written", Tab: "T",
		Severity: perch.SeverityInfo, Source: perch.SourceInbound, Scope: perch.Scope{Type: perch.ScopeAll}}}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		if mode := fileMode(t, name); mode != 0o600 {
			t.Errorf("%s: mode %v, want -rw-------", filepath.Base(name), mode)
		}
	}

	// The operator's own choice stands.
	shared := filepath.Join(t.TempDir(), "shared.db")
	if err := os.WriteFile(shared, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o640); err != nil { // past the umask
		t.Fatal(err)
	}
	other, err := Open(ctx, shared)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Migrate(ctx, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if mode := fileMode(t, shared); mode != 0o640 {
		t.Errorf("an existing database's mode became %v, want -rw-r-----", mode)
	}
}

func fileMode(tb testing.TB, name string) fs.FileMode {
	tb.Helper()
	info, err := os.Stat(name)
	if err != nil {
		tb.Fatal(err)
	}
	return info.Mode().Perm()
}
