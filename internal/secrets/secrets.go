// Package secrets keeps Perch's secrets at rest: what must be stored in the
// database but read back in the clear (an SMTP password, SAML keys) is
// sealed with AES-256-GCM under the server's key (PERCH_SECRET_KEY, or on
// SQLite a key file beside the database), and short values that must come
// back unforged (the newsletter's unsubscribe links) are signed with HMAC
// under keys derived from it.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a key in bytes: AES-256.
const KeySize = 32

// version is the first byte of a sealed value: its format. Version 1 is
// version (1) | key id (4) | nonce (12) | AES-256-GCM ciphertext and tag,
// with the version and key id as additional data.
const version = 1

const (
	keyIDSize  = 4
	nonceSize  = 12
	headerSize = 1 + keyIDSize + nonceSize
)

// Errors of Open. Each says what went wrong without the value.
var (
	// ErrOtherKey: the value was sealed under another key, as after a
	// change of PERCH_SECRET_KEY or of the key file.
	ErrOtherKey = errors.New("secrets: the value was sealed under another key (was PERCH_SECRET_KEY or perch.key changed?)")
	// ErrDamaged: the value is cut short or was altered.
	ErrDamaged = errors.New("secrets: the sealed value is damaged or was altered")
)

// Box seals and opens secrets under one key. It is safe for concurrent use.
type Box struct {
	aead   cipher.AEAD
	id     [keyIDSize]byte
	master []byte // the key given, from which Sign derives its keys
}

// New returns a Box for key, which must be KeySize random bytes.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secrets: a key is %d bytes, not %d", KeySize, len(key))
	}
	// Each use gets a key of its own, derived from the one given, so that
	// the same bytes never serve two algorithms.
	enc := derive(key, "perch secrets: aes-256-gcm", KeySize)
	block, err := aes.NewCipher(enc)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	b := &Box{aead: aead, master: append([]byte(nil), key...)}
	copy(b.id[:], derive(key, "perch secrets: key id", keyIDSize))
	return b, nil
}

func derive(key []byte, info string, n int) []byte {
	out, err := hkdf.Key(sha256.New, key, nil, info, n)
	if err != nil {
		// Only a length beyond 255 hashes fails, and the lengths are fixed.
		panic(err)
	}
	return out
}

// Seal encrypts plaintext under a fresh random nonce. The result names the
// format and the key, so that Open can tell a value sealed under another key
// from a damaged one.
func (b *Box) Seal(plaintext []byte) []byte {
	out := make([]byte, headerSize, headerSize+len(plaintext)+b.aead.Overhead())
	out[0] = version
	copy(out[1:], b.id[:])
	rand.Read(out[1+keyIDSize : headerSize])
	return b.aead.Seal(out, out[1+keyIDSize:headerSize], plaintext, out[:1+keyIDSize])
}

// Open decrypts what Seal made. It returns ErrOtherKey for a value sealed
// under another key, ErrDamaged for one cut short or altered, and an error
// naming the version for a format this version of Perch does not know.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	if len(sealed) < headerSize+b.aead.Overhead() {
		return nil, ErrDamaged
	}
	if sealed[0] != version {
		return nil, fmt.Errorf("secrets: the value is sealed in format %d, which this version of Perch does not read", sealed[0])
	}
	if !hmac.Equal(sealed[1:1+keyIDSize], b.id[:]) {
		return nil, ErrOtherKey
	}
	plain, err := b.aead.Open(nil, sealed[1+keyIDSize:headerSize], sealed[headerSize:], sealed[:1+keyIDSize])
	if err != nil {
		return nil, ErrDamaged
	}
	return plain, nil
}

// Sign returns an HMAC-SHA256 of msg under a key derived for purpose, so
// that a signature made for one purpose is worthless for another.
func (b *Box) Sign(purpose string, msg []byte) []byte {
	mac := hmac.New(sha256.New, derive(b.master, "perch secrets: sign: "+purpose, sha256.Size))
	mac.Write(msg)
	return mac.Sum(nil)
}

// Verify reports whether sig is Sign(purpose, msg), in constant time.
func (b *Box) Verify(purpose string, msg, sig []byte) bool {
	return hmac.Equal(b.Sign(purpose, msg), sig)
}

// ParseKey reads a key as PERCH_SECRET_KEY gives it: KeySize bytes in
// base64 (standard or URL alphabet, padded or not) or in hex. Its errors
// never repeat the value.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*KeySize {
		if key, err := hex.DecodeString(s); err == nil {
			return key, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil && len(key) == KeySize {
			return key, nil
		}
	}
	return nil, fmt.Errorf("want %d random bytes in base64 or hex, e.g. the output of openssl rand -base64 %d", KeySize, KeySize)
}

// NewKey returns KeySize random bytes.
func NewKey() []byte {
	key := make([]byte, KeySize)
	rand.Read(key)
	return key
}

// EncodeKey writes key in the base64 that ParseKey reads.
func EncodeKey(key []byte) string { return base64.StdEncoding.EncodeToString(key) }
