package storetest_test

import (
	"flag"
	"testing"

	"go.uber.org/goleak"

	"github.com/perch-dev/perch/internal/testenv"
)

// TestMain runs the suite four tests per processor unless -parallel says
// otherwise, then requires that no goroutine outlives its test: every store
// starts some (database/sql's connection openers, the SQLite checkpointer,
// the outage tests' proxies).
//
// The PostgreSQL half of a test waits on the server more than it runs here:
// a database made from the template and dropped again costs fsyncs, not
// this process's processor. On the 2-core test host under load the suite
// took 317 s at go test's default (-parallel 2, GOMAXPROCS) and 98 s at 8.
func TestMain(m *testing.M) {
	flag.Parse()
	testenv.ParallelPerProcessor(4)
	goleak.VerifyTestMain(m)
}
