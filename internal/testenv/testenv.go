// Package testenv tells tests which outside services and files they may use,
// and turns "skip for want of a service" into a failure under .ci/run, where
// nothing may be skipped.
package testenv

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// StrictEnv names the variable that .ci/run sets.
const StrictEnv = "PERCH_TEST_STRICT"

// SkipUnlessStrict skips tb with the formatted reason, or fails it when
// PERCH_TEST_STRICT is set.
func SkipUnlessStrict(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv(StrictEnv) != "" {
		tb.Fatalf("%s is set, but: "+format, append([]any{StrictEnv}, args...)...)
	}
	tb.Skipf(format, args...)
}

// FixturesDir returns the shared fixtures directory: PERCH_FIXTURES_DIR, or
// ../shared/fixtures beside the repository. It skips tb (fails it under
// PERCH_TEST_STRICT) when neither exists.
func FixturesDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("PERCH_FIXTURES_DIR")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0) // .../internal/testenv/testenv.go
		dir = filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "fixtures")
	}
	if _, err := os.Stat(filepath.Join(dir, "webhooks", "EXPECTED.json")); err != nil {
		SkipUnlessStrict(tb, "shared fixtures not found at %s (set PERCH_FIXTURES_DIR): they are checked out beside the repository in CI", dir)
	}
	return dir
}
