package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/mail/mailtest"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func TestSecretKeySetting(t *testing.T) {
	t.Parallel()
	const bad = "not-a-key-but-a-secret-value"
	_, err := parseConfig("serve", nil, func(k string) string { return map[string]string{"PERCH_SECRET_KEY": bad}[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "PERCH_SECRET_KEY") || !strings.Contains(err.Error(), "base64") {
		t.Fatalf("a malformed key: %v", err)
	}
	if strings.Contains(err.Error(), bad) {
		t.Errorf("the error repeats the key: %v", err)
	}
	key := secrets.NewKey()
	c, err := parseConfig("serve", nil, func(k string) string {
		return map[string]string{"PERCH_SECRET_KEY": secrets.EncodeKey(key)}[k]
	}, io.Discard)
	if err != nil || !bytes.Equal(c.SecretKey, key) {
		t.Fatalf("a good key: %x, %v", c.SecretKey, err)
	}
}

func TestSQLiteKeepsAKeyFileBesideTheDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "perch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	first, err := openSecrets(&config{}, st, logger)
	if err != nil || first == nil {
		t.Fatalf("first start: %v, %v", first, err)
	}
	info, err := os.Stat(filepath.Join(dir, secrets.KeyFileName))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v, %v", info, err)
	}
	again, err := openSecrets(&config{}, st, logger)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := again.Open(first.Seal([]byte("pw"))); err != nil || string(plain) != "pw" {
		t.Fatalf("the second start reads another key: %q, %v", plain, err)
	}
	// A key given wins, and no file is needed for it.
	key := secrets.NewKey()
	given, err := openSecrets(&config{SecretKey: key}, st, logger)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := given.Open(first.Seal([]byte("pw"))); err == nil {
		t.Error("the given key opens what the file's key sealed")
	}
}

func TestPostgresWithoutAKeyHasNone(t *testing.T) {
	t.Parallel()
	st := storetest.New(t, store.Postgres)
	box, err := openSecrets(&config{}, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || box != nil {
		t.Fatalf("PostgreSQL without PERCH_SECRET_KEY: %v, %v; want no key", box, err)
	}
}

// The e-mail settings an admin stores win over PERCH_SMTP_URL for the very
// next message, in the server as serve builds it.
func TestStoredEmailSettingsWinOverTheEnvironment(t *testing.T) {
	t.Parallel()
	first, second := mailtest.Start(t), mailtest.Start(t)
	base := startServer(t, map[string]string{"PERCH_SMTP_URL": first.URL(), "PERCH_MAIL_FROM": "Perch <perch@example.com>",
		"PERCH_BASE_URL": "https://perch.example.com", "PERCH_ADMIN_EMAILS": "root@example.com"})
	_, body := call(t, "POST", base+"/api/v1/auth/register", "", map[string]string{"name": "Root", "email": "root@example.com", "password": "correct horse battery"})
	access := body["data"].(map[string]any)["access_token"].(string)
	token, _ := strings.CutPrefix(first.WaitFor(t, "root@example.com").Link(), "https://perch.example.com/verify-email?token=")
	if status, _ := call(t, "POST", base+"/api/v1/auth/verify-email", "", map[string]string{"token": token}); status != 200 {
		t.Fatalf("verify: %d", status)
	}
	u, _ := url.Parse(second.URL())
	port, _ := strconv.Atoi(u.Port())
	status, body := call(t, "PUT", base+"/api/v1/admin/email-config", access,
		map[string]any{"host": "127.0.0.1", "port": port, "from": "ops@example.com", "tls": "none"})
	if status != 200 || body["data"].(map[string]any)["source"] != "database" {
		t.Fatalf("PUT email-config: %d %v", status, body)
	}
	call(t, "POST", base+"/api/v1/auth/register", "", map[string]string{"name": "Ada", "email": "ada@example.com", "password": "correct horse battery"})
	if m := second.WaitFor(t, "ada@example.com"); m.From != "ops@example.com" {
		t.Errorf("the next message came from %q", m.From)
	}
	if n := first.Count("ada@example.com"); n != 0 {
		t.Errorf("the environment's server got %d messages after the change", n)
	}
}

// TestServeWarnsOfADatabaseOthersCanRead: the server leaves an existing
// SQLite file's mode alone, but says so when every user of the machine
// can read it; a database it made itself (0600) draws no warning.
func TestServeWarnsOfADatabaseOthersCanRead(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no Unix file modes")
	}
	for _, tc := range []struct {
		name string
		mode os.FileMode // 0: the server makes the file
		warn bool
	}{
		{"made by the server", 0, false},
		{"group-readable, as an operator may choose", 0o640, false},
		{"world-readable, as older versions made it", 0o644, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "perch.db")
			if tc.mode != 0 {
				if err := os.WriteFile(path, nil, tc.mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			st, err := openStore(context.Background(), &config{DatabaseURL: path}, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			st.Close()
			if warned := strings.Contains(logs.String(), "open to every user of this machine"); warned != tc.warn {
				t.Fatalf("warned %v, want %v: %s", warned, tc.warn, logs.String())
			}
		})
	}
}
