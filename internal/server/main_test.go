package server

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/perch-dev/perch/internal/testenv"
)

// TestMain runs the package's tests, then requires that they left no
// goroutine running (goleak), and, for a run of the whole package, that
// every operation of openapi.json had a checked response.
func TestMain(m *testing.M) {
	// Goroutines running before any test are the packages' own from their
	// initialisation (the WebSocket library's default engine), not leaks.
	flag.Parse()
	// Most tests wait on PostgreSQL, mail and sockets more than they run:
	// three at a time per processor. (Four, before each test's two
	// backends ran in parallel, once made the race detector's run of a
	// WebSocket resume test lose connections on two cores; at twelve at
	// once, without the race detector, the package took 101 s where it
	// took 228 s at four, and PostgreSQL's processes then used more of
	// the processors than the tests did.)
	testenv.ParallelPerProcessor(3)
	before := goleak.IgnoreCurrent()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(before); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	if !reportCoverage() && code == 0 {
		code = 1
	}
	os.Exit(code)
}
