package main

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// runAdmin runs perch admin with args and env, and returns what it printed
// on stdout and stderr, and its error.
func runAdmin(env map[string]string, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	err = run(context.Background(), append([]string{"admin"}, args...), func(k string) string { return env[k] }, nil, &out, &errOut)
	return out.String(), errOut.String(), err
}

// dirIsEmpty fails the test unless dir holds nothing.
func dirIsEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("perch admin left %s in %s", e.Name(), dir)
	}
}

// Not parallel: it moves into a directory of its own, as an operator who
// runs perch admin away from the server's database does.
func TestAdminFindsNoDefaultDatabaseAndMakesNone(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{{"grant", "ada@example.com"}, {"outbox"}} {
		stdout, stderr, err := runAdmin(map[string]string{}, args...)
		if err == nil {
			t.Fatalf("perch admin %v with no database: no error; it printed %q", args, stdout)
		}
		where := filepath.Join(dir, "perch.db")
		if !strings.HasPrefix(stderr, "perch admin: the database is "+where+" (SQLite)\n") {
			t.Errorf("perch admin %v did not name the database first; stderr:\n%s", args, stderr)
		}
		for _, want := range []string{"no database at " + where, "the default: perch.db in the current directory", "makes none",
			"PERCH_DATABASE_URL", "--database-url", "/var/lib/perch/perch.db", "/etc/perch/perch.env", "perch admin " + strings.Join(args, " ")} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("perch admin %v: the error does not say %q:\n%v", args, want, err)
			}
		}
		if stdout != "" {
			t.Errorf("perch admin %v printed %q", args, stdout)
		}
	}
	dirIsEmpty(t, dir)
}

func TestAdminRefusesADatabaseThatIsNotTheServers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "elsewhere.db")
	_, _, err := runAdmin(map[string]string{"PERCH_DATABASE_URL": missing}, "outbox")
	if err == nil || !strings.Contains(err.Error(), "no database at "+missing) || strings.Contains(err.Error(), "the default") {
		t.Fatalf("a missing PERCH_DATABASE_URL: %v", err)
	}
	dirIsEmpty(t, dir)

	// An empty file (what an older perch admin made when run elsewhere)
	// is not the server's either.
	empty := filepath.Join(dir, "perch.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = runAdmin(map[string]string{"PERCH_DATABASE_URL": empty}, "grant", "ada@example.com")
	if err == nil || !strings.Contains(err.Error(), "holds no Perch data") {
		t.Fatalf("an empty SQLite file: %v", err)
	}

	// A PostgreSQL database that does not exist, or holds no Perch schema.
	dsn := storetest.DSN(t, store.Postgres)
	u, _ := url.Parse(dsn)
	u.Path = "/perch_no_such_database"
	_, stderr, err := runAdmin(map[string]string{"PERCH_DATABASE_URL": u.String()}, "outbox")
	if err == nil || !strings.Contains(err.Error(), "perch_no_such_database") {
		t.Fatalf("a missing PostgreSQL database: %v", err)
	}
	if !strings.HasPrefix(stderr, "perch admin: the database is postgres://") {
		t.Errorf("the database is not named first: %q", stderr)
	}
	_, _, err = runAdmin(map[string]string{"PERCH_DATABASE_URL": dsn}, "outbox")
	if err == nil || !strings.Contains(err.Error(), "holds no Perch data") {
		t.Fatalf("an empty PostgreSQL schema: %v", err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, rows := storetest.Rows(t, db, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`); len(rows) != 0 {
		t.Errorf("perch admin made tables in an empty schema: %v", rows)
	}
}

func TestAdminNamesTheDatabaseItOpened(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "perch.db")
	env := map[string]string{"PERCH_DATABASE_URL": db}
	if err := run(context.Background(), []string{"migrate"}, func(k string) string { return env[k] }, nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runAdmin(env, "outbox")
	if err != nil {
		t.Fatal(err)
	}
	if stderr != "perch admin: the database is "+db+" (SQLite)\n" || stdout != "The outbox is empty.\n" {
		t.Fatalf("perch admin outbox printed %q on stderr and %q on stdout", stderr, stdout)
	}
}

func TestDatabaseNameHidesThePassword(t *testing.T) {
	t.Parallel()
	got := databaseName("postgres://perch:s3cret@db.internal:5432/perch?sslmode=require&password=also-secret")
	if strings.Contains(got, "s3cret") || strings.Contains(got, "also-secret") ||
		!regexp.MustCompile(`^postgres://perch:xxxxx@db\.internal:5432/perch\?.*\(PostgreSQL\)$`).MatchString(got) {
		t.Fatalf("databaseName = %q", got)
	}
	if got := databaseName("postgres://perch@db/perch"); got != "postgres://perch@db/perch (PostgreSQL)" {
		t.Fatalf("databaseName without a password = %q", got)
	}
}

func TestHelpOfTheServerCommandsSucceeds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "-h"}, "usage: perch serve [flags]"},
		{[]string{"migrate", "--help"}, "usage: perch migrate [flags]"},
		{[]string{"admin", "-h"}, "perch admin grant EMAIL [flags]"},
		{[]string{"admin", "grant", "-h"}, "perch admin grant EMAIL [flags]"},
		{[]string{"admin", "outbox", "-h"}, "perch admin outbox [flags]"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), c.args, func(string) string { return "" }, nil, &out, &errOut)
		if err != nil || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("perch %v: %v; printed %q", c.args, err, errOut.String())
		}
	}
	// The help of serve lists the settings.
	var errOut bytes.Buffer
	run(context.Background(), []string{"serve", "-h"}, func(string) string { return "" }, nil, io.Discard, &errOut)
	if !strings.Contains(errOut.String(), "PERCH_DATABASE_URL") {
		t.Errorf("perch serve -h does not list the settings:\n%s", errOut.String())
	}
}

// setupLinkLine is the line perch serve logs while no account is a
// platform admin, with the link and its code.
var setupLinkLine = regexp.MustCompile(`level=WARN msg="no account is a platform admin yet[^\n]* link="?http://localhost:8080/setup#code=(pst_[a-z2-7]{52})"? expires=`)

// setupCodes are the codes of the setup links in a server's log.
func setupCodes(logs *syncBuffer) []string {
	var codes []string
	for _, m := range setupLinkLine.FindAllStringSubmatch(logs.String(), -1) {
		codes = append(codes, m[1])
	}
	return codes
}

// TestServeLogsASetupLinkWhileNoAccountIsAdmin starts two instances of a
// cluster with no platform admin: each logs a link of its own, once; the
// first account to redeem one becomes the admin, every other link stops
// working, and the next start logs none.
func TestServeLogsASetupLinkWhileNoAccountIsAdmin(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.Postgres)
	logsA, logsB, logsC := &syncBuffer{}, &syncBuffer{}, &syncBuffer{}
	base := startServerLogging(t, map[string]string{"PERCH_DATABASE_URL": dsn}, logsA)
	startServerLogging(t, map[string]string{"PERCH_DATABASE_URL": dsn}, logsB)
	codesA, codesB := setupCodes(logsA), setupCodes(logsB)
	if len(codesA) != 1 || len(codesB) != 1 || codesA[0] == codesB[0] {
		t.Fatalf("the instances logged the setup codes %v and %v; want one each, different:\n%s\n%s", codesA, codesB, logsA.String(), logsB.String())
	}

	_, reg := call(t, "POST", base+"/api/v1/auth/register", "", map[string]string{"name": "Ada", "email": "ada@example.com", "password": "correct horse battery"})
	access := reg["data"].(map[string]any)["access_token"].(string)
	status, body := call(t, "POST", base+"/api/v1/setup/admin", access, map[string]string{"code": codesB[0]})
	if status != 200 || body["data"].(map[string]any)["is_admin"] != true {
		t.Fatalf("redeeming the second instance's link: %d %v", status, body)
	}
	if status, body := call(t, "POST", base+"/api/v1/setup/admin", access, map[string]string{"code": codesA[0]}); status != 403 {
		t.Fatalf("the first instance's link after an admin was made: %d %v", status, body)
	}
	startServerLogging(t, map[string]string{"PERCH_DATABASE_URL": dsn}, logsC)
	if strings.Contains(logsC.String(), "/setup#code=") {
		t.Fatalf("a start with an admin logged a setup link:\n%s", logsC.String())
	}
}
