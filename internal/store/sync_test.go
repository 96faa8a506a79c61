package store

import (
	"context"
	"path/filepath"
	"testing"
)

// TestSQLiteSyncSetsHowCommitsReachTheDisk: WithSQLiteSync sets PRAGMA
// synchronous on every SQLite connection of the store, the writer, the
// readers and the checkpointer (NORMAL, 1, when not given; FULL, 2), and
// Open refuses any other value.
func TestSQLiteSyncSetsHowCommitsReachTheDisk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		opts []Option
		want int
	}{
		{nil, 1},
		{[]Option{WithSQLiteSync("")}, 1},
		{[]Option{WithSQLiteSync(SyncNormal)}, 1},
		{[]Option{WithSQLiteSync(SyncFull)}, 2},
	} {
		s, err := Open(ctx, filepath.Join(t.TempDir(), "perch.db"), c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		var writer, reader, checkpointer int
		if err := s.w.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&writer); err != nil {
			t.Fatal(err)
		}
		if err := s.r.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&reader); err != nil {
			t.Fatal(err)
		}
		if err := s.ckpt.db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&checkpointer); err != nil {
			t.Fatal(err)
		}
		if writer != c.want || reader != c.want || checkpointer != c.want {
			t.Errorf("%d options: synchronous = %d (writer), %d (reader), %d (checkpointer), want %d", len(c.opts), writer, reader, checkpointer, c.want)
		}
		s.Close()
	}
	if s, err := Open(ctx, filepath.Join(t.TempDir(), "perch.db"), WithSQLiteSync("off")); err == nil {
		s.Close()
		t.Fatal("Open took synchronous off")
	}
}
