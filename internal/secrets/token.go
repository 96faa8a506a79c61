package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
)

// Sealing under a bearer value. Some secrets belong to one random value
// that the database keeps only as a hash and that the caller holds in the
// clear when it needs them: an OAuth flow's PKCE verifier and nonce belong
// to its state, which only the browser's cookie and the provider's redirect
// carry. Such a secret is sealed under a key derived from that value, not
// under the server's key: the database, alone or with the server's key,
// cannot open it, and no server key is needed to make it (sign-in works on
// a PostgreSQL server without PERCH_SECRET_KEY).
//
// The key is HKDF-SHA256 of the value with an info string naming the
// purpose, so it has nothing in common with the value's lookup hash (a bare
// SHA-256) and a value sealed for one purpose cannot be opened as another.
// The value must be random and long enough to resist guessing (128 bits or
// more): whoever reads the database could try guesses against its hash.

// tokenVersion is the first byte of a value sealed under a token: its
// format. Version 1 is version (1) | nonce (12) | AES-256-GCM ciphertext and
// tag, with the version as additional data.
const tokenVersion = 1

// SealWithToken encrypts plaintext under a key derived from token for
// purpose, with a fresh random nonce.
func SealWithToken(token, purpose string, plaintext []byte) []byte {
	aead := tokenAEAD(token, purpose)
	out := make([]byte, 1+nonceSize, 1+nonceSize+len(plaintext)+aead.Overhead())
	out[0] = tokenVersion
	rand.Read(out[1:])
	return aead.Seal(out, out[1:], plaintext, out[:1])
}

// OpenWithToken decrypts what SealWithToken made with the same token and
// purpose. Another token or purpose, and a value cut short or altered, are
// all ErrDamaged: without the right key they cannot be told apart.
func OpenWithToken(token, purpose string, sealed []byte) ([]byte, error) {
	aead := tokenAEAD(token, purpose)
	if len(sealed) < 1+nonceSize+aead.Overhead() {
		return nil, ErrDamaged
	}
	if sealed[0] != tokenVersion {
		return nil, fmt.Errorf("secrets: the value is sealed in format %d, which this version of Perch does not read", sealed[0])
	}
	plain, err := aead.Open(nil, sealed[1:1+nonceSize], sealed[1+nonceSize:], sealed[:1])
	if err != nil {
		return nil, ErrDamaged
	}
	return plain, nil
}

func tokenAEAD(token, purpose string) cipher.AEAD {
	block, err := aes.NewCipher(derive([]byte(token), "perch secrets: sealed under a token: "+purpose, KeySize))
	if err != nil {
		panic(err) // the key is KeySize bytes, which AES takes
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err) // AES has GCM's block size
	}
	return aead
}
