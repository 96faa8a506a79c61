package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// SQLite's write-ahead log is copied back into the database file by
// checkpoints. Left to SQLite, the writer runs one inside a commit every
// 1,000 pages, and the transaction (and every ingest request waiting on the
// single writer) waits for it, fsyncs included. Instead a connection of its
// own checkpoints in the background once a checkpointEvery, without blocking
// the writer or readers (PASSIVE); a page written many times in between is
// copied once. The writer still checkpoints itself past walBackstop pages,
// should the background ever fall behind.
const (
	checkpointEvery = time.Second
	walBackstop     = 20_000 // pages: 80 MB at the default page size
)

// checkpointer runs the background checkpoints of a SQLite store.
type checkpointer struct {
	db     *sql.DB
	cancel context.CancelFunc
	done   sync.WaitGroup

	// Runs counts the checkpoints done and last holds the outcome of the
	// latest, for tests and diagnostics.
	runs atomic.Int64
	last atomic.Pointer[CheckpointResult]
}

// CheckpointResult is the outcome of one WAL checkpoint: the frames in the
// log and how many of them are now in the database file.
type CheckpointResult struct {
	Busy         bool
	Frames       int64
	Checkpointed int64
}

func (s *Store) startCheckpointer(path string) error {
	db, err := sql.Open("sqlite", sqliteDSN(path, sqliteCheckpointer, s.sync))
	if err != nil {
		return fmt.Errorf("open sqlite: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{db: db, cancel: cancel}
	s.ckpt = c
	c.done.Go(func() { c.run(ctx, checkpointEvery) })
	return nil
}

func (c *checkpointer) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var r CheckpointResult
		var busy int
		err := c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &r.Frames, &r.Checkpointed)
		if err != nil {
			continue // closed, or the next tick will try again
		}
		r.Busy = busy != 0
		c.last.Store(&r)
		c.runs.Add(1)
	}
}

func (c *checkpointer) stop() {
	c.cancel()
	c.done.Wait()
	c.db.Close()
}

// LastCheckpoint returns how many background checkpoints have run and the
// outcome of the latest (nil before the first). It is for SQLite stores;
// PostgreSQL has none.
func (s *Store) LastCheckpoint() (int64, *CheckpointResult) {
	if s.ckpt == nil {
		return 0, nil
	}
	return s.ckpt.runs.Load(), s.ckpt.last.Load()
}
