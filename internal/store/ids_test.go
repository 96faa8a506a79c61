package store

import (
	"testing"
	"time"
)

// Timed ids are plain ids of 20 characters that sort as their times do,
// and differ within one millisecond.
func TestTimedIDsSortByTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 4, 30, 0, 0, time.UTC)
	prev := newTimedID(at.Add(-time.Millisecond))
	seen := map[string]bool{}
	for i := range 1000 {
		id := newTimedID(at.Add(time.Duration(i/10) * time.Millisecond))
		if len(id) != 20 || !plainID(id) {
			t.Fatalf("%q is not a plain id of 20 characters", id)
		}
		if id[:10] < prev[:10] || seen[id] {
			t.Fatalf("%q after %q: out of order or repeated", id, prev)
		}
		seen[id], prev = true, id
	}
}
