package server

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/base64"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beevik/etree"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/samltest"
	"github.com/perch-dev/perch/internal/store"
)

// testIDPMetadata is the metadata of an identity provider that no test
// signs in through, for tests of the settings alone.
var testIDPMetadata = sync.OnceValue(func() string {
	kp, err := samltest.GenerateKeyPair("idp.example.com")
	if err != nil {
		panic(err)
	}
	md, err := samltest.Metadata(kp, "https://idp.example.com/saml")
	if err != nil {
		panic(err)
	}
	return md
})

// samlEnv is a Perch server on a real loopback listener, an organisation
// whose owner sets SAML up, and crewjam's samlidp as the organisation's
// identity provider on a listener of its own.
type samlEnv struct {
	t     testing.TB
	a     *api
	base  string
	idp   *samltest.IdP
	owner *account
	ts    *httptest.Server // the server's listener, for WebSockets

	mu  sync.Mutex
	dns map[string][]string // what the stub resolver answers, by name
}

// newSAMLEnv starts the server and the identity provider. The server's
// clock is set to the real time, which the identity provider keeps; tests
// move it from there.
func newSAMLEnv(t testing.TB, s *store.Store, adjust ...func(*Options)) *samlEnv {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &samlEnv{t: t, base: "http://" + l.Addr().String(), dns: map[string][]string{}}
	e.a = newAPI(t, s, append([]func(*Options){func(o *Options) {
		o.BaseURL = e.base
		o.SSO.SAMLMetadataLoopback = true
		o.SSO.LookupTXT = e.lookupTXT
	}}, adjust...)...)
	hs := &httptest.Server{Listener: l, Config: &http.Server{Handler: e.a.srv}}
	hs.Start()
	t.Cleanup(hs.Close)
	e.ts = hs
	e.a.clock.Advance(time.Since(e.a.clock.Now()))
	e.idp = samltest.NewIdP(t)
	e.owner = e.a.register("Olive Owner")
	return e
}

// lookupTXT is the stub resolver: the records set with setTXT, never the
// network.
func (e *samlEnv) lookupTXT(_ context.Context, name string) ([]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.dns[name]; ok {
		return r, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

func (e *samlEnv) setTXT(name string, records ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dns[name] = records
}

// configure stores the organisation's SAML settings over the identity
// provider's metadata, as its owner, with settings over enabled: true, and
// registers Perch's metadata at the identity provider. It answers the
// settings.
func (e *samlEnv) configure(settings map[string]any) map[string]any {
	e.t.Helper()
	body := map[string]any{"idp_metadata_xml": e.idp.Metadata(), "enabled": true}
	maps.Copy(body, settings)
	res := expect(e.t, e.a.call("PUT", "/api/v1/org/saml", e.owner.Access, body), 200)
	md := samltest.NewBrowser(e.t).Get(e.base + samlMetadataPath + "?org_id=" + e.owner.OrgID)
	if md.Status != 200 {
		e.t.Fatalf("metadata: %d %s", md.Status, md.Body)
	}
	e.idp.AddServiceProvider("perch", md.Body)
	return res.Data()
}

// invite has the owner invite name with role, and that person register
// through the mailed link (on this server's base URL).
func (e *samlEnv) invite(name, role string) *account {
	e.t.Helper()
	email := emailFor(name)
	expect(e.t, e.a.call("POST", "/api/v1/org/invitations", e.owner.Access, map[string]string{"email": email, "role": role}), 201)
	link, err := url.Parse(e.a.mail.WaitFor(e.t, email).Link())
	if err != nil || link.Path != "/invitations/accept" {
		e.t.Fatalf("mailed link %v, %v", link, err)
	}
	res := expect(e.t, e.a.call("POST", "/api/v1/auth/register", "", map[string]string{
		"name": name, "email": email, "password": goodPassword, "invitation_token": link.Query().Get("token")}), 201)
	u := res.Data()["user"].(map[string]any)
	return &account{ID: u["id"].(string), Email: email, OrgID: u["org_id"].(string)}
}

func (e *samlEnv) loginURL(extra string) string {
	return e.base + samlLoginPath + "?org_id=" + url.QueryEscape(e.owner.OrgID) + extra
}

func (e *samlEnv) entityID() string { return e.base + samlMetadataPath + "?org_id=" + e.owner.OrgID }

// startSignIn begins a sign-in at Perch as b and answers the AuthnRequest's
// ID and the RelayState, as the identity provider receives them.
func (e *samlEnv) startSignIn(b *samltest.Browser) (id, relay string) {
	e.t.Helper()
	p := b.Get(e.loginURL(""))
	u, err := url.Parse(p.Location)
	if err != nil || p.Status != http.StatusFound {
		e.t.Fatalf("login: %d %q", p.Status, p.Location)
	}
	return authnRequestID(e.t, u), u.Query().Get("RelayState")
}

// authnRequestID is the ID of the AuthnRequest that the redirect to the
// identity provider, to, carries.
func authnRequestID(tb testing.TB, to *url.URL) string {
	tb.Helper()
	raw, err := base64.StdEncoding.DecodeString(to.Query().Get("SAMLRequest"))
	if err != nil {
		tb.Fatal(err)
	}
	xml, err := io.ReadAll(flate.NewReader(bytes.NewReader(raw)))
	if err != nil {
		tb.Fatal(err)
	}
	m := regexp.MustCompile(` ID="([^"]+)"`).FindSubmatch(xml)
	if m == nil {
		tb.Fatalf("no ID in the AuthnRequest %s", xml)
	}
	return string(m[1])
}

// forger signs as the organisation's identity provider.
func (e *samlEnv) forger() samltest.Forger {
	return samltest.Forger{Keys: e.idp.Keys, Issuer: e.idp.EntityID()}
}

// spec is a good response about nameID answering the sign-in inResponseTo,
// with a signed assertion.
func (e *samlEnv) spec(nameID, inResponseTo string) samltest.Spec {
	return samltest.Spec{NameID: nameID, Audience: e.entityID(), Destination: e.base + samlACSPath,
		InResponseTo: inResponseTo, Now: e.a.clock.Now(), SignAssertion: true}
}

// post brings a response to the ACS as b, with relay.
func (e *samlEnv) post(b *samltest.Browser, response *etree.Element, relay string) samltest.Page {
	e.t.Helper()
	return b.Submit(samltest.Form{Action: e.base + samlACSPath,
		Values: url.Values{"SAMLResponse": {samltest.Encode(e.t, response)}, "RelayState": {relay}}})
}

// signedIn checks that p ends a sign-in at target with the session's
// cookies, and that b's session works: the API answers as email.
func (e *samlEnv) signedIn(b *samltest.Browser, p samltest.Page, target, email string) {
	e.t.Helper()
	if p.Status != http.StatusFound || p.Location != target {
		e.t.Fatalf("sign-in ended with %d %q, want 302 %q", p.Status, p.Location, target)
	}
	cookies := strings.Join(p.Header.Values("Set-Cookie"), "\n")
	for _, want := range []string{perch.SessionCookie + "=pac_", perch.RefreshCookie + "=prf_", "Path=" + perch.RefreshPath, "HttpOnly", "SameSite=Lax"} {
		if !strings.Contains(cookies, want) {
			e.t.Errorf("the cookies lack %q:\n%s", want, cookies)
		}
	}
	me := b.Get(e.base + "/api/v1/users/me")
	if me.Status != 200 || !strings.Contains(me.Body, `"email":"`+email+`"`) {
		e.t.Fatalf("the session does not work: %d %s", me.Status, me.Body)
	}
}

// refusedWith checks that p sends the browser back to sign in with a
// message holding want, and sets no session.
func refusedWith(t testing.TB, p samltest.Page, want string) {
	t.Helper()
	msg, ok := strings.CutPrefix(p.Location, "/signin?error=")
	if p.Status != http.StatusFound || !ok {
		t.Fatalf("answered %d %q, want a refusal: %.300s", p.Status, p.Location, p.Body)
	}
	msg, _ = url.QueryUnescape(msg)
	if !strings.Contains(msg, want) {
		t.Errorf("refused with %q, want %q", msg, want)
	}
	if strings.Contains(strings.Join(p.Header.Values("Set-Cookie"), "\n"), perch.SessionCookie+"=pac_") {
		t.Error("a refused sign-in set a session")
	}
}

// audited returns the newest entries of action, or fails.
func (e *samlEnv) audited(action string) []*perch.AuditEntry {
	e.t.Helper()
	entries, _, err := e.a.store.AuditLog(e.t.Context(), perch.AuditFilter{Action: action, Page: perch.Page{Limit: 50}})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*perch.AuditEntry
	for _, en := range entries {
		if en.Action == action {
			out = append(out, en)
		}
	}
	if len(out) == 0 {
		e.t.Fatalf("no %s entry", action)
	}
	return out
}
