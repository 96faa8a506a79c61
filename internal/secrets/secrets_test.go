package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func mustBox(t *testing.T, key []byte) *Box {
	t.Helper()
	b, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSealOpensBack(t *testing.T) {
	t.Parallel()
	b := mustBox(t, NewKey())
	for _, plain := range [][]byte{nil, []byte("x"), []byte("hunter2 correct horse"), bytes.Repeat([]byte{0}, 4096)} {
		sealed := b.Seal(plain)
		if len(plain) >= 8 && bytes.Contains(sealed, plain) { // a short one may turn up by chance
			t.Errorf("the sealed value holds the plaintext %q", plain)
		}
		got, err := b.Open(sealed)
		if err != nil {
			t.Fatalf("Open(Seal(%q)): %v", plain, err)
		}
		if !bytes.Equal(got, plain) {
			t.Errorf("Open(Seal(%q)) = %q", plain, got)
		}
	}
}

func TestSealUsesAFreshNonceEachTime(t *testing.T) {
	t.Parallel()
	b := mustBox(t, NewKey())
	one, two := b.Seal([]byte("same")), b.Seal([]byte("same"))
	if bytes.Equal(one, two) {
		t.Fatal("sealing the same value twice gave the same bytes")
	}
	if one[0] != version {
		t.Errorf("format byte = %d, want %d", one[0], version)
	}
}

func TestOpenRefusesAlteredValues(t *testing.T) {
	t.Parallel()
	b := mustBox(t, NewKey())
	sealed := b.Seal([]byte("the SMTP password"))
	// Every byte after the version and key id, flipped in turn: the nonce,
	// the ciphertext and the tag are all authenticated.
	for i := 1 + keyIDSize; i < len(sealed); i++ {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x01
		if _, err := b.Open(bad); !errors.Is(err, ErrDamaged) {
			t.Fatalf("byte %d flipped: Open = %v, want ErrDamaged", i, err)
		}
	}
	for _, n := range []int{0, 1, headerSize, len(sealed) - 1} {
		if _, err := b.Open(sealed[:n]); !errors.Is(err, ErrDamaged) {
			t.Errorf("cut to %d bytes: Open = %v, want ErrDamaged", n, err)
		}
	}
	if _, err := b.Open(append(bytes.Clone(sealed), 0)); !errors.Is(err, ErrDamaged) {
		t.Errorf("a byte appended: Open = %v, want ErrDamaged", err)
	}
}

func TestOpenUnderAnotherKeyFailsClearly(t *testing.T) {
	t.Parallel()
	sealed := mustBox(t, NewKey()).Seal([]byte("secret"))
	_, err := mustBox(t, NewKey()).Open(sealed)
	if !errors.Is(err, ErrOtherKey) {
		t.Fatalf("Open under another key = %v, want ErrOtherKey", err)
	}
	if !strings.Contains(err.Error(), "PERCH_SECRET_KEY") {
		t.Errorf("the error %q does not say which setting to look at", err)
	}
	// A key id copied from the right key does not help: GCM still refuses.
	key := NewKey()
	other := mustBox(t, NewKey()).Seal([]byte("secret"))
	copy(other[1:], mustBox(t, key).id[:])
	if _, err := mustBox(t, key).Open(other); !errors.Is(err, ErrDamaged) {
		t.Errorf("a forged key id: Open = %v, want ErrDamaged", err)
	}
}

func TestOpenNamesAnUnknownFormat(t *testing.T) {
	t.Parallel()
	b := mustBox(t, NewKey())
	sealed := b.Seal([]byte("secret"))
	sealed[0] = 9
	if _, err := b.Open(sealed); err == nil || !strings.Contains(err.Error(), "format 9") {
		t.Errorf("Open of format 9 = %v, want an error naming the format", err)
	}
}

func TestNewRefusesKeysOfTheWrongSize(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := New(make([]byte, n)); err == nil {
			t.Errorf("New with a %d-byte key succeeded", n)
		}
	}
}

func TestSignAndVerify(t *testing.T) {
	t.Parallel()
	key := NewKey()
	b := mustBox(t, key)
	sig := b.Sign("unsubscribe", []byte("user-1"))
	if !b.Verify("unsubscribe", []byte("user-1"), sig) {
		t.Fatal("a signature does not verify")
	}
	if !mustBox(t, key).Verify("unsubscribe", []byte("user-1"), sig) {
		t.Error("a signature does not verify with another Box of the same key")
	}
	for name, ok := range map[string]bool{
		"another message": b.Verify("unsubscribe", []byte("user-2"), sig),
		"another purpose": b.Verify("reset", []byte("user-1"), sig),
		"another key":     mustBox(t, NewKey()).Verify("unsubscribe", []byte("user-1"), sig),
		"cut short":       b.Verify("unsubscribe", []byte("user-1"), sig[:16]),
	} {
		if ok {
			t.Errorf("%s: the signature verified", name)
		}
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	key := NewKey()
	for _, s := range []string{
		base64.StdEncoding.EncodeToString(key),
		base64.RawStdEncoding.EncodeToString(key),
		base64.URLEncoding.EncodeToString(key),
		base64.RawURLEncoding.EncodeToString(key),
		hex.EncodeToString(key),
		"  " + EncodeKey(key) + "\n",
	} {
		got, err := ParseKey(s)
		if err != nil || !bytes.Equal(got, key) {
			t.Errorf("ParseKey(%q) = %x, %v; want the key", s, got, err)
		}
	}
	secretish := "not-a-key-but-secret-text"
	for _, s := range []string{"", secretish, base64.StdEncoding.EncodeToString(key[:16]), hex.EncodeToString(key[:31]), strings.Repeat("z", 64)} {
		_, err := ParseKey(s)
		if err == nil {
			t.Errorf("ParseKey(%q) succeeded", s)
			continue
		}
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("the error %q repeats the value", err)
		}
	}
}

func TestKeyFileIsMadeOnceAndReused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), KeyFileName)
	key, created, err := LoadOrCreateKeyFile(path)
	if err != nil || !created || len(key) != KeySize {
		t.Fatalf("first call: %d bytes, created %v, %v", len(key), created, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("the key file's mode is %o, want 600", perm)
	}
	again, created, err := LoadOrCreateKeyFile(path)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Fatalf("second call: created %v, same key %v, %v", created, bytes.Equal(again, key), err)
	}
	// Nothing is left behind but the key file.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want the key file alone", len(entries))
	}
}

func TestKeyFileMadeConcurrentlyIsOneKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), KeyFileName)
	const n = 8
	keys := make([][]byte, n)
	made := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var err error
			if keys[i], made[i], err = LoadOrCreateKeyFile(path); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	creators := 0
	for i := range n {
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("call %d read another key", i)
		}
		if made[i] {
			creators++
		}
	}
	if creators != 1 {
		t.Errorf("%d calls say they made the file, want 1", creators)
	}
}

func TestKeyFileThatHoldsNoKeyIsAnError(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), KeyFileName)
	if err := os.WriteFile(path, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := LoadOrCreateKeyFile(path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("LoadOrCreateKeyFile of a bad file = %v, want an error naming it", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "garbage\n" {
		t.Error("the bad key file was overwritten")
	}
}
