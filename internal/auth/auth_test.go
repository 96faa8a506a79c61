package auth

import (
	"strings"
	"testing"

	"github.com/perch-dev/perch"
)

var fast = Params{Memory: 64, Time: 1, Threads: 1}

func TestPasswordRoundTrip(t *testing.T) {
	t.Parallel()
	h := HashPassword("correct horse battery", fast)
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hash = %q", h)
	}
	if !CheckPassword(h, "correct horse battery") {
		t.Fatal("the right password was refused")
	}
	if CheckPassword(h, "correct horse batterY") {
		t.Fatal("a wrong password was accepted")
	}
	if h2 := HashPassword("correct horse battery", fast); h2 == h {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
}

func TestCheckPasswordRefusesMalformedHashes(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"", "plain", "$argon2i$v=19$m=64,t=1,p=1$c2FsdA$a2V5", "$argon2id$v=19$m=0,t=1,p=1$c2FsdA$a2V5",
		"$argon2id$v=19$m=64,t=1,p=1$!!$a2V5", "$argon2id$v=18$m=64,t=1,p=1$c2FsdA$a2V5", "$argon2id$v=19$m=99999999,t=1,p=1$c2FsdA$a2V5"} {
		if CheckPassword(h, "anything") {
			t.Errorf("CheckPassword(%q) = true", h)
		}
	}
	if CheckMissing("anything") {
		t.Error("CheckMissing = true")
	}
}

func TestNewToken(t *testing.T) {
	t.Parallel()
	raw, hash := NewToken("pat_")
	if !strings.HasPrefix(raw, "pat_") || len(raw) != 4+52 {
		t.Fatalf("raw = %q (%d)", raw, len(raw))
	}
	if hash != HashToken(raw) || len(hash) != 64 {
		t.Fatalf("hash = %q", hash)
	}
	if other, _ := NewToken("pat_"); other == raw {
		t.Fatal("two tokens are equal")
	}
	if p := DisplayPrefix(raw); p != raw[:12] {
		t.Fatalf("DisplayPrefix = %q", p)
	}
	if p := DisplayPrefix("short"); p != "short" {
		t.Fatalf("DisplayPrefix(short) = %q", p)
	}
}

func TestNewUserCode(t *testing.T) {
	t.Parallel()
	seen := map[byte]bool{}
	for range 200 {
		code, hash := NewUserCode()
		if norm, ok := perch.NormalizeUserCode(code); !ok || norm != code {
			t.Fatalf("NewUserCode = %q, not a normalized user code", code)
		}
		if hash != perch.HashUserCode(code) {
			t.Fatalf("hash of %q = %q", code, hash)
		}
		for i := range len(code) {
			seen[code[i]] = true
		}
	}
	// 1,600 letters drawn from 20: every one turns up (a letter missing by
	// chance: 20 × (19/20)^1600, about 10^-34).
	if len(seen) != len(perch.UserCodeAlphabet) {
		t.Fatalf("letters seen: %d of %d", len(seen), len(perch.UserCodeAlphabet))
	}
}

func TestDummyHashUsesDefaultParams(t *testing.T) {
	t.Parallel()
	p, _, _, err := decodeHash(dummyHash)
	if err != nil || p != DefaultParams {
		t.Fatalf("dummyHash params = %+v, %v; want %+v: regenerate it with HashPassword(..., DefaultParams)", p, err, DefaultParams)
	}
}
