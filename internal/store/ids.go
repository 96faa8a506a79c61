package store

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newID returns a random, URL-safe identifier of 20 characters (100 bits):
// unguessable, so an ID never reveals how many rows exist.
func newID() string {
	var b [13]byte
	rand.Read(b[:])
	return strings.ToLower(idEncoding.EncodeToString(b[:]))[:20]
}
