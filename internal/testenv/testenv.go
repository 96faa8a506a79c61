// Package testenv tells tests which outside services and files they may use,
// and turns "skip for want of a service" into a failure under .ci/run, where
// nothing may be skipped.
package testenv

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
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

// WebhookCase is one delivery listed in the shared webhooks/EXPECTED.json:
// the payload file, the receiver and headers it goes to, and what the
// notification must show.
type WebhookCase struct {
	File          string            `json:"file"`
	Path          string            `json:"path"`
	Headers       map[string]string `json:"headers"`
	Severity      string            `json:"severity"`
	Tab           string            `json:"tab"`
	TitleContains []string          `json:"title_contains"`
	TitleExcludes []string          `json:"title_excludes"`
	URL           string            `json:"url"`
	Ignored       bool              `json:"ignored"`
}

// WebhookCases reads the shared webhooks/EXPECTED.json and returns the
// directory its files are relative to, and its cases. Like FixturesDir it
// skips tb (fails it under PERCH_TEST_STRICT) when the fixtures are absent.
func WebhookCases(tb testing.TB) (dir string, cases []WebhookCase) {
	tb.Helper()
	dir = filepath.Join(FixturesDir(tb), "webhooks")
	raw, err := os.ReadFile(filepath.Join(dir, "EXPECTED.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var expected struct {
		Cases []WebhookCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &expected); err != nil {
		tb.Fatalf("EXPECTED.json: %v", err)
	}
	if len(expected.Cases) == 0 {
		tb.Fatal("EXPECTED.json lists no cases")
	}
	return dir, expected.Cases
}

// ParallelPerProcessor lets a package's parallel tests run perProcessor
// per processor at once unless the command line gave -parallel. Call it in
// TestMain, after flag.Parse. For packages whose tests mostly wait on a
// database server's fsyncs or on each other's sockets, not on this
// process's processor: go test's default, one per processor, leaves two
// cores idle behind those waits.
func ParallelPerProcessor(perProcessor int) {
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", strconv.Itoa(perProcessor*runtime.GOMAXPROCS(0)))
	}
}
