//go:build darwin && !cgo

package main

import "context"

// trayBuiltIn is false here: systray draws the macOS menu bar through Cocoa,
// with cgo, and this build was made without it (CGO_ENABLED=0, as the
// release's cross-compiled macOS binaries are).
const trayBuiltIn = false

// runSystray is never reached (tray stops first with errNoTray); it keeps
// the tray's code building without systray.
func runSystray(*trayApp, context.CancelFunc) error {
	return errNoTray
}
