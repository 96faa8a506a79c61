package web_test

import (
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch/internal/mail/mailtest"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// The Admin section's pages, over HTTP: a platform admin sees them and
// changes things through their forms; anyone else gets the error page with
// the API's 403.

// signedIn is a dashboard browser signed in as the registered user name.
func signedIn(t *testing.T, a *site, name string) *browser {
	t.Helper()
	b := newBrowser(t, a.ts)
	b.post("/signin", url.Values{"email": {emailFor(name)}, "password": {goodPassword}}).expect(t, 303, "/notifications")
	return b
}

// platformAdmin registers name, grants it the platform-admin role (as
// perch admin grant does) and signs it in to the dashboard.
func platformAdmin(t *testing.T, a *site, name string) (*account, *browser) {
	t.Helper()
	acct := a.register(name)
	if err := a.store.GrantAdmin(t.Context(), acct.Email); err != nil {
		t.Fatal(err)
	}
	return acct, signedIn(t, a, name)
}

// refused checks that a non-admin gets the error page with the API's 403
// at path.
func refused(t *testing.T, b *browser, method, path string, form url.Values) {
	t.Helper()
	b.do(method, path, form).expect(t, http.StatusForbidden, "").contains(t, "Not allowed", "Only platform admins may do this.")
}

// link is the address of the first link whose text is text on p, unescaped.
func (p *page) link(t *testing.T, text string) string {
	t.Helper()
	m := regexp.MustCompile(`<a [^>]*href="([^"]*)"[^>]*>` + regexp.QuoteMeta(text) + `</a>`).FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatalf("no link %q on the page: %.3000s", text, p.Body)
	}
	return html.UnescapeString(m[1])
}

// lacks fails if p shows any of texts.
func (p *page) lacks(t *testing.T, texts ...string) *page {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(p.Body, s) {
			t.Fatalf("the page shows %q: %.3000s", s, p.Body)
		}
	}
	return p
}

func TestAdminNavigationIsForPlatformAdminsOnly(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	_, admin := platformAdmin(t, a, "Ops")
	a.register("Bob")
	bob := signedIn(t, a, "Bob")
	admin.get("/profile").expect(t, 200, "").contains(t, `<a href="/admin">Admin</a>`)
	bob.get("/profile").expect(t, 200, "").lacks(t, `href="/admin"`)
	// Signed out, an admin page sends the browser to sign in first.
	newBrowser(t, a.ts).get("/admin/audit").expect(t, 303, "/signin?next=%2Fadmin%2Faudit")
}

func TestAdminAuditLog(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newSite(t, s)
		_, admin := platformAdmin(t, a, "Ops")
		bobAcct := a.register("Bob")
		bob := signedIn(t, a, "Bob")
		expect(t, a.call("POST", "/api/v1/org/teams", bobAcct.Access, map[string]string{"name": "On call"}), 201)

		refused(t, bob, "GET", "/admin/audit", nil)

		p := admin.get("/admin/audit").expect(t, 200, "")
		p.contains(t, "<h1>Audit log</h1>", `aria-current="page">Audit log</a>`,
			"<code>auth.<wbr>registered</code>", "<code>org.<wbr>team.<wbr>created</code>", bobAcct.Email, "name: On call", "192.0.2.1")

		// Filters: an action prefix and an organisation.
		admin.get("/admin/audit?action=org.team.").expect(t, 200, "").
			contains(t, "<code>org.<wbr>team.<wbr>created</code>", `value="org.team."`).lacks(t, "<code>auth.<wbr>registered</code>")
		admin.get("/admin/audit?org_id="+url.QueryEscape(bobAcct.OrgID)).expect(t, 200, "").
			contains(t, "<code>org.<wbr>team.<wbr>created</code>", "</span> "+bobAcct.Email+"</td>").lacks(t, "</span> "+emailFor("Ops")+"</td>")

		// A range typed into datetime-local fields (UTC): one that ends
		// before anything happened shows nothing, one around now everything.
		now := a.clock.Now().UTC()
		long := url.Values{"from": {now.Add(-time.Hour).Format("2006-01-02T15:04")}, "to": {now.Add(time.Hour).Format("2006-01-02T15:04")}}
		admin.get("/admin/audit?"+long.Encode()).expect(t, 200, "").contains(t, "<code>org.<wbr>team.<wbr>created</code>")
		early := url.Values{"from": {now.Add(-48 * time.Hour).Format("2006-01-02")}, "to": {now.Add(-48 * time.Hour).Format("2006-01-02")}}
		admin.get("/admin/audit?"+early.Encode()).expect(t, 200, "").contains(t, "Nothing in this range").lacks(t, "<code>")
		// A range the API refuses is said beside the filters, which keep
		// what was typed.
		backwards := url.Values{"from": {"2026-03-02T10:00"}, "to": {"2026-03-01T10:00"}}
		admin.get("/admin/audit?"+backwards.Encode()).expect(t, 400, "").
			contains(t, `role="alert">to must be after from.`, `value="2026-03-02T10:00"`).lacks(t, "Export CSV")

		// Paging: a page of 2, then the next, then back to the first.
		first := admin.get("/admin/audit?limit=2").expect(t, 200, "")
		if n := strings.Count(first.Body, "<tr>") - 1; n != 2 {
			t.Fatalf("a page of 2 shows %d entries", n)
		}
		next := first.link(t, "Next page")
		if !strings.HasPrefix(next, "/admin/audit?") || !strings.Contains(next, "limit=2") || !strings.Contains(next, "cursor=") {
			t.Fatalf("the next page is %q", next)
		}
		second := admin.get(next).expect(t, 200, "")
		if second.Body == first.Body {
			t.Fatal("the next page shows the first page again")
		}
		if got := second.link(t, "First page"); got != "/admin/audit?limit=2" {
			t.Fatalf("the first page is %q", got)
		}

		// The exports are plain links to the API, which the session cookie
		// signs in to, with the page's filters.
		p = admin.get("/admin/audit?action=org.")
		csvLink := p.link(t, "Export CSV")
		if csvLink != "/api/v1/admin/audit-log-v2?action=org.&format=csv" {
			t.Fatalf("the CSV export is %q", csvLink)
		}
		res, err := admin.http.Get(a.ts.URL + csvLink)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body := new(strings.Builder)
		if _, err := io.Copy(body, res.Body); err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") ||
			!strings.HasPrefix(body.String(), "id,at,action,") || !strings.Contains(body.String(), "org.team.created") || strings.Contains(body.String(), "auth.registered") {
			t.Fatalf("the CSV export answered %d %s: %s", res.StatusCode, res.Header.Get("Content-Type"), body)
		}
		ndjson := admin.get(p.link(t, "Export NDJSON")).expect(t, 200, "")
		if !strings.Contains(ndjson.Body, `"action":"org.team.created"`) {
			t.Fatalf("the NDJSON export is %s", ndjson.Body)
		}
		// Not for Bob, cookie or not.
		bob.get(csvLink).expect(t, 403, "")
	})
}

func TestAdminFeatures(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newSite(t, s)
		_, admin := platformAdmin(t, a, "Ops")
		bobAcct := a.register("Bob")
		bob := signedIn(t, a, "Bob")
		refused(t, bob, "GET", "/admin/features", nil)
		refused(t, bob, "POST", "/admin/features/digest_email", url.Values{"enabled": {"on"}, "rollout_percent": {"0"}})
		refused(t, bob, "POST", "/admin/features/digest_email/overrides", url.Values{"org_id": {bobAcct.OrgID}, "override": {"on"}})
		digest := func() bool {
			t.Helper()
			on, _ := expect(t, a.call("GET", "/api/v1/users/me/features", bobAcct.Access, nil), 200).Data()["digest_email"].(bool)
			return on
		}

		admin.get("/admin/features").expect(t, 200, "").contains(t, "<h1>Features</h1>", `aria-current="page">Features</a>`,
			`id="flag-workflows"`, `id="flag-marketplace"`, `id="flag-digest_email"`, "Daily e-mail digest of unread notifications")

		// A rollout percentage.
		admin.post("/admin/features/digest_email", url.Values{"enabled": {"off"}, "rollout_percent": {"25"}}).
			expect(t, 303, "/admin/features")
		admin.get("/admin/features").expect(t, 200, "").contains(t, "digest_email is saved.", "25% of users", `id="rollout-digest_email" name="rollout_percent" type="number" min="0" max="100" step="1" required value="25"`)
		// One the API refuses: its problem by the field, what was typed
		// kept, the other flags' forms as they were.
		p := admin.post("/admin/features/digest_email", url.Values{"enabled": {"on"}, "rollout_percent": {"150"}}).expect(t, 422, "")
		p.contains(t, "must be a whole number from 0 to 100", `required value="150"`, `id="rollout-workflows" name="rollout_percent" type="number" min="0" max="100" step="1" required value="0"`)

		// An override for Bob's organisation turns it on for Bob, whether or
		// not he is inside the rollout; set off, it turns it off.
		admin.post("/admin/features/digest_email/overrides", url.Values{"org_id": {bobAcct.OrgID}, "override": {"on"}}).
			expect(t, 303, "/admin/features")
		admin.get("/admin/features").expect(t, 200, "").contains(t, "digest_email is on for the organisation "+bobAcct.OrgID+".",
			`<a href="/admin/orgs/`+bobAcct.OrgID+`"><code>`+bobAcct.OrgID+`</code></a>`, "1 override")
		if !digest() {
			t.Fatal("the override did not turn digest_email on for Bob")
		}
		// Set again, off: it replaces the override.
		admin.post("/admin/features/digest_email/overrides", url.Values{"org_id": {bobAcct.OrgID}, "override": {"off"}}).expect(t, 303, "")
		if digest() {
			t.Fatal("the override set off left digest_email on for Bob")
		}
		admin.get("/admin/features").expect(t, 200, "").contains(t, "1 override")
		// An organisation that does not exist.
		admin.post("/admin/features/digest_email/overrides", url.Values{"org_id": {"no-such-org"}, "override": {"on"}}).expect(t, 422, "").
			contains(t, `<div class="problem">is not an organisation</div>`, `value="no-such-org"`)
		admin.post("/admin/features/digest_email/overrides/"+bobAcct.OrgID+"/remove", nil).expect(t, 303, "/admin/features")
		admin.get("/admin/features").expect(t, 200, "").contains(t, "The override of "+bobAcct.OrgID+" is removed from digest_email.").lacks(t, "1 override")
		// A flag that does not exist.
		admin.post("/admin/features/nope", url.Values{"enabled": {"on"}, "rollout_percent": {"0"}}).expect(t, 404, "")

		admin.get("/admin/audit?action=admin.feature.").expect(t, 200, "").
			contains(t, "<code>admin.<wbr>feature.<wbr>updated</code>", "rollout_percent: 0 → 25")
	})
}

func TestAdminOverview(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newSite(t, s)
		_, admin := platformAdmin(t, a, "Ops")
		bobs := a.register("Bob")
		bob := signedIn(t, a, "Bob")
		refused(t, bob, "GET", "/admin", nil)
		// A GitHub delivery, counted by source under GitHub's name.
		hook := expect(t, a.call("POST", "/api/v1/webhook-tokens", bobs.Access, map[string]string{"label": "repos", "sender": "code-host", "scope": "user"}), 201).Data()["raw_token"].(string)
		expect(t, a.call("POST", "/webhooks/code-host?token="+hook, "", map[string]any{"zen": "Keep it simple.", "repository": map[string]string{"full_name": "acme/widgets"}},
			"X-GitHub-Event", "ping"), 200)

		p := admin.get("/admin").expect(t, 200, "")
		p.contains(t, "<h1>Admin</h1>", `<a href="/admin" aria-current="page">Overview</a>`, `<a href="/admin" aria-current="page">Admin</a>`,
			"<dt>Users</dt><dd>2</dd>", "Over the last 7 days", `<a href="/admin?range=7d" aria-current="true">7 days</a>`,
			`<strong>Sign-ups per day</strong> <span class="muted">2 in all</span>`, `<strong>Notifications per day</strong>`,
			`<strong>Active users per day</strong>`, `<strong>Workflow runs per day</strong>`,
			`<title id="chart-signups-title">Sign-ups per day</title>`, "2 in all; the most, 2, in the day of 22 Nov.",
			"Organisations by plan", `<tr><td>GitHub</td><td class="num">1</td></tr>`)
		if n := strings.Count(p.Body, `<svg class="chart"`); n != 4 {
			t.Errorf("%d charts, want 4", n)
		}
		admin.get("/admin?range=24h").expect(t, 200, "").contains(t, "Over the last 24 hours", `<strong>Sign-ups per hour</strong> <span class="muted">2 in all</span>`)
		// A range it does not offer is the default.
		admin.get("/admin?range=5y").expect(t, 200, "").contains(t, "Over the last 7 days")
	})
}

func TestAdminUsers(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newSite(t, s)
		opsAcct, admin := platformAdmin(t, a, "Ops")
		bobAcct := a.register("Bob")
		bob := signedIn(t, a, "Bob")
		a.register("Carol")
		refused(t, bob, "GET", "/admin/users", nil)
		refused(t, bob, "POST", "/admin/users/"+opsAcct.ID, url.Values{"action": {"disable"}})

		p := admin.get("/admin/users").expect(t, 200, "")
		p.contains(t, "<h1>Users</h1>", `aria-current="page">Users</a>`, "<strong>Ops</strong> <span class=\"muted\">(you)</span>",
			`<span class="muted">`+bobAcct.Email+`</span>`, `<span class="muted">carol@example.com</span>`, `<span class="badge">Platform admin</span>`)
		// No Disable button for oneself.
		if strings.Contains(p.Body, `aria-label="Disable `+opsAcct.Email+`"`) || !strings.Contains(p.Body, `aria-label="Disable `+bobAcct.Email+`"`) {
			t.Error("the Disable buttons are wrong")
		}
		// Search, and paging that keeps it.
		admin.get("/admin/users?q=bob").expect(t, 200, "").contains(t, `value="bob"`, `<span class="muted">`+bobAcct.Email+`</span>`).
			lacks(t, `<span class="muted">carol@example.com</span>`)
		admin.get("/admin/users?q=nobody-here").expect(t, 200, "").contains(t, "No one found")
		admin.get("/admin/users?q="+strings.Repeat("x", 201)).expect(t, 400, "").contains(t, `role="alert">The search (q) must be at most 200 characters.`)
		first := admin.get("/admin/users?limit=2").expect(t, 200, "")
		next := first.link(t, "Next page")
		admin.get(next).expect(t, 200, "").contains(t, "<strong>Ops</strong>").lacks(t, "<strong>Carol</strong>")

		// Disable Bob: his sessions end at once; the list comes back as it was.
		admin.post("/admin/users/"+bobAcct.ID, url.Values{"action": {"disable"}, "back": {"/admin/users?q=bob"}}).expect(t, 303, "/admin/users?q=bob")
		admin.get("/admin/users?q=bob").expect(t, 200, "").contains(t, "Bob is disabled: every sign-in", `<span class="badge off">Disabled</span>`,
			`aria-label="Enable `+bobAcct.Email+`"`)
		expect(t, a.call("GET", "/api/v1/users/me", bobAcct.Access, nil), 401)
		bob.get("/profile").expect(t, 200, "").contains(t, "data-submit-at-once") // its renewal is refused
		admin.post("/admin/users/"+bobAcct.ID, url.Values{"action": {"enable"}, "back": {"/admin/users"}}).expect(t, 303, "/admin/users")
		admin.get("/admin/users").expect(t, 200, "").contains(t, "Bob is enabled again and may sign in.")
		bob = signedIn(t, a, "Bob")

		// Platform admin, granted and taken away.
		admin.post("/admin/users/"+bobAcct.ID, url.Values{"action": {"grant"}, "back": {"/admin/users"}}).expect(t, 303, "/admin/users")
		admin.get("/admin/users").expect(t, 200, "").contains(t, "Bob is a platform admin.")
		bob.get("/admin/users").expect(t, 200, "")
		bob.post("/admin/users/"+bobAcct.ID, url.Values{"action": {"revoke"}}).expect(t, 303, "/admin/users")
		refused(t, bob, "GET", "/admin/users", nil)

		// Refusals are the list's error: the last platform admin, and one's
		// own account.
		admin.post("/admin/users/"+opsAcct.ID, url.Values{"action": {"revoke"}, "back": {"/admin/users?q=ops"}}).expect(t, 409, "").
			contains(t, `role="alert">This is the last platform admin: make someone else a platform admin first.`, `value="ops"`, "<strong>Ops</strong>")
		admin.post("/admin/users/"+opsAcct.ID, url.Values{"action": {"disable"}}).expect(t, 409, "").
			contains(t, "You cannot disable your own account")
		admin.post("/admin/users/"+bobAcct.ID, url.Values{"action": {"explode"}}).expect(t, 400, "").contains(t, "Choose one of the buttons")
		// Only the Users page is gone back to.
		admin.post("/admin/users/"+bobAcct.ID, url.Values{"action": {"enable"}, "back": {"//evil.example/admin/users"}}).expect(t, 303, "/admin/users")
		admin.post("/admin/users/"+bobAcct.ID, url.Values{"action": {"enable"}, "back": {"/org"}}).expect(t, 303, "/admin/users")

		admin.get("/admin/audit?action=admin.user.").expect(t, 200, "").contains(t, "<code>admin.<wbr>user.<wbr>updated</code>", "disabled: true", "platform_admin: false")
	})
}

func TestAdminOrganisations(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newSite(t, s)
		_, admin := platformAdmin(t, a, "Ops")
		bobAcct := a.register("Bob")
		bob := signedIn(t, a, "Bob")
		orgPath := "/admin/orgs/" + bobAcct.OrgID
		refused(t, bob, "GET", "/admin/orgs", nil)
		refused(t, bob, "GET", orgPath, nil)
		refused(t, bob, "POST", orgPath, url.Values{"plan": {"team"}, "status": {"active"}})

		p := admin.get("/admin/orgs").expect(t, 200, "")
		p.contains(t, "<h1>Organisations</h1>", `aria-current="page">Organisations</a>`, "<strong>Solo</strong>", "<strong>Enterprise</strong>",
			`<a href="`+orgPath+`"><strong>Bob&#39;s organisation</strong></a>`, "<strong>Ops&#39;s organisation</strong>")
		admin.get("/admin/orgs?q=bob").expect(t, 200, "").contains(t, `<a href="`+orgPath+`">`).lacks(t, "<strong>Ops&#39;s organisation</strong>")
		admin.get("/admin/orgs?limit=1").expect(t, 200, "").link(t, "Next page")

		admin.get(orgPath).expect(t, 200, "").contains(t, "<h1>Bob&#39;s organisation</h1>", "<strong>Bob</strong> <span class=\"muted\">"+bobAcct.Email,
			`href="/admin/audit?org_id=`+bobAcct.OrgID+`"`, `<option value="solo">Solo`)

		// A plan, a status and a trial's end, in UTC.
		admin.post(orgPath, url.Values{"plan": {"enterprise"}, "status": {"active"}, "trial_ends_at": {"2026-12-24T18:30"}, "trial_was": {""}}).expect(t, 303, orgPath)
		admin.get(orgPath).expect(t, 200, "").contains(t, "Bob&#39;s organisation is saved: the enterprise plan, active.", `<option value="enterprise" selected>`,
			`<option value="active" selected>`, `value="2026-12-24T18:30"`, `<time datetime="2026-12-24T18:30:00Z">`)
		org := expect(t, a.call("GET", "/api/v1/org", bobAcct.Access, nil), 200).Data()
		if org["plan"] != "enterprise" {
			t.Fatalf("Bob's organisation is on %v", org["plan"])
		}
		// Refused: the problem by its field, what was chosen kept.
		admin.post(orgPath, url.Values{"plan": {"gold"}, "status": {"past_due"}, "trial_ends_at": {"2026-12-24T18:30"}, "trial_was": {"2026-12-24T18:30"}}).
			expect(t, 422, "").contains(t, `<div class="problem">must be one of solo, team, enterprise</div>`, `<option value="past_due" selected>`)
		// Emptied, the trial's end is cleared.
		admin.post(orgPath, url.Values{"plan": {"enterprise"}, "status": {"past_due"}, "trial_ends_at": {""}, "trial_was": {"2026-12-24T18:30"}}).expect(t, 303, orgPath)
		admin.get(orgPath).expect(t, 200, "").contains(t, "the enterprise plan, past due.", `name="trial_ends_at" type="datetime-local" value=""`)
		admin.get("/admin/orgs/no-such-org").expect(t, 404, "")

		admin.get("/admin/audit?action=admin.org.").expect(t, 200, "").
			contains(t, "<code>admin.<wbr>org.<wbr>updated</code>", "plan: team → enterprise", "status: trialing → active", "status: active → past_due", "→ 2026-12-24T18:30:00Z")
	})
}

// withSecrets gives a site a key to seal secrets with, as perch serve
// always has one on SQLite.
func withSecrets(t *testing.T) func(*server.Options) {
	t.Helper()
	box, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return func(o *server.Options) { o.Secrets = box }
}

func TestAdminEmailSettings(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newSite(t, s, withSecrets(t))
		opsAcct, admin := platformAdmin(t, a, "Ops")
		a.register("Bob")
		bob := signedIn(t, a, "Bob")
		refused(t, bob, "GET", "/admin/email", nil)
		refused(t, bob, "POST", "/admin/email", url.Values{"host": {"smtp.example.com"}, "port": {"587"}, "from": {"a@example.com"}, "tls": {"starttls"}})
		refused(t, bob, "POST", "/admin/email/test", url.Values{"to": {"bob@example.com"}})

		admin.get("/admin/email").expect(t, 200, "").contains(t, "<h1>E-mail</h1>", `aria-current="page">E-mail</a>`,
			"No SMTP server is set", "No password is set.", `id="to" name="to" type="email" required value="`+opsAcct.Email+`"`)
		// Without a server, the test message says why it did not go.
		admin.post("/admin/email/test", url.Values{"to": {"someone@example.com"}}).expect(t, 200, "").
			contains(t, "The test message did not go.", "No SMTP server is set, so mail waits in the outbox")

		// Refused: every problem by its field, what was typed kept, never
		// the password.
		bad := url.Values{"host": {"smtp://mail.example.com"}, "port": {"70000"}, "username": {"perch"}, "password": {"hunter2-secret"},
			"from": {"not an address"}, "tls": {"none"}}
		p := admin.post("/admin/email", bad).expect(t, 422, "")
		p.contains(t, "must be a host name or an IP address", "must be a number from 1 to 65535", "must be an e-mail address",
			"the password would cross the network in the clear", `value="smtp://mail.example.com"`, `value="70000"`)
		p.lacks(t, "hunter2-secret")

		// Settings for an SMTP server that wants a sign-in: the password is
		// kept sealed, never shown, and the test message signs in with it.
		smtp := mailtest.StartWithLogin(t, "perch", "hunter2-secret")
		host, port, _ := strings.Cut(strings.TrimPrefix(smtp.URL(), "smtp://"), ":")
		good := url.Values{"host": {host}, "port": {port}, "username": {"perch"}, "password": {"hunter2-secret"},
			"from": {"Perch <perch@example.com>"}, "tls": {"none"}}
		admin.post("/admin/email", good).expect(t, 303, "/admin/email")
		p = admin.get("/admin/email").expect(t, 200, "")
		p.contains(t, "The e-mail settings are saved", "In force: the settings stored here", `value="`+host+`"`, `value="`+port+`"`,
			`value="perch"`, "A password is set; leave this empty to keep it.", `<option value="none" selected>`).lacks(t, "hunter2-secret")
		admin.post("/admin/email/test", url.Values{"to": {"grace@example.com"}}).expect(t, 200, "").
			contains(t, "The test message went.", "The server accepted the message")
		if m := smtp.WaitFor(t, "grace@example.com"); m.From != "perch@example.com" {
			t.Errorf("the test message came from %q", m.From)
		}
		// Saved again without a password: the stored one stays.
		good.Set("password", "")
		admin.post("/admin/email", good).expect(t, 303, "/admin/email")
		admin.post("/admin/email/test", url.Values{"to": {"grace@example.com"}}).expect(t, 200, "").contains(t, "The test message went.")
		// Removed, the server refuses the sign-in-less message.
		admin.post("/admin/email", url.Values{"host": {host}, "port": {port}, "from": {"Perch <perch@example.com>"}, "tls": {"none"},
			"remove_password": {"on"}}).expect(t, 303, "/admin/email")
		admin.get("/admin/email").expect(t, 200, "").contains(t, "No password is set.")
		admin.post("/admin/email/test", url.Values{"to": {"grace@example.com"}}).expect(t, 200, "").contains(t, "The test message did not go.")
		// An address to send to that is none.
		admin.post("/admin/email/test", url.Values{"to": {"nobody"}}).expect(t, 422, "").contains(t, `<div class="problem">`, `value="nobody"`)

		admin.get("/admin/audit?action=admin.email_config.").expect(t, 200, "").
			contains(t, "<code>admin.<wbr>email_config.<wbr>updated</code>", "<code>admin.<wbr>email_config.<wbr>tested</code>", "password_changed: true").
			lacks(t, "hunter2-secret")
	})
}

func TestAdminNewsletter(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newSite(t, s, withSecrets(t))
		_, admin := platformAdmin(t, a, "Ops")
		bobAcct := a.register("Bob")
		bob := signedIn(t, a, "Bob")
		refused(t, bob, "GET", "/admin/newsletter", nil)
		refused(t, bob, "POST", "/admin/newsletter", url.Values{"subject": {"Hi"}, "body": {"Hello."}})
		refused(t, bob, "GET", "/admin/newsletter/subscribers.csv", nil)

		admin.get("/admin/newsletter").expect(t, 200, "").contains(t, "<h1>Newsletter</h1>", `aria-current="page">Newsletter</a>`,
			"0 people take the newsletter", "No subscribers yet", "Send to 0 subscribers</button>").lacks(t, "Export CSV")

		// Two people with confirmed addresses take it; Bob, unconfirmed,
		// turned it on but is no subscriber.
		for _, name := range []string{"Ada", "Grace"} {
			b := newBrowser(t, a.ts)
			signUpInBrowser(t, b, name)
			link, _ := url.Parse(a.mail.WaitFor(t, emailFor(name)).Link())
			b.post("/verify-email", url.Values{"token": {link.Query().Get("token")}}).expect(t, 303, "/profile")
			b.post("/profile/newsletter", url.Values{"newsletter": {"on"}}).expect(t, 303, "/profile")
		}
		expect(t, a.call("PATCH", "/api/v1/users/me", bobAcct.Access, map[string]any{"newsletter": true}), 200)

		p := admin.get("/admin/newsletter").expect(t, 200, "")
		p.contains(t, "2 people take the newsletter", "<strong>Ada</strong>", emailFor("Grace"), `data-confirm="Send this to 2 subscribers now?`).lacks(t, bobAcct.Email)
		// A page of one, then the other one.
		first := admin.get("/admin/newsletter?limit=1").expect(t, 200, "")
		on, off := "<strong>Ada</strong>", "<strong>Grace</strong>"
		if !strings.Contains(first.Body, on) {
			on, off = off, on
		}
		first.contains(t, on).lacks(t, off)
		admin.get(first.link(t, "Next page")).expect(t, 200, "").contains(t, off).lacks(t, on)

		// The CSV, through the dashboard: the API answers it by Accept.
		res, err := admin.http.Get(a.ts.URL + p.link(t, "Export CSV"))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") || len(lines) != 3 ||
			lines[0] != "user_id,email,name,subscribed_at" || !strings.Contains(string(raw), emailFor("Ada")) {
			t.Fatalf("the export answered %d %s:\n%s", res.StatusCode, res.Header.Get("Content-Type"), raw)
		}

		// An issue: refused without a subject, then sent to both.
		admin.post("/admin/newsletter", url.Values{"subject": {""}, "body": {"Hello, everyone."}}).expect(t, 422, "").
			contains(t, `<div class="problem">`, "Hello, everyone.</textarea>")
		admin.post("/admin/newsletter", url.Values{"subject": {"Perch 2.0"}, "body": {"Hello, everyone."}}).expect(t, 303, "/admin/newsletter")
		admin.get("/admin/newsletter").expect(t, 200, "").contains(t, "“Perch 2.0” is on its way to 2 subscribers.")
		for _, name := range []string{"Ada", "Grace"} {
			if m := a.mail.WaitFor(t, emailFor(name)); m.Subject != "Perch 2.0" || !strings.Contains(m.Text, "Hello, everyone.") {
				t.Errorf("%s got %q: %s", name, m.Subject, m.Text)
			}
		}
		admin.get("/admin/audit?action=admin.newsletter.").expect(t, 200, "").contains(t, "subject: Perch 2.0", "recipients: 2")
	})
}

func TestAdminNewsletterWithoutASecretKey(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	_, admin := platformAdmin(t, a, "Ops")
	// The server's answer names the setting: the admin's to act on.
	admin.post("/admin/newsletter", url.Values{"subject": {"Hi"}, "body": {"Hello."}}).expect(t, 503, "").
		contains(t, "PERCH_SECRET_KEY", `value="Hi"`)
}
