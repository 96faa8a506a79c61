package web_test

import (
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/samltest"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestSingleSignOnInTheBrowser: in Chromium, an owner pastes the identity
// provider's metadata on the single sign-on page; then, signed out, they
// sign in with SSO: the identity provider's page (another origin) posts
// the response back, and the session cookies set on that cross-site post
// hold for the page the browser is sent on to.
func TestSingleSignOnInTheBrowser(t *testing.T) {
	t.Parallel()
	e := newSSOSite(t, storetest.New(t, store.SQLite))
	b := newChrome(t, e.base)
	t.Logf("screenshots: %s", b.dir)
	b.signUp("Olive Owner", emailFor("Olive Owner"), goodPassword)

	b.open("/org", "h1")
	b.click(`a[href="/org/sso"]`)
	b.do("wait for the single sign-on page", waitVisible("#sp-values"))
	b.checkPage("org-sso-empty")
	b.paste("#idp_metadata_xml", e.idp.Metadata())
	b.click(`input[name="enabled"]`)
	b.click(`form[action="/org/sso"] button[type="submit"]`)
	b.do("wait for the saved settings", waitVisible(".flash"))
	if got := b.text(".flash"); got != "The single sign-on settings are saved." {
		t.Fatalf("after saving, the page says %q", got)
	}
	if !strings.Contains(b.text("#sp-certificate"), "BEGIN CERTIFICATE") {
		t.Error("no certificate to give the identity provider")
	}
	b.checkPage("org-sso")
	b.shootBoth("org-sso")

	orgID := strings.TrimPrefix(b.text("#sp-entity"), e.base+"/api/v1/auth/saml/metadata?org_id=")
	e.idp.AddServiceProvider("perch", samltest.NewBrowser(t).Get(e.base+"/api/v1/auth/saml/metadata?org_id="+orgID).Body)
	e.idp.AddUser("olive", "olives idp password", emailFor("Olive Owner"), "Olive")

	b.click(`form[action="/session/signout"] button`)
	b.do("wait for the sign-in page", waitVisible("#email"))
	b.click(`a[href^="/signin/sso"]`)
	b.do("wait for the SSO page", waitVisible("#who"))
	b.checkPage("signin-sso")
	b.shootBoth("signin-sso")
	org, err := e.store.Org(t.Context(), orgID)
	if err != nil {
		t.Fatal(err)
	}
	b.fill("#who", org.Slug)
	b.click(`form[action="/signin/sso"] button[type="submit"]`)
	b.do("wait for the identity provider's sign-in", waitVisible(`input[name="user"]`))
	b.fill(`input[name="user"]`, "olive", `input[name="password"]`, "olives idp password")
	b.click(`input[type="submit"]`)
	b.waitLive()
	if got, want := b.location(), e.base+"/notifications"; got != want {
		t.Fatalf("after single sign-on the browser is on %s, want %s", got, want)
	}
	// The identity provider's pages are not Perch's to answer for (its
	// missing favicon, say).
	for _, m := range b.consoleProblems() {
		if !strings.HasPrefix(m.URL, e.idp.HTTP.URL) {
			t.Errorf("the page %s reported %s: %s", m.URL, m.Type, m.Text)
		}
	}
}
