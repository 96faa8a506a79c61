// Package perch holds Perch's domain: the types every other package speaks
// (users, organisations, tokens, plans, announcements, notifications), the
// error codes that survive the trip over HTTP, and the rules that need no I/O
// (password strength, token formats). Storage, HTTP, fan-out and the client
// live in packages of their own around it; see docs/ARCHITECTURE.md.
package perch

import "time"

// Timestamp returns t in UTC rounded down to the millisecond, the precision
// that every store keeps, so a value read back equals the value written.
func Timestamp(t time.Time) time.Time {
	return t.UTC().Truncate(time.Millisecond)
}
