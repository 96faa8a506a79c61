package server

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/saml"
	"github.com/perch-dev/perch/internal/samltest"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// The tests of the assertion consumer service's defences: its bounds on
// what it reads, the binding of a sign-in to its browser, and whose audit
// log a refusal goes to.

// hostileResponse is a SAMLResponse document of n elements inside the
// root, each made by one(i), as an attacker posts it without signing in.
func hostileResponse(n int, one func(i int) string) []byte {
	var b bytes.Buffer
	b.WriteString(`<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" ID="_x" Version="2.0">`)
	for i := range n {
		b.WriteString(one(i))
	}
	b.WriteString(`</samlp:Response>`)
	return b.Bytes()
}

// siblings is n empty elements side by side.
func siblings(n int) []byte {
	return hostileResponse(n, func(int) string { return "<a/>" })
}

// attack is the review's body: a response whose assertion names the
// organisation of entityID as its audience, followed by 150,000 empty
// siblings, some 850 KB as a form field, under the 1 MiB request limit.
func attack(entityID string) []byte {
	return hostileResponse(150_001, func(i int) string {
		if i == 0 {
			return `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"><saml:Conditions><saml:AudienceRestriction>` +
				`<saml:Audience>` + entityID + `</saml:Audience></saml:AudienceRestriction></saml:Conditions></saml:Assertion>`
		}
		return "<a/>"
	})
}

// nested is n elements, each inside the one before.
func nested(n int) []byte {
	return []byte(`<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol">` +
		strings.Repeat("<a>", n) + strings.Repeat("</a>", n) + `</samlp:Response>`)
}

// postRaw brings a document to the ACS as b, with relay.
func (e *samlEnv) postRaw(b *samltest.Browser, doc []byte, relay string) samltest.Page {
	e.t.Helper()
	return b.Submit(samltest.Form{Action: e.base + samlACSPath,
		Values: url.Values{"SAMLResponse": {base64.StdEncoding.EncodeToString(doc)}, "RelayState": {relay}}})
}

// failuresAudited are the organisation's audited refused sign-ins.
func (e *samlEnv) failuresAudited(orgID string) []*perch.AuditEntry {
	e.t.Helper()
	entries, _, err := e.a.store.AuditLog(e.t.Context(), perch.AuditFilter{Action: perch.AuditSignInFailed, OrgID: orgID, Page: perch.Page{Limit: 200}})
	if err != nil {
		e.t.Fatal(err)
	}
	return entries
}

// TestSAMLBoundsTheResponseBeforeParsing: bodies under the 1 MiB request
// limit whose parse would cost far more than a real response's (the
// review's 150,000 empty siblings, and each other shape a real response
// never has) are refused with a message about their size or shape. Each
// answers a sign-in started in this browser, so that nothing but the
// bounds stops them before the parse; none is audited (no signature was
// verified); and the identity provider's own responses still sign in.
func TestSAMLBoundsTheResponseBeforeParsing(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		bob := e.invite("Bob Member", "member")
		e.configure(nil)
		e.idp.AddUser("bob", "bobs idp password", bob.Email, "Bob at the IdP")

		for _, c := range []struct {
			name, want string
			doc        []byte
		}{
			{"150,000 siblings", "larger than the 256 KiB Perch reads", attack(e.entityID())},
			{"280 KB within the form's size", "larger than the 256 KiB Perch reads", siblings(70_000)},
			{"60,000 siblings within the size", "more than 2000 elements", siblings(60_000)},
			{"10,000 deep", "nests elements more than 32 deep", nested(10_000)},
			{"33 deep", "nests elements more than 32 deep", nested(32)}, // the root is the 33rd
			{"an element of 5,000 attributes", "more than 32 attributes", hostileResponse(1, func(int) string {
				var b strings.Builder
				b.WriteString("<a")
				for i := range 5000 {
					fmt.Fprintf(&b, ` a%d=""`, i)
				}
				b.WriteString("/>")
				return b.String()
			})},
			{"10,000 comments", "more than 16 comments", hostileResponse(10_000, func(int) string { return "<!---->" })},
			{"a document type declaration", "document type declaration",
				append([]byte(`<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">]>`), siblings(1)...)},
		} {
			t.Run(c.name, func(t *testing.T) {
				if len(c.doc)*4/3 >= 1<<20 {
					t.Fatalf("the body (%d bytes decoded) is not under the request limit", len(c.doc))
				}
				b := samltest.NewBrowser(t)
				_, relay := e.startSignIn(b)
				refusedWith(t, e.postRaw(b, c.doc, relay), c.want)
			})
		}
		if n := len(e.failuresAudited(e.owner.OrgID)); n != 0 {
			t.Errorf("%d refusals of unsigned bodies audited for the organisation, want 0", n)
		}

		// Real responses fit: the identity provider's, and one signed twice
		// with 150 group values, the most Entra ID puts in a token.
		b := samltest.NewBrowser(t)
		form := e.idp.SignIn(b, e.loginURL(""), "bob", "bobs idp password")
		raw, err := base64.StdEncoding.DecodeString(form.Values.Get("SAMLResponse"))
		if err != nil {
			t.Fatal(err)
		}
		roomy(t, "the identity provider's response", raw)
		e.signedIn(b, b.Submit(form), samlDefaultTarget, bob.Email)

		b = samltest.NewBrowser(t)
		id, relay := e.startSignIn(b)
		spec := e.spec(bob.Email, id)
		spec.SignResponse = true
		spec.Attributes = map[string]string{"displayName": "Bob Member", "givenName": "Bob", "surname": "Member", "email": bob.Email}
		for i := range 150 {
			spec.Groups = append(spec.Groups, fmt.Sprintf("a1b2c3d4-0000-4000-8000-%012d", i))
		}
		response := e.forger().Response(t, spec)
		doc, err := base64.StdEncoding.DecodeString(samltest.Encode(t, response))
		if err != nil {
			t.Fatal(err)
		}
		roomy(t, "a response with 150 groups", doc)
		e.signedIn(b, e.post(b, response, relay), samlDefaultTarget, bob.Email)
	})
}

// roomy checks that a real response stays within a quarter of the ACS's
// limits of size and elements and a third of those of depth and
// attributes, so that the limits leave room for what other identity
// providers add.
func roomy(t *testing.T, what string, doc []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	depth, deepest, elements, attrs := 0, 0, 0, 0
	for {
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			elements++
			depth++
			deepest, attrs = max(deepest, depth), max(attrs, len(tok.Attr))
		case xml.EndElement:
			depth--
		}
	}
	t.Logf("%s: %d bytes, %d elements, %d deep, at most %d attributes", what, len(doc), elements, deepest, attrs)
	l := saml.ResponseLimits
	if len(doc) > l.Size/4 || elements > l.Elements/4 || deepest > l.Depth/3 || attrs > l.Attributes/3 {
		t.Errorf("%s comes close to the limits (%d bytes, %d elements, %d deep, %d attributes)", what, len(doc), elements, deepest, attrs)
	}
}

// TestSAMLBindsTheSignInToItsBrowser: a sign-in started at Perch is
// finished only by the browser that started it. The response to browser
// A's sign-in, brought by a browser without A's cookie (none, or its own
// sign-in's), is refused with a message that says to start again in this
// browser, and leaves A's sign-in as it was: A finishes it afterwards. A
// page that posts a response for a sign-in someone started in their own
// browser cannot make another browser finish it (login CSRF). A response
// to no sign-in, where the organisation allows those, needs no cookie.
func TestSAMLBindsTheSignInToItsBrowser(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		bob := e.invite("Bob Member", "member")
		e.configure(nil)
		e.idp.AddUser("bob", "bobs idp password", bob.Email, "Bob")

		// The cookie: HttpOnly, for the ACS alone, as long as the sign-in
		// waits; over http (this server), without SameSite.
		a := samltest.NewBrowser(t)
		start := a.Get(e.loginURL(""))
		cookie := setCookie(start, samlBindingCookie)
		if cookie == nil || cookie.Value == "" || !cookie.HttpOnly || cookie.Path != samlACSPath ||
			cookie.MaxAge != int(perch.SAMLRequestTTL.Seconds()) || strings.Contains(cookie.Raw, "SameSite") || cookie.Secure {
			t.Fatalf("the binding cookie is %+v", cookie)
		}
		form := e.idp.SignIn(a, e.loginURL(""), "bob", "bobs idp password")

		other := samltest.NewBrowser(t)
		e.idp.SignIn(other, e.loginURL(""), "bob", "bobs idp password") // a sign-in of its own, and its cookie
		for name, b := range map[string]*samltest.Browser{"no cookie": samltest.NewBrowser(t), "another sign-in's cookie": other} {
			t.Run(name, func(t *testing.T) {
				p := b.Submit(form)
				refusedWith(t, p, "start again in this browser")
				if c := setCookie(p, samlBindingCookie); c == nil || c.MaxAge >= 0 || c.Path != samlACSPath {
					t.Errorf("the refusal leaves the binding cookie: %+v", c)
				}
			})
		}
		if n := len(e.failuresAudited(e.owner.OrgID)); n != 0 {
			t.Errorf("%d refusals audited for the organisation before any signature was verified, want 0", n)
		}

		// A finishes: its sign-in was not used up by the refusals.
		p := a.Submit(form)
		e.signedIn(a, p, samlDefaultTarget, bob.Email)
		if c := setCookie(p, samlBindingCookie); c == nil || c.MaxAge >= 0 {
			t.Errorf("the sign-in leaves the binding cookie: %+v", c)
		}

		// Started at the identity provider: no sign-in to bind, no cookie.
		e.configure(map[string]any{"allow_idp_initiated": true})
		b := samltest.NewBrowser(t)
		e.signedIn(b, e.post(b, e.forger().Response(t, e.spec(bob.Email, "")), ""), samlDefaultTarget, bob.Email)
	})
}

// setCookie is the cookie named name that p sets, or nil.
func setCookie(p samltest.Page, name string) *http.Cookie {
	for _, line := range p.Header.Values("Set-Cookie") {
		if c, err := http.ParseSetCookie(line); err == nil && c.Name == name {
			return c
		}
	}
	return nil
}

// TestSAMLBindingCookieOverHTTPS: the identity provider posts to the ACS
// from its own site, which sends no SameSite=Lax cookie with it, so over
// https the cookie is SameSite=None, and Secure as that requires.
func TestSAMLBindingCookieOverHTTPS(t *testing.T) {
	t.Parallel()
	for base, want := range map[string]string{
		"https://perch.example.com": "perch_saml=secret; Path=/api/v1/auth/saml/acs; Max-Age=600; HttpOnly; Secure; SameSite=None",
		"http://localhost:8080":     "perch_saml=secret; Path=/api/v1/auth/saml/acs; Max-Age=600; HttpOnly",
	} {
		s := &Server{opts: Options{BaseURL: base}}
		rec := httptest.NewRecorder()
		s.setSAMLBinding(rec, "secret", int(perch.SAMLRequestTTL.Seconds()))
		if got := rec.Header().Get("Set-Cookie"); got != want {
			t.Errorf("over %s: Set-Cookie %q, want %q", base, got, want)
		}
	}
}

// TestSAMLAuditsOnlyWhatTheIdPSigned: anyone can post a response naming an
// organisation (its audience, or the RelayState of a sign-in they started
// themselves); until its signature verifies against the organisation's
// identity provider, a refusal goes to the server's log and leaves the
// organisation's audit log alone. A response the identity provider did
// sign, refused later, is audited for the organisation.
func TestSAMLAuditsOnlyWhatTheIdPSigned(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		bob := e.invite("Bob Member", "member")
		e.configure(map[string]any{"allow_idp_initiated": true})
		stranger := samltest.Forger{Keys: samltest.NewKeyPair(t, "stranger"), Issuer: e.idp.EntityID()}

		unsigned := e.spec(bob.Email, "")
		unsigned.SignAssertion = false
		b := samltest.NewBrowser(t)
		refusedWith(t, e.post(b, e.forger().Response(t, unsigned), ""), "not signed")
		refusedWith(t, e.post(b, stranger.Response(t, e.spec(bob.Email, "")), ""), "does not verify")
		b = samltest.NewBrowser(t)
		id, relay := e.startSignIn(b) // the attacker's own sign-in names the organisation too
		unsigned.InResponseTo = id
		refusedWith(t, e.post(b, e.forger().Response(t, unsigned), relay), "not signed")
		if got := e.failuresAudited(e.owner.OrgID); len(got) != 0 {
			t.Fatalf("unverified responses audited for the organisation: %+v", got[0])
		}
		if logged := e.a.logs.String(); strings.Count(logged, "saml: sign-in refused before the response was verified") != 3 ||
			!strings.Contains(logged, "claimed_org_id="+e.owner.OrgID) || !strings.Contains(logged, "level=INFO") {
			t.Errorf("the server's log lacks the refusals:\n%s", logged)
		}

		// Signed by the identity provider, refused after: audited.
		expired := e.spec(bob.Email, "")
		expired.Now = expired.Now.Add(-10 * time.Minute)
		refusedWith(t, e.post(samltest.NewBrowser(t), e.forger().Response(t, expired), ""), "has expired")
		misdirected := e.spec(bob.Email, "")
		misdirected.Recipient = "https://evil.test/acs"
		refusedWith(t, e.post(samltest.NewBrowser(t), e.forger().Response(t, misdirected), ""), "recipient is not this server")
		refusedWith(t, e.post(samltest.NewBrowser(t), e.forger().Response(t, e.spec("nobody@example.com", "")), ""), "no account for nobody@example.com")
		got := e.failuresAudited(e.owner.OrgID)
		if len(got) != 3 {
			t.Fatalf("%d refusals of signed responses audited, want 3", len(got))
		}
		for _, en := range got {
			if en.Changes["method"] != "saml" || en.OrgID != e.owner.OrgID {
				t.Errorf("audit entry %+v", en)
			}
		}
	})
}

// BenchmarkSAMLACS is the assertion consumer service in-process on SQLite:
// refusing the review's hostile body (150,000 empty siblings and an
// audience naming the organisation, some 850 KB), as a browser sends it
// (its length known) and streamed (chunked, length unknown); refusing
// 60,000 siblings, small enough to be decoded and scanned up to the
// element limit; and accepting a real response (a sign-in started in the
// browser, its response signed twice and carrying 150 group values)
// through to the session. Making each response (the AuthnRequest and two
// RSA signatures) is left out of the timing.
func BenchmarkSAMLACS(b *testing.B) {
	e := newSAMLEnv(b, storetest.New(b, store.SQLite), func(o *Options) {
		o.Limits.User = perch.Limit{Count: 1 << 30, Period: time.Minute} // the sign-in routes' per-address limit
	})
	bob := e.invite("Bob Member", "member")
	e.configure(map[string]any{"allow_idp_initiated": true})
	acs := func(body, cookie string, streamed bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", samlACSPath, strings.NewReader(body))
		if streamed {
			req.Body, req.ContentLength = io.NopCloser(struct{ io.Reader }{strings.NewReader(body)}), -1
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: samlBindingCookie, Value: cookie})
		}
		rec := httptest.NewRecorder()
		e.a.srv.ServeHTTP(rec, req)
		return rec
	}
	refused := func(doc []byte, streamed bool, want string) func(b *testing.B) {
		return func(b *testing.B) {
			body := url.Values{"SAMLResponse": {base64.StdEncoding.EncodeToString(doc)}}.Encode()
			if len(body) >= defaultBodyLimit {
				b.Fatalf("the body (%d bytes) is not under the request limit", len(body))
			}
			b.ReportAllocs()
			for b.Loop() {
				if rec := acs(body, "", streamed); rec.Code != http.StatusFound || !strings.Contains(rec.Header().Get("Location"), url.QueryEscape(want)) {
					b.Fatalf("answered %d %q", rec.Code, rec.Header().Get("Location"))
				}
			}
		}
	}
	b.Run("refused=150000 siblings", refused(attack(e.entityID()), false, "larger than"))
	b.Run("refused=150000 siblings streamed", refused(attack(e.entityID()), true, "larger than"))
	b.Run("refused=60000 siblings", refused(siblings(60_000), false, "more than 2000 elements"))

	b.Run("accepted=150 groups", func(b *testing.B) {
		type signIn struct{ body, cookie string }
		made := func() signIn {
			rec := httptest.NewRecorder()
			e.a.srv.ServeHTTP(rec, httptest.NewRequest("GET", e.loginURL(""), nil))
			p := samltest.Page{Status: rec.Code, Location: rec.Header().Get("Location"), Header: rec.Header()}
			u, err := url.Parse(p.Location)
			cookie := setCookie(p, samlBindingCookie)
			if err != nil || cookie == nil {
				b.Fatalf("login: %d %q", p.Status, p.Location)
			}
			spec := e.spec(bob.Email, authnRequestID(b, u))
			spec.SignResponse = true
			for i := range 150 {
				spec.Groups = append(spec.Groups, fmt.Sprintf("a1b2c3d4-0000-4000-8000-%012d", i))
			}
			return signIn{url.Values{"SAMLResponse": {samltest.Encode(b, e.forger().Response(b, spec))},
				"RelayState": {u.Query().Get("RelayState")}}.Encode(), cookie.Value}
		}
		b.ReportAllocs()
		b.StopTimer()
		for i := 0; i < b.N; i++ {
			next := made()
			b.StartTimer()
			rec := acs(next.body, next.cookie, false)
			b.StopTimer()
			if rec.Code != http.StatusFound || rec.Header().Get("Location") != samlDefaultTarget {
				b.Fatalf("answered %d %q", rec.Code, rec.Header().Get("Location"))
			}
		}
	})
}
