package main

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// registerAndWaitForMail registers Ada on the server at base and waits
// until her verification mail is kept in the outbox of the database at dsn.
func registerAndWaitForMail(t *testing.T, base, dsn string) {
	t.Helper()
	call(t, "POST", base+"/api/v1/auth/register", "", map[string]string{"name": "Ada", "email": "ada@example.com", "password": "correct horse battery"})
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eventually(t, "Ada's mail in the outbox", func() bool {
		kept, err := st.Outbox(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(kept) == 1 && kept[0].To == "ada@example.com"
	})
}

// adminOutbox runs perch admin outbox with env and returns what it printed.
func adminOutbox(t *testing.T, env map[string]string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"admin", "outbox"}, func(k string) string { return env[k] }, nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// verifyLink is the verification link perch admin outbox prints, and its
// token.
var verifyLink = regexp.MustCompile(`Link: http://localhost:8080/verify-email\?token=(pem_\S+)`)

// outboxAtRest fails the test if the outbox table of the database at dsn
// holds token, or any verification token, in the clear.
func outboxAtRest(t *testing.T, driver, dsn, token string) {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows := storetest.Table(t, db, "mail_outbox")
	if !strings.Contains(rows, "ada@example.com") {
		t.Fatalf("the outbox does not hold Ada's mail:\n%s", rows)
	}
	if strings.Contains(rows, "pem_") || (token != "" && strings.Contains(rows, token)) {
		t.Fatalf("the outbox holds the verification link in the clear:\n%s", rows)
	}
}

// TestMailWithoutSMTPIsKeptInTheOutbox checks the default: no mail server,
// the message is kept in the database with its link sealed under the key
// file made beside it, the log says one is waiting but not its link (a
// credential), and perch admin outbox, with that key, shows it to the
// operator.
func TestMailWithoutSMTPIsKeptInTheOutbox(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "perch.db")
	logs := &syncBuffer{}
	base := startServerLogging(t, map[string]string{"PERCH_DATABASE_URL": db}, logs)
	registerAndWaitForMail(t, base, db)

	out := adminOutbox(t, map[string]string{"PERCH_DATABASE_URL": db})
	m := verifyLink.FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "To: ada@example.com") {
		t.Fatalf("perch admin outbox printed:\n%s", out)
	}
	outboxAtRest(t, "sqlite", db, m[1])
	// The link works: it is the one the server made.
	if status, body := call(t, "POST", base+"/api/v1/auth/verify-email", "", map[string]string{"token": m[1]}); status != 200 {
		t.Fatalf("verify with the link from the outbox: %d %v", status, body)
	}
	// The send is logged once it is kept; the log never has the link.
	logs.waitFor(t, "mail waiting in the outbox")
	if strings.Contains(logs.String(), "pem_") {
		t.Fatalf("the log carries the verification link:\n%s", logs.String())
	}
}

// On PostgreSQL the outbox is sealed under PERCH_SECRET_KEY, which perch
// admin outbox needs as well: without it, it says so and shows no link.
func TestOutboxOnPostgresIsSealedUnderTheSecretKey(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.Postgres)
	key := secrets.EncodeKey(secrets.NewKey())
	env := map[string]string{"PERCH_DATABASE_URL": dsn, "PERCH_SECRET_KEY": key}
	base := startServer(t, map[string]string{"PERCH_DATABASE_URL": dsn, "PERCH_SECRET_KEY": key})
	registerAndWaitForMail(t, base, dsn)

	out := adminOutbox(t, env)
	m := verifyLink.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("perch admin outbox printed:\n%s", out)
	}
	outboxAtRest(t, "pgx", dsn, m[1])
	out = adminOutbox(t, map[string]string{"PERCH_DATABASE_URL": dsn})
	if strings.Contains(out, "pem_") || !strings.Contains(out, "To: ada@example.com") || !strings.Contains(out, "PERCH_SECRET_KEY") {
		t.Fatalf("without the key, perch admin outbox printed:\n%s", out)
	}
}

// On PostgreSQL without PERCH_SECRET_KEY there is no key to seal with: the
// outbox keeps who the mail is for and what about, never its link, and
// both the log and perch admin outbox name the setting that would keep it.
func TestOutboxOnPostgresWithoutAKeyWithholdsTheLink(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.Postgres)
	logs := &syncBuffer{}
	base := startServerLogging(t, map[string]string{"PERCH_DATABASE_URL": dsn}, logs)
	registerAndWaitForMail(t, base, dsn)

	outboxAtRest(t, "pgx", dsn, "")
	out := adminOutbox(t, map[string]string{"PERCH_DATABASE_URL": dsn})
	if strings.Contains(out, "pem_") || !strings.Contains(out, "To: ada@example.com") ||
		!strings.Contains(out, "Link: (cannot be shown: kept without its link") || !strings.Contains(out, "PERCH_SECRET_KEY") {
		t.Fatalf("perch admin outbox printed:\n%s", out)
	}
	logs.waitFor(t, "mail waiting in the outbox without its link.*PERCH_SECRET_KEY")
	if strings.Contains(logs.String(), "pem_") {
		t.Fatalf("the log carries the verification link:\n%s", logs.String())
	}
}
