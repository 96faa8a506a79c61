package web_test

import (
	"context"
	"crypto/rsa"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch/internal/samltest"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// ssoSite is a site on its own public address, able to store SAML
// settings (a secret key), fetch metadata from loopback and look up DNS
// records in a stub, with crewjam's samlidp beside it; its clock is the
// real one, which the identity provider keeps.
type ssoSite struct {
	*site
	base string
	idp  *samltest.IdP

	mu  sync.Mutex
	dns map[string][]string
}

func newSSOSite(t *testing.T, s *store.Store) *ssoSite {
	t.Helper()
	ln := listen(t)
	box, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	e := &ssoSite{base: "http://" + ln.Addr().String(), dns: map[string][]string{}}
	e.site = newSiteOn(t, ln, s, func(o *server.Options) {
		o.BaseURL, o.Secrets, o.SSO.SAMLMetadataLoopback = e.base, box, true
		o.SSO.NewKey = func() (*rsa.PrivateKey, error) { return samltest.Key(t), nil }
		o.SSO.LookupTXT = func(_ context.Context, name string) ([]string, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			if r, ok := e.dns[name]; ok {
				return r, nil
			}
			return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
		}
	})
	e.clock.Advance(time.Since(e.clock.Now()))
	e.idp = samltest.NewIdP(t)
	return e
}

// signUp signs name up in b, through the dashboard's form.
func (e *ssoSite) signUp(t *testing.T, b *samltest.Browser, name string) {
	t.Helper()
	p := b.Submit(samltest.Form{Action: e.base + "/signup", Values: url.Values{"name": {name}, "email": {emailFor(name)}, "password": {goodPassword}}})
	if p.Status != 303 {
		t.Fatalf("sign-up: %d %.300s", p.Status, p.Body)
	}
}

func has(t *testing.T, p samltest.Page, status int, texts ...string) {
	t.Helper()
	if p.Status != status {
		t.Fatalf("status %d, want %d: %.500s", p.Status, status, p.Body)
	}
	for _, s := range texts {
		if !strings.Contains(p.Body, s) {
			t.Fatalf("the page lacks %q: %.3000s", s, p.Body)
		}
	}
}

// TestDashboardSingleSignOn: an owner sets SAML up on the organisation's
// single sign-on page (the values for the identity provider, the metadata
// by URL, a domain verified by DNS, the test, a SCIM token shown once);
// then a person of that domain uses "Sign in with SSO" and lands, through
// the identity provider, in a working dashboard session. A refusal comes
// back to the sign-in page with its reason.
func TestDashboardSingleSignOn(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSSOSite(t, s)
		owner := samltest.NewBrowser(t)
		e.signUp(t, owner, "Olive Owner")
		has(t, owner.Get(e.base+"/org"), 200, `href="/org/sso"`)
		p := owner.Get(e.base + "/org/sso")
		has(t, p, 200, "Enter Perch at your identity provider", e.base+"/api/v1/auth/saml/acs", e.base+"/api/v1/auth/saml/metadata?org_id=")

		form := samltest.Form{Action: e.base + "/org/sso", Values: url.Values{"idp_metadata_url": {e.idp.EntityID()}, "enabled": {"on"},
			"jit_provisioning": {"on"}, "default_role": {"member"}, "domains": {"olive.example"}}}
		if p := owner.Submit(form); p.Status != 303 || p.Location != "/org/sso" {
			t.Fatalf("save: %d %q %.500s", p.Status, p.Location, p.Body)
		}
		p = owner.Get(e.base + "/org/sso")
		has(t, p, 200, "The single sign-on settings are saved.", "BEGIN CERTIFICATE", e.idp.EntityID(), "Not verified")
		record := regexp.MustCompile(`perch-domain-verification=[a-z0-9]+`).FindString(p.Body)
		if record == "" {
			t.Fatal("the page shows no TXT record to add")
		}
		has(t, owner.Submit(samltest.Form{Action: e.base + "/org/sso/test"}), 200, "Single sign-on is not ready", "olive.example is not verified")
		e.mu.Lock()
		e.dns["olive.example"] = []string{record}
		e.mu.Unlock()
		has(t, owner.Submit(samltest.Form{Action: e.base + "/org/sso/domains/verify"}), 200, "<strong>olive.example</strong>: verified.")
		has(t, owner.Submit(samltest.Form{Action: e.base + "/org/sso/test"}), 200, "Everything is in order")

		made := owner.Submit(samltest.Form{Action: e.base + "/org/sso/scim-token"})
		token := regexp.MustCompile(`scim_[A-Za-z0-9]{20,}`).FindString(made.Body)
		if made.Status != 200 || token == "" {
			t.Fatalf("the SCIM token: %d %.500s", made.Status, made.Body)
		}
		has(t, made, 200, `<code id="scim-base-url">`+e.base+`/scim/v2</code>`)
		if strings.Contains(owner.Get(e.base+"/org/sso").Body, token) {
			t.Error("the SCIM token is shown again")
		}

		// A bad save keeps what was typed and says what is wrong.
		bad := owner.Submit(samltest.Form{Action: e.base + "/org/sso", Values: url.Values{"idp_metadata_xml": {"<nope"}, "email_attribute": {"mail"}}})
		has(t, bad, 422, "is not XML", `value="mail"`)

		// The identity provider knows Perch by its metadata.
		md := samltest.NewBrowser(t).Get(e.base + "/api/v1/auth/saml/metadata?org_id=" + e.register("Someone Else").OrgID)
		if md.Status != 404 {
			t.Fatalf("another organisation's metadata: %d", md.Status)
		}
		orgID := regexp.MustCompile(`metadata\?org_id=([a-z0-9]+)`).FindStringSubmatch(p.Body)[1]
		e.idp.AddServiceProvider("perch", samltest.NewBrowser(t).Get(e.base+"/api/v1/auth/saml/metadata?org_id="+orgID).Body)
		e.idp.AddUser("nia", "nias idp password", "nia@olive.example", "Nia Newcomer")

		nia := samltest.NewBrowser(t)
		has(t, nia.Get(e.base+"/signin"), 200, `href="/signin/sso?next=`)
		has(t, nia.Get(e.base+"/signin/sso?next=/org"), 200, "Work e-mail address or organisation")
		found := nia.Submit(samltest.Form{Action: e.base + "/signin/sso", Values: url.Values{"who": {"nia@olive.example"}, "next": {"/org"}}})
		if found.Status != 303 || !strings.HasPrefix(found.Location, "/api/v1/auth/saml/login?org_id="+orgID) {
			t.Fatalf("discovery: %d %q %.300s", found.Status, found.Location, found.Body)
		}
		done := nia.Submit(e.idp.SignIn(nia, e.base+found.Location, "nia", "nias idp password"))
		if done.Status != 302 || done.Location != "/org" {
			t.Fatalf("the sign-in ended with %d %q", done.Status, done.Location)
		}
		has(t, nia.Get(e.base+"/org"), 200, "Nia Newcomer", "Olive Owner")

		// Unknown: said on the same page, neutrally.
		has(t, nia.Submit(samltest.Form{Action: e.base + "/signin/sso", Values: url.Values{"who": {"someone@elsewhere.example"}}}), 404, "No single sign-on is set up")

		// Refused at the ACS: back to sign in, with the reason.
		e.register("Eve Elsewhere")
		e.idp.AddUser("eve", "eves idp password", emailFor("Eve Elsewhere"), "Eve")
		eve := samltest.NewBrowser(t)
		back := eve.Submit(e.idp.SignIn(eve, e.base+found.Location, "eve", "eves idp password"))
		if back.Status != 302 || !strings.HasPrefix(back.Location, "/signin?error=") {
			t.Fatalf("the refusal: %d %q", back.Status, back.Location)
		}
		has(t, eve.Get(e.base+back.Location), 200, "belongs to another organisation")

		// Not the owner's page for anyone else.
		has(t, nia.Get(e.base+"/org/sso"), 403, "Only owners")
	})
}
