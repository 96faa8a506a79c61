package creds

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestSignInsPerServerWithADefault(t *testing.T) {
	t.Parallel()
	s, _ := Open(t.TempDir())
	if _, err := s.Get(""); !errors.Is(err, ErrNotSignedIn) {
		t.Fatalf("Get on an empty store: %v", err)
	}
	a := &SignIn{Server: "https://perch.example.com", Email: "ada@example.com", AccessToken: "pac_a", RefreshToken: "prf_a"}
	b := &SignIn{Server: "https://eu.perch.example.com", APIToken: "pat_b"}
	for _, si := range []*SignIn{a, b} {
		if err := s.Put(si); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.Get(""); got.Server != b.Server || got.APIToken != "pat_b" {
		t.Fatalf("default = %+v, want the last sign-in", got)
	}
	if got, _ := s.Get(a.Server); got.RefreshToken != "prf_a" || got.Email != a.Email {
		t.Fatalf("Get(%s) = %+v", a.Server, got)
	}
	info, err := os.Stat(filepath.Join(s.Dir(), "credentials.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("credentials.json mode %v, %v; want 0600", info.Mode().Perm(), err)
	}
	if gone, err := s.Remove(""); err != nil || gone.Server != b.Server {
		t.Fatalf("Remove default = %+v, %v", gone, err)
	}
	if got, _ := s.Get(""); got.Server != a.Server {
		t.Fatalf("after removing the default, default = %+v", got)
	}
	if _, err := s.Remove(b.Server); !errors.Is(err, ErrNotSignedIn) {
		t.Fatalf("removing twice: %v", err)
	}
}

func TestNormalizeServer(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://perch.example.com/": "https://perch.example.com",
		" http://127.0.0.1:8080 ":    "http://127.0.0.1:8080",
		"https://example.com/perch/": "https://example.com/perch",
	} {
		if got, err := NormalizeServer(in); err != nil || got != want {
			t.Errorf("NormalizeServer(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "perch.example.com", "ftp://x", "https://", "https://x/?a=1"} {
		if _, err := NormalizeServer(bad); err == nil {
			t.Errorf("NormalizeServer(%q) accepted", bad)
		}
	}
}

// Two processes holding the same spent pair renew once: the second adopts
// what the first stored instead of spending the rotated refresh token again.
func TestRenewalsAreSharedAcrossProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	one, _ := Open(dir)
	two, _ := Open(dir)
	server := "https://perch.example.com"
	one.Put(&SignIn{Server: server, AccessToken: "pac_0", RefreshToken: "prf_0"})
	var mu sync.Mutex
	spent := map[string]int{}
	refresh := func(_ context.Context, used string) (string, string, error) {
		mu.Lock()
		defer mu.Unlock()
		spent[used]++
		n := len(spent)
		return "pac_" + string(rune('0'+n)), "prf_" + string(rune('0'+n)), nil
	}
	var wg sync.WaitGroup
	got := make([][2]string, 2)
	for i, s := range []*Store{one, two} {
		wg.Go(func() {
			a, r, err := s.renewer(server)(context.Background(), "prf_0", refresh)
			if err != nil {
				t.Error(err)
			}
			got[i] = [2]string{a, r}
		})
	}
	wg.Wait()
	if len(spent) != 1 || spent["prf_0"] != 1 {
		t.Fatalf("refresh tokens spent %v; want prf_0 once", spent)
	}
	if got[0] != got[1] || got[0] != [2]string{"pac_1", "prf_1"} {
		t.Fatalf("pairs %v; want both pac_1/prf_1", got)
	}
	if si, _ := one.Get(server); si.RefreshToken != "prf_1" {
		t.Fatalf("stored %+v", si)
	}
}

func TestLastIDPerServerAndConsumer(t *testing.T) {
	t.Parallel()
	s, _ := Open(t.TempDir())
	if id := s.LastID("https://a", "listen"); id != "" {
		t.Fatalf("fresh LastID = %q", id)
	}
	s.SetLastID("https://a", "listen", "42")
	s.SetLastID("https://a", "tray", "7")
	s.SetLastID("https://b", "listen", "9")
	if s.LastID("https://a", "listen") != "42" || s.LastID("https://a", "tray") != "7" || s.LastID("https://b", "listen") != "9" {
		t.Fatal("resume points are mixed up")
	}
}

// TestVersionTellsEveryChange: a sign-in stored or removed by any process
// is a new version of the file; reading it, or a lock, is not.
func TestVersionTellsEveryChange(t *testing.T) {
	t.Parallel()
	s, _ := Open(t.TempDir())
	none := s.Version()
	if !none.Same(s.Version()) {
		t.Fatal("no file: two versions differ")
	}
	si := &SignIn{Server: "https://perch.example.com", AccessToken: "pac_a", RefreshToken: "prf_a"}
	if err := s.Put(si); err != nil {
		t.Fatal(err)
	}
	first := s.Version()
	if first.Same(none) {
		t.Fatal("storing a sign-in left the version as it was")
	}
	if _, err := s.Get(si.Server); err != nil || !first.Same(s.Version()) {
		t.Fatalf("reading changed the version (%v)", err)
	}
	// The same size, at once: still another version.
	if err := s.Put(&SignIn{Server: si.Server, AccessToken: "pac_b", RefreshToken: "prf_b"}); err != nil {
		t.Fatal(err)
	}
	second := s.Version()
	if second.Same(first) {
		t.Fatal("a sign-in stored again, as long as the last, left the version as it was")
	}
	if _, err := s.Remove(si.Server); err != nil {
		t.Fatal(err)
	}
	if s.Version().Same(second) {
		t.Fatal("signing out left the version as it was")
	}
}
