// Package auth holds Perch's credential primitives: argon2id password hashes
// and the random, prefixed tokens whose SHA-256 hashes the store keeps.
package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Params are argon2id's costs. A hash records the costs it was made with, so
// changing them affects only new hashes.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32
	Threads uint8
}

// DefaultParams follow OWASP's argon2id recommendation (19 MiB, 2 passes, 1
// lane): about 30 ms per hash on one core, and little memory under a burst of
// logins on a small machine.
var DefaultParams = Params{Memory: 19 * 1024, Time: 2, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
)

var b64 = base64.RawStdEncoding

// slots bounds how many hashes run at once. Hashing is CPU-bound, so more
// than one per core adds no throughput, only memory: each takes Params.Memory,
// and a burst of logins must not exhaust the machine.
var slots = make(chan struct{}, runtime.GOMAXPROCS(0))

func acquire() (release func()) {
	slots <- struct{}{}
	return func() { <-slots }
}

// HashPassword returns the PHC-format argon2id hash of password.
func HashPassword(password string, p Params) string {
	release := acquire()
	defer release()
	salt := make([]byte, saltLen)
	rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// CheckPassword reports whether password matches hash, comparing in constant
// time. A malformed or empty hash (an account without a password) matches
// nothing.
func CheckPassword(hash, password string) bool {
	p, salt, key, err := decodeHash(hash)
	if err != nil {
		return false
	}
	release := acquire()
	defer release()
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1
}

// dummyHash is checked against when an account does not exist, so a login
// for an unknown address costs as much as one for a known address. It is a
// constant made with DefaultParams (a test keeps them in step), because
// computing it at start-up would cost every idle server 19 MiB of peak memory.
const dummyHash = "$argon2id$v=19$m=19456,t=2,p=1$JrwkYnHxWJyyTIkriwFOag$p4MjIYhrWibr4knf2GcalNQ12P9l/haRygH8K0SuYD0"

// CheckMissing spends the time of one password check and returns false.
func CheckMissing(password string) bool {
	CheckPassword(dummyHash, password)
	return false
}

func decodeHash(hash string) (p Params, salt, key []byte, err error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return p, nil, nil, errors.New("not an argon2id hash")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, errors.New("unsupported argon2 version")
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return p, nil, nil, fmt.Errorf("argon2 parameters: %w", err)
	}
	if p.Time == 0 || p.Threads == 0 || p.Memory == 0 || p.Memory > 1<<22 {
		return p, nil, nil, errors.New("argon2 parameters out of range")
	}
	if salt, err = b64.DecodeString(parts[4]); err != nil {
		return p, nil, nil, err
	}
	if key, err = b64.DecodeString(parts[5]); err != nil || len(key) == 0 {
		return p, nil, nil, errors.New("argon2 key")
	}
	return p, salt, key, nil
}
