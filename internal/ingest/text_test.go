package ingest_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestTextThatCannotBeStoredDoesNotFailTheBatch writes, in one batch (one
// transaction), clean notifications beside ones PostgreSQL would refuse: a
// NUL, invalid UTF-8, control characters and a dedupe key too long to index,
// and ones with links no client may open (javascript:, file:). Every one is
// stored, cleaned (those links dropped), and a redelivery of the long key is
// still recognised.
func TestTextThatCannotBeStoredDoesNotFailTheBatch(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		w := start(t, s, fanout.NewLocal())
		ctx := context.Background()
		// Random, so that PostgreSQL cannot compress it to fit its index.
		var key strings.Builder
		for key.Len() < 3000 {
			key.WriteString(rand.Text())
		}
		longKey := key.String()
		dirty := event("a\x00b\u0085c\u202ed")
		dirty.Notification.Tab = "T\x07"
		dirty.Notification.Message = "line 1\r\nline 2\x00\t\xff"
		dirty.Notification.URL = "https://example.com/\x00"
		keyed := event("keyed")
		keyed.DedupeKey = longKey
		// A link the menu bar must never open, whoever wrote it: dropped.
		scripted := event("scripted")
		scripted.Notification.URL = "javascript:alert(document.cookie)"
		filed := event("filed")
		filed.Notification.URL = "file:///etc/passwd"
		stored, err := w.Write(ctx, event("before"), dirty, keyed, scripted, filed, event("after"))
		if err != nil {
			t.Fatalf("Write: %v", err)
		}
		want := []perch.Notification{
			{Title: "before", Tab: "T"},
			{Title: "a b cd", Tab: "T ", Message: "line 1\nline 2\t\ufffd", URL: "https://example.com/ "},
			{Title: "keyed", Tab: "T"},
			{Title: "scripted", Tab: "T"},
			{Title: "filed", Tab: "T"},
			{Title: "after", Tab: "T"},
		}
		if len(stored) != len(want) {
			t.Fatalf("%d stored, want %d", len(stored), len(want))
		}
		for i, st := range stored {
			n := st.Notification
			if st.Duplicate || n.ID == "" || n.Title != want[i].Title || n.Tab != want[i].Tab || n.Message != want[i].Message || n.URL != want[i].URL {
				t.Errorf("stored %d = %+v (duplicate %v), want %+v", i, n, st.Duplicate, want[i])
			}
		}

		again := event("keyed, delivered again")
		again.DedupeKey = longKey
		other := event("another long key")
		other.DedupeKey = longKey[1:] + "x"
		stored, err = w.Write(ctx, again, other)
		if err != nil {
			t.Fatalf("Write: %v", err)
		}
		if !stored[0].Duplicate || stored[1].Duplicate {
			t.Fatalf("redelivery duplicate = %v, other key duplicate = %v; want true, false", stored[0].Duplicate, stored[1].Duplicate)
		}
	})
}
