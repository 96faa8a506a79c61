package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// Seeds returns every JSON payload under the package's testdata/dir, keyed
// by file name, for a fuzz test's corpus; none is a failure.
func Seeds(f *testing.F, dir string) map[string][]byte {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata/%s: %v", dir, err)
	}
	out := make(map[string][]byte, len(files))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		out[filepath.Base(name)] = b
	}
	return out
}
