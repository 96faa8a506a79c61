package storetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestMigration22TakesTheMarkFromUnprovenMailboxes takes a database at 00021,
// where four paths had marked addresses verified without a round trip, up
// through 00022: the accounts those paths made lose the mark (and those an
// identity provider made are recorded as its assertion), accounts that
// proved their mailbox keep it, and down and up again works.
func TestMigration22TakesTheMarkFromUnprovenMailboxes(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Backends {
		t.Run(string(dialect), func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, dialect)
			db, p := migrator(t, dialect, dsn)
			q, exec := rawSQL(t, dialect, db)
			if _, err := p.UpTo(ctx, 21); err != nil {
				t.Fatal(err)
			}
			old, err := store.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			made := map[string]string{} // name → id
			for _, name := range []string{"ada", "scim", "jit", "oauth", "oauthpw", "invited", "joined"} {
				made[name] = mustCreateUser(t, old, name, name+"@example.com").ID
			}
			old.Close()
			// Every account verified, as the old paths left them; then what
			// each path wrote beside it.
			exec(`UPDATE users SET email_verified = TRUE`)
			exec(`INSERT INTO scim_users (user_id, org_id, user_name, user_name_norm, external_id, attributes, created_at, updated_at)
				SELECT id, org_id, email, email_norm, '', '{}', created_at, created_at FROM users WHERE id = ?`, made["scim"])
			exec(`UPDATE users SET password_hash = '' WHERE id IN (?, ?, ?)`, made["scim"], made["jit"], made["oauth"])
			for _, name := range []string{"oauth", "oauthpw"} {
				exec(`INSERT INTO user_identities (user_id, provider, subject, email, created_at) VALUES (?, 'github', ?, '', 1)`, made[name], "gh-"+name)
			}
			// invited registered through the link (the account made at the
			// acceptance); joined accepted one later, signed in.
			for i, name := range []string{"invited", "joined"} {
				exec(`INSERT INTO invitations (id, org_id, email, email_norm, role, token_hash, status, created_at, expires_at, accepted_at)
					SELECT ?, o.org_id, u.email, u.email_norm, 'member', ?, 'accepted', 1, 2, u.created_at + ?
					FROM users u, users o WHERE u.id = ? AND o.id = ?`, fmt.Sprintf("inv%d", i), "hash-"+name, i*60_000, made[name], made["ada"])
			}

			if _, err := p.UpTo(ctx, 22); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"ada":     "true ",
				"scim":    "false " + orgOf(t, db, q, made["scim"]),
				"jit":     "false " + orgOf(t, db, q, made["jit"]),
				"oauth":   "false ",
				"oauthpw": "true ", // a password it set came by a reset link, which proved the mailbox
				"invited": "false ",
				"joined":  "true ",
			}
			for name, id := range made {
				var verified bool
				var asserted string
				var listed bool
				if err := db.QueryRowContext(ctx, q(`SELECT email_verified, email_asserted_by, listed_admin FROM users WHERE id = ?`), id).
					Scan(&verified, &asserted, &listed); err != nil {
					t.Fatal(err)
				}
				if got := fmt.Sprintf("%v %s", verified, asserted); got != want[name] || listed {
					t.Errorf("%s after 00022: verified and asserted by = %q, listed %v; want %q, false", name, got, listed, want[name])
				}
			}

			if _, err := p.DownTo(ctx, 21); err != nil {
				t.Fatal(err)
			}
			if _, err := p.UpTo(ctx, 22); err != nil {
				t.Fatal(err)
			}
			s := mustOpen(t, dsn)
			if u, err := s.User(ctx, made["ada"]); err != nil || !u.EmailVerified {
				t.Fatalf("User(ada) after down and up = %+v, %v", u, err)
			}
		})
	}
}

// orgOf is the organisation of the account id.
func orgOf(t *testing.T, db *sql.DB, q func(string) string, id string) string {
	t.Helper()
	var org string
	if err := db.QueryRowContext(context.Background(), q(`SELECT org_id FROM users WHERE id = ?`), id).Scan(&org); err != nil {
		t.Fatal(err)
	}
	return org
}
