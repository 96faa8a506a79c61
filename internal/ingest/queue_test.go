package ingest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// A delivery that cannot even be queued, because the writer is far behind,
// gives up when its caller does; and once the writer has stopped, it is
// refused rather than left waiting.
func TestWriteWaitsForRoomOnlyAsLongAsItMay(t *testing.T) {
	t.Parallel()
	w := New(storetest.New(t, store.SQLite), fanout.NewLocal(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	for range cap(w.reqs) { // the writer is not running: nothing is taken
		w.reqs <- &request{reply: make(chan reply, 1)}
	}
	n := store.NewNotification{Notification: perch.Notification{Title: "late", Tab: "T", Severity: "info", Source: "inbound", Scope: perch.Scope{Type: perch.ScopeAll}}}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Write(ctx, n); !errors.Is(err, context.Canceled) {
		t.Fatalf("full queue, caller gone: %v", err)
	}
	close(w.done)
	if _, err := w.Write(context.Background(), n); !errors.Is(err, ErrStopped) {
		t.Fatalf("full queue, writer stopped: %v", err)
	}
}
