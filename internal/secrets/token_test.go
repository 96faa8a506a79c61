package secrets

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
)

func TestSealWithTokenOpensBackWithTheSameTokenOnly(t *testing.T) {
	t.Parallel()
	state := rand.Text()
	plain := []byte("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
	sealed := SealWithToken(state, "oauth verifier", plain)
	if bytes.Contains(sealed, plain) || bytes.Contains(sealed, []byte(state)) {
		t.Fatalf("the sealed value holds the plaintext or the token: %q", sealed)
	}
	if sealed[0] != tokenVersion {
		t.Errorf("format byte = %d, want %d", sealed[0], tokenVersion)
	}
	got, err := OpenWithToken(state, "oauth verifier", sealed)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("OpenWithToken = %q, %v; want %q", got, err, plain)
	}
	if again := SealWithToken(state, "oauth verifier", plain); bytes.Equal(again, sealed) {
		t.Error("sealing the same value twice gave the same bytes")
	}

	// Neither another token, nor the token's lookup hash (what the database
	// holds), nor the same token for another purpose opens it.
	sum := sha256.Sum256([]byte(state))
	for name, open := range map[string]func() ([]byte, error){
		"another token":    func() ([]byte, error) { return OpenWithToken(rand.Text(), "oauth verifier", sealed) },
		"the token's hash": func() ([]byte, error) { return OpenWithToken(hex.EncodeToString(sum[:]), "oauth verifier", sealed) },
		"another purpose":  func() ([]byte, error) { return OpenWithToken(state, "oauth nonce", sealed) },
	} {
		if got, err := open(); !errors.Is(err, ErrDamaged) {
			t.Errorf("%s: OpenWithToken = %q, %v; want ErrDamaged", name, got, err)
		}
	}
}

func TestOpenWithTokenRefusesAlteredValues(t *testing.T) {
	t.Parallel()
	state := rand.Text()
	sealed := SealWithToken(state, "p", []byte("a nonce"))
	for i := 1; i < len(sealed); i++ {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x01
		if _, err := OpenWithToken(state, "p", bad); !errors.Is(err, ErrDamaged) {
			t.Fatalf("byte %d flipped: OpenWithToken = %v, want ErrDamaged", i, err)
		}
	}
	for _, n := range []int{0, 1, 1 + nonceSize, len(sealed) - 1} {
		if _, err := OpenWithToken(state, "p", sealed[:n]); !errors.Is(err, ErrDamaged) {
			t.Errorf("cut to %d bytes: OpenWithToken = %v, want ErrDamaged", n, err)
		}
	}
	other := bytes.Clone(sealed)
	other[0] = 9
	if _, err := OpenWithToken(state, "p", other); err == nil || errors.Is(err, ErrDamaged) {
		t.Errorf("an unknown format: OpenWithToken = %v, want an error naming the format", err)
	}
}
