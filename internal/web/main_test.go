package web_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the package's tests, stops the Chromium the browser tests
// share (browser_helpers_test.go), then requires that they left no
// goroutine running: every site, store, mail server and browser a test
// starts is stopped by its cleanup.
func TestMain(m *testing.M) {
	// Goroutines running before any test are the packages' own from their
	// initialisation (the WebSocket library's default engine), not leaks.
	before := goleak.IgnoreCurrent()
	code := m.Run()
	stopChromium()
	if code == 0 {
		if err := goleak.Find(before); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
