package store

import (
	"testing"

	"go.uber.org/goleak"
)

// Every store starts goroutines (database/sql's connection openers, the
// SQLite checkpointer); none may outlive the test that opened it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
