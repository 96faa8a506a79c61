package main

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"testing"
)

func TestVersionSaysWhatThisBuildIs(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, func(string) string { return "" }, nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	// A test binary has no -ldflags and no VCS stamp; the tray is built into
	// every test build (Linux, or macOS with cgo).
	want := "perch dev\n" +
		"commit:  unknown\n" +
		"go:      " + runtime.Version() + "\n" +
		"os/arch: " + runtime.GOOS + "/" + runtime.GOARCH + "\n" +
		"tray:    built in\n"
	if out.String() != want {
		t.Fatalf("perch version printed\n%s\nwant\n%s", out.String(), want)
	}
}

func TestVersionOfAReleaseBuild(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		b    buildInfo
		want string
	}{
		{"linux with the tray", buildInfo{Version: "v1.4.0", Commit: "0123456789ab", Go: "go1.26.1", Platform: "linux/arm64", Tray: true},
			"perch v1.4.0\ncommit:  0123456789ab\ngo:      go1.26.1\nos/arch: linux/arm64\ntray:    built in\n"},
		{"macOS without cgo", buildInfo{Version: "v1.4.0", Commit: "0123456789ab", Go: "go1.26.1", Platform: "darwin/arm64"},
			"perch v1.4.0\ncommit:  0123456789ab\ngo:      go1.26.1\nos/arch: darwin/arm64\n" +
				"tray:    not built in (macOS's menu bar needs cgo, and this build was made without it: see perch tray)\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			c.b.write(&out)
			if out.String() != c.want {
				t.Fatalf("printed\n%s\nwant\n%s", out.String(), c.want)
			}
		})
	}
}
