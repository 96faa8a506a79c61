package server

import (
	"os"
	"testing"
)

// TestMain runs the package's tests, then, for a run of the whole package,
// requires every operation of openapi.json to have had a checked response.
func TestMain(m *testing.M) {
	code := m.Run()
	if !reportCoverage() && code == 0 {
		code = 1
	}
	os.Exit(code)
}
