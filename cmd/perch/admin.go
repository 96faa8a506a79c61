package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/store"
)

const adminUsage = `usage:
  perch admin grant EMAIL [flags]   make an account a platform admin
  perch admin outbox [flags]        print the mail waiting in the outbox (no SMTP server), newest first

perch admin works on the server's database, found as perch serve finds it:
PERCH_DATABASE_URL or --database-url (default: perch.db in the current
directory). It names it first, on stderr, and never makes one. Its flags
are perch serve's (perch serve -h lists them).
`

// isHelp reports whether arg asks for help, as the flag package reads it.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--h", "--help":
		return true
	}
	return false
}

// admin runs operator commands against the server's database: `perch
// admin grant EMAIL` and `perch admin outbox`.
func admin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if slices.ContainsFunc(args, isHelp) {
		fmt.Fprint(stderr, adminUsage)
		return errHelp
	}
	var flags []string
	name := "admin outbox"
	switch {
	case len(args) >= 2 && args[0] == "grant" && !strings.HasPrefix(args[1], "-"):
		flags, name = args[2:], "admin grant EMAIL"
	case len(args) >= 1 && args[0] == "outbox":
		flags = args[1:]
	default:
		fmt.Fprint(stderr, adminUsage)
		return errUsage
	}
	c, err := parseConfig(name, flags, getenv, stderr)
	if err != nil {
		return err
	}
	st, err := openServersDatabase(ctx, c, "perch admin "+strings.Join(args, " "), stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	if args[0] == "outbox" {
		return printOutbox(ctx, c, st, stdout)
	}
	return grant(ctx, st, args[1], stdout)
}

// openServersDatabase opens, for an operator's command (cmd, as the
// operator typed it), the database perch serve would: it names it on
// stderr before anything else, and never makes one: a SQLite file must
// exist, and either database must hold Perch's schema, which it then
// brings up to date as serve would.
func openServersDatabase(ctx context.Context, c *config, cmd string, stderr io.Writer) (*store.Store, error) {
	name := databaseName(c.DatabaseURL)
	fmt.Fprintf(stderr, "perch admin: the database is %s\n", name)
	if path := store.SQLitePath(c.DatabaseURL); path != "" {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, missingDatabase(c.DatabaseURL, name, cmd)
		} else if err != nil {
			return nil, err
		}
	}
	st, err := store.Open(ctx, c.DatabaseURL, store.WithSQLiteSync(c.SQLiteSync))
	if err != nil {
		return nil, fmt.Errorf("open the database %s: %w", name, err)
	}
	ok, err := st.Migrated(ctx)
	if err == nil && !ok {
		err = fmt.Errorf("the database %s holds no Perch data, so it is not the server's (perch serve and perch migrate make Perch's); "+
			"point perch admin at the database perch serve uses, with PERCH_DATABASE_URL or --database-url", name)
	}
	if err == nil {
		err = st.Migrate(ctx, newLogger(c, stderr))
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// databaseName is the database of dsn as the operator should read it: a
// SQLite file's absolute path, or a PostgreSQL URL with its password
// hidden (in the address or in a password parameter).
func databaseName(dsn string) string {
	path := store.SQLitePath(dsn)
	if path == "" {
		u, err := url.Parse(dsn)
		if err != nil {
			return "(a PostgreSQL URL that does not parse)"
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted() + " (PostgreSQL)"
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path + " (SQLite)"
}

// missingDatabase says where perch admin looked for the SQLite database
// named, and how to point it at the server's.
func missingDatabase(dsn, name, cmd string) error {
	why := ""
	if dsn == defaultDatabaseURL {
		why = " (the default: perch.db in the current directory)"
	}
	return fmt.Errorf("there is no database at %s%s, and perch admin makes none: it works on the server's.\n"+
		"Point it at the database perch serve uses with PERCH_DATABASE_URL or --database-url (a SQLite file or a postgres:// URL), e.g.\n"+
		"  PERCH_DATABASE_URL=/path/to/perch.db %s\n"+
		"With the .deb package the database is /var/lib/perch/perch.db and the server's settings are in /etc/perch/perch.env; as the perch user:\n"+
		"  sudo -u perch env PERCH_DATABASE_URL=/var/lib/perch/perch.db %s",
		strings.TrimSuffix(name, " (SQLite)"), why, cmd, cmd)
}

// grant makes the account with the address email a platform admin, and
// audits it.
func grant(ctx context.Context, st *store.Store, email string, stdout io.Writer) error {
	u, _, err := st.UserCredentials(ctx, email)
	if err != nil {
		return fmt.Errorf("grant %s: %w", email, err)
	}
	if u.IsAdmin {
		fmt.Fprintf(stdout, "%s is a platform admin already\n", email)
		return nil
	}
	if err := st.GrantAdmin(ctx, email); err != nil {
		return fmt.Errorf("grant %s: %w", email, err)
	}
	entry := &perch.AuditEntry{Action: perch.AuditAdminGranted, Actor: perch.AuditActor{Type: perch.ActorSystem, ID: "perch admin grant"},
		Target: perch.AuditTarget{Type: "user", ID: u.ID}, OrgID: u.OrgID, Changes: map[string]any{"via": "perch admin grant", "email": u.Email}}
	if err := st.AppendAudit(ctx, entry); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	fmt.Fprintf(stdout, "%s is now a platform admin\n", email)
	return nil
}

// outboxShown is how many kept messages perch admin outbox prints.
const outboxShown = 20

// printOutbox prints the mail waiting in the outbox, its links opened with
// the key the server seals them with. A link that cannot be opened is
// printed as the reason, never as the sealed value.
func printOutbox(ctx context.Context, c *config, st *store.Store, stdout io.Writer) error {
	box, err := readSecrets(c, st)
	if err != nil {
		return err
	}
	kept, err := st.Outbox(ctx, outboxShown)
	if err != nil {
		return fmt.Errorf("read the outbox: %w", err)
	}
	if len(kept) == 0 {
		fmt.Fprintln(stdout, "The outbox is empty.")
	}
	for _, k := range kept {
		m, err := mail.Open(k, box)
		link := m.Link
		if err != nil {
			link = "(cannot be shown: " + strings.TrimPrefix(err.Error(), "mail: ") + ")"
		}
		fmt.Fprintf(stdout, "To: %s\nSubject: %s\nLink: %s\n\n", m.To, m.Subject, link)
	}
	return nil
}

// readSecrets returns what opens the secrets the server sealed, for the
// operator's commands: as openSecrets, but it never makes the key file (a
// file made by another user than the server's could lock the server out of
// it). nil when there is no key.
func readSecrets(c *config, st *store.Store) (*secrets.Box, error) {
	key := c.SecretKey
	if key == nil {
		if st.Dialect() != store.SQLite {
			return nil, nil
		}
		var err error
		key, err = secrets.ReadKeyFile(filepath.Join(filepath.Dir(st.Path()), secrets.KeyFileName))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("secret key (PERCH_SECRET_KEY unset): %w", err)
		}
	}
	return secrets.New(key)
}
