package web_test

import (
	"os"
	"testing"
)

// TestMain stops the Chromium the browser tests share once they are all
// done (browser_helpers_test.go).
func TestMain(m *testing.M) {
	code := m.Run()
	stopChromium()
	os.Exit(code)
}
