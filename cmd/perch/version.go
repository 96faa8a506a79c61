package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version and commit are set at build time (scripts/release.sh):
// -ldflags "-X main.version=v1.2.3 -X main.commit=0123456789ab".
var (
	version = "dev"
	commit  = ""
)

// buildInfo is what perch version tells about this binary.
type buildInfo struct {
	Version  string
	Commit   string // "" when unknown
	Go       string // the toolchain that built it
	Platform string // GOOS/GOARCH
	Tray     bool   // perch tray is built in
}

// thisBuild describes the running binary. A binary built without the
// release's -ldflags takes what the Go toolchain stamped instead: the module
// version of go install …@v1.2.3, the commit of a build in a checkout.
func thisBuild() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Go: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, Tray: trayBuiltIn}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
	}
	if b.Commit == "" {
		var modified bool
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if b.Commit != "" && modified {
			b.Commit += " (with uncommitted changes)"
		}
	}
	return b
}

// write prints b as perch version does: the version on the first line, as
// before, then one line per fact.
func (b buildInfo) write(w io.Writer) {
	commit := b.Commit
	if commit == "" {
		commit = "unknown"
	}
	tray := "built in"
	if !b.Tray {
		tray = "not built in (macOS's menu bar needs cgo, and this build was made without it: see perch tray)"
	}
	fmt.Fprintf(w, "perch %s\ncommit:  %s\ngo:      %s\nos/arch: %s\ntray:    %s\n", b.Version, commit, b.Go, b.Platform, tray)
}
