//go:build darwin && !cgo

package main

import (
	"context"
	"errors"
)

// runSystray cannot show anything here: systray draws the macOS menu bar
// through Cocoa, with cgo, which this build was made without.
func runSystray(*trayApp, context.CancelFunc) error {
	return errors.New("this perch was built without cgo (CGO_ENABLED=0); the macOS menu bar needs a build with it")
}
