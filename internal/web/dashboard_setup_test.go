package web_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// setupCode makes a setup link as perch serve does at start-up and returns
// its code.
func (a *site) setupCode() string {
	a.t.Helper()
	link, _, err := a.srv.SetupLink(a.t.Context())
	if err != nil {
		a.t.Fatal(err)
	}
	_, code, ok := strings.Cut(link, "/setup#code=")
	if !ok {
		a.t.Fatalf("setup link %q", link)
	}
	return code
}

func TestSetupPageMakesTheFirstPlatformAdmin(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	code := a.setupCode()
	b := newBrowser(t, a.ts)
	b.get("/setup").expect(t, 200, "").contains(t, `href="/signin?next=%2Fsetup"`, `href="/signup?next=%2Fsetup"`)

	signUpInBrowser(t, b, "Ada")
	b.get("/notifications").expect(t, 200, "").contains(t, `id="setup-notice"`, "journalctl -u perch", "perch admin grant EMAIL")
	b.get("/setup").expect(t, 200, "").contains(t, `id="setup-form"`, "Make <strong>Ada</strong> ("+emailFor("Ada")+")")
	b.post("/setup", url.Values{"code": {""}}).expect(t, 422, "").contains(t, "The setup code is missing: open the whole setup link", `id="setup-form"`)
	b.post("/setup", url.Values{"code": {code + "x"}}).expect(t, 403, "").contains(t, "used or has expired", `id="setup-form"`)

	b.post("/setup", url.Values{"code": {code}}).expect(t, 303, "/admin")
	b.get("/admin").expect(t, 200, "").contains(t, "You are now the platform admin of this server.", "<h1>Admin")
	if p := b.get("/notifications").expect(t, 200, ""); strings.Contains(p.Body, "setup-notice") {
		t.Error("with an admin, the feed still says the server has none")
	}
	b.get("/setup").expect(t, 200, "").contains(t, `id="setup-done"`)

	// Anyone else now finds the link spent.
	bob := newBrowser(t, a.ts)
	signUpInBrowser(t, bob, "Bob")
	bob.get("/setup").expect(t, 200, "").contains(t, `id="setup-taken"`)
	bob.post("/setup", url.Values{"code": {code}}).expect(t, 403, "").contains(t, "used or has expired", `id="setup-taken"`)
}
