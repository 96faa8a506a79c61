package fanout

import (
	"testing"

	"go.uber.org/goleak"
)

// Every subscription starts a goroutine; none may outlive its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
