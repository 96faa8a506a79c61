package ingest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the package's tests, then requires that they left no
// goroutine running: every Writer's goroutine must end when it is closed,
// and the tests' own senders must be joined.
func TestMain(m *testing.M) {
	// Goroutines running before any test (the database drivers' own) are
	// not the tests' to end.
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
