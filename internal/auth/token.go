package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strings"

	"github.com/perch-dev/perch"
)

// tokenEntropy is the number of random bytes in a token: 256 bits.
const tokenEntropy = 32

// NewToken returns a fresh raw token with the given prefix and its hash.
// The raw value is for the user, once; the hash is for the store.
func NewToken(prefix string) (raw, hash string) {
	b := make([]byte, tokenEntropy)
	rand.Read(b)
	raw = prefix + strings.TrimRight(b32.EncodeToString(b), "=")
	return raw, HashToken(raw)
}

// HashToken returns the SHA-256 of a raw token in hex. Tokens carry 256 random
// bits, so a fast hash is enough: there is nothing to guess by brute force,
// and the lookup by hash compares no secret byte by byte in Go.
func HashToken(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// NewUserCode returns a fresh user code for a desktop sign-in, normalized
// (perch.UserCodeLength characters of perch.UserCodeAlphabet, each drawn
// uniformly), and its perch.HashUserCode.
func NewUserCode() (code, hash string) {
	// Bytes from the largest multiple of the alphabet's size up are
	// dropped, so that the remainder favours no letter.
	n := len(perch.UserCodeAlphabet)
	limit := 256 - 256%n
	out := make([]byte, 0, perch.UserCodeLength)
	buf := make([]byte, 2*perch.UserCodeLength)
	for len(out) < perch.UserCodeLength {
		rand.Read(buf)
		for _, b := range buf {
			if int(b) < limit && len(out) < perch.UserCodeLength {
				out = append(out, perch.UserCodeAlphabet[int(b)%n])
			}
		}
	}
	code = string(out)
	return code, perch.HashUserCode(code)
}

// DisplayPrefix is the part of a raw token that may be shown again later to
// recognise it: the prefix and the first eight random characters.
func DisplayPrefix(raw string) string {
	i := strings.IndexByte(raw, '_')
	if i < 0 || len(raw) < i+1+8 {
		return raw
	}
	return raw[:i+1+8]
}

// b32 is lower-case Crockford-free base32: tokens survive copying from
// terminals and URLs, and read unambiguously.
var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
