package store

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"strings"
	"time"
)

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// timedEncoding is base32 whose digits (0-9, then a-v once lowered) sort
// as their values do.
var timedEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

// newID returns a random, URL-safe identifier of 20 characters (100 bits):
// unguessable, so an ID never reveals how many rows exist.
func newID() string {
	var b [13]byte
	rand.Read(b[:])
	return strings.ToLower(idEncoding.EncodeToString(b[:]))[:20]
}

// newTimedID returns an identifier of 20 characters that sorts by time: 10
// characters of the millisecond t (good for 35,000 years), then 10
// random ones (50 bits). For rows written as fast as notifications (workflow
// runs), whose ids are only ever shown with their time: each insert then
// lands at the end of the primary key's index instead of at a random page
// of it, which on SQLite costs a fraction as much.
func newTimedID(t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<14) // 50 bits of time, left-aligned in 64
	rand.Read(b[8:])
	enc := strings.ToLower(timedEncoding.EncodeToString(b[:]))
	return enc[:10] + enc[13:23]
}

// NewRunID returns an id for a workflow run made at t, as AddWorkflowRuns
// would give it: ingest names a run before it is recorded, so that the
// jobs the run queued (stored with the notification, before the run is
// recorded) can name it.
func NewRunID(t time.Time) string { return newTimedID(t) }
