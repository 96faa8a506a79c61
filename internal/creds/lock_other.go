//go:build !unix

package creds

// lockFile does not lock where flock is missing: processes there should not
// share one sign-in.
func lockFile(string) (func(), error) { return func() {}, nil }
