package storetest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestMigration30CleansSCIMOrphans takes a database as the old SCIM DELETE
// left it (each deleted member the only owner of a new organisation made
// for them, with the scim.user.deleted entry of the organisation they
// left) up through 00030: the organisations that hold nothing of their
// own go, and their members are back, disabled and deleted by SCIM, in
// the organisation that deleted them, signed out; every other
// organisation and account is left as it was; down and up again changes
// nothing more.
func TestMigration30CleansSCIMOrphans(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Backends {
		t.Run(string(dialect), func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, dialect)
			db, p := migrator(t, dialect, dsn)
			_, exec := rawSQL(t, dialect, db)
			if _, err := p.UpTo(ctx, 29); err != nil { // the version before, whichever it is
				t.Fatal(err)
			}
			const day = 24 * 3600 * 1000
			org := func(id string, created int64) {
				exec(`INSERT INTO orgs (id, name, slug, plan, plan_status, trial_ends_at, created_at) VALUES (?, ?, ?, 'team', 'trialing', ?, ?)`,
					id, id+"'s organisation", id+"-slug", created+14*day, created)
			}
			user := func(id, orgID, role string, joined int64) {
				exec(`INSERT INTO users (id, org_id, org_role, joined_at, email, email_norm, name, created_at, updated_at)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, orgID, role, joined, id+"@example.com", id+"@example.com", id, 1000, 1000)
			}
			audit := func(at int64, action, actor, targetID, orgID string) {
				exec(`INSERT INTO audit_log (at, action, actor_type, target_type, target_id, org_id, changes) VALUES (?, ?, ?, 'user', ?, ?, '{}')`,
					at, action, actor, targetID, orgID)
			}
			// scimDeleted is what the old DELETE of id from home did at at:
			// a new organisation, the member moved into it as its owner, the
			// entry written a few milliseconds later.
			scimDeleted := func(id, home string, at int64) string {
				orphan := "org-" + id
				org(orphan, at)
				user(id, orphan, "owner", at+1)
				audit(at+5, perch.AuditSCIMUserDeleted, "scim", id, home)
				return orphan
			}
			org("home", 1000)
			user("ada", "home", "owner", 1000)
			t0 := int64(10 * day)
			scimDeleted("bob", "home", t0) // nothing else: cleaned
			exec(`INSERT INTO sessions (id, user_id, created_at) VALUES ('bob-session', 'bob', ?)`, t0+day)
			fay := scimDeleted("fay", "home", t0+day) // signed in since (the old hole), and the trial ran out: cleaned
			audit(t0+2*day, perch.AuditSignedIn, "user", "fay", fay)
			audit(t0+15*day, perch.AuditTrialExpired, "system", "", fay)
			cy := scimDeleted("cy", "home", t0+2*day) // made a webhook token there: kept
			exec(`INSERT INTO webhook_tokens (id, user_id, org_id, label, sender, scope, token_prefix, hash, created_at)
				VALUES ('wh1', 'cy', ?, 'x', 'inbound', 'org', 'whk_x', 'hash-wh1', ?)`, cy, t0+3*day)
			hal := scimDeleted("hal", "home", t0+3*day) // a platform admin changed it: kept
			audit(t0+4*day, perch.AuditAdminOrgUpdated, "admin", "", hal)
			gus := scimDeleted("gus", "home", t0+4*day) // a platform admin: kept
			exec(`UPDATE users SET is_admin = TRUE WHERE id = 'gus'`)
			ivy := scimDeleted("ivy", "home", t0+5*day) // someone joined it: kept
			user("joe", ivy, "member", t0+6*day)
			// Registered on their own two days before an identity provider
			// deleted them elsewhere: not an organisation the deletion made.
			org("org-eve", t0)
			user("eve", "org-eve", "owner", t0)
			audit(t0+2*day, perch.AuditSCIMUserDeleted, "scim", "eve", "home")
			org("org-dan", t0) // no SCIM at all
			user("dan", "org-dan", "owner", t0)

			if _, err := p.UpTo(ctx, 30); err != nil {
				t.Fatal(err)
			}
			accounts := func() map[string]string {
				got := map[string]string{}
				_, rows := storetest.Rows(t, db, `SELECT id, org_id, org_role, COALESCE(disabled_at, 0), disabled_by, COALESCE(scim_deleted_at, 0)
					FROM users ORDER BY id`)
				for _, vals := range rows {
					got[fmt.Sprint(vals[0])] = fmt.Sprintf("%v %v %v %v %v", vals[1:]...)
				}
				return got
			}
			got := accounts()
			want := map[string]string{
				"ada": "home owner 0  0",
				"bob": fmt.Sprintf("home member %d scim %d", t0+5, t0+5),
				"fay": fmt.Sprintf("home member %d scim %d", t0+day+5, t0+day+5),
				"cy":  cy + " owner 0  0",
				"hal": hal + " owner 0  0",
				"gus": gus + " owner 0  0",
				"ivy": ivy + " owner 0  0",
				"joe": ivy + " member 0  0",
				"eve": "org-eve owner 0  0",
				"dan": "org-dan owner 0  0",
			}
			if len(got) != len(want) {
				t.Errorf("after 00030: %d accounts, want %d", len(got), len(want))
			}
			for k, w := range want {
				if got[k] != w {
					t.Errorf("%s after 00030: %q, want %q", k, got[k], w)
				}
			}
			orgs := func() []string {
				_, rows := storetest.Rows(t, db, `SELECT id FROM orgs ORDER BY id`)
				var ids []string
				for _, vals := range rows {
					ids = append(ids, fmt.Sprint(vals[0]))
				}
				return ids
			}
			same(t, orgs(), sortedCopy([]string{"home", cy, "org-dan", "org-eve", gus, hal, ivy}))
			_, revoked := storetest.Rows(t, db, `SELECT revoked_at FROM sessions WHERE id = 'bob-session'`)
			if len(revoked) != 1 || revoked[0][0] == nil {
				t.Errorf("bob's sign-in was not ended: %v", revoked)
			}
			s := mustOpen(t, dsn)
			u, err := s.User(ctx, "bob")
			if err != nil || u.OrgID != "home" || !u.Disabled {
				t.Fatalf("bob after 00030: %+v, %v", u, err)
			}
			if _, err := s.SCIMUser(ctx, "home", "bob"); perch.ErrorCode(err) != perch.ENOTFOUND {
				t.Errorf("SCIM finds a member the old DELETE deleted: %v", err)
			}
			if _, err := s.SCIMUser(ctx, cy, "cy"); err != nil {
				t.Errorf("cy in the organisation kept: %v", err)
			}
			s.Close()

			// Down forgets who SCIM deleted (they read as deactivated);
			// up again cleans nothing more.
			if _, err := p.DownTo(ctx, 29); err != nil {
				t.Fatal(err)
			}
			if _, err := p.UpTo(ctx, 30); err != nil {
				t.Fatal(err)
			}
			after := accounts()
			want["bob"] = fmt.Sprintf("home member %d scim 0", t0+5)
			want["fay"] = fmt.Sprintf("home member %d scim 0", t0+day+5)
			for k, w := range want {
				if after[k] != w {
					t.Errorf("%s after down and up: %q, want %q", k, after[k], w)
				}
			}
			same(t, orgs(), sortedCopy([]string{"home", cy, "org-dan", "org-eve", gus, hal, ivy}))
		})
	}
}

// sortedCopy is ss sorted, as ORDER BY id sorts ASCII ids.
func sortedCopy(ss []string) []string {
	out := append([]string(nil), ss...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
