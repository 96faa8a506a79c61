package saml

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/beevik/etree"

	"github.com/perch-dev/perch/internal/samltest"
)

// FuzzVerify brings mutations of signed responses (good ones, and ones
// each check refuses) to ParseResponse and Verify. Nothing may panic, a
// refusal is a *Refusal with a reason, and an accepted response names an
// assertion and an address that the identity provider signed: a mutation
// can change only what no signature covers.
func FuzzVerify(f *testing.F) {
	now := time.Now()
	fg := forger()
	_, strangerKeys := testKeys()
	stranger := samltest.Forger{Keys: strangerKeys, Issuer: testIssuer}
	signedIDs, signedEmails := map[string]bool{}, map[string]bool{testEmail: true, "robert@example.com": true}
	add := func(r *etree.Element, attribute bool) {
		for _, a := range r.FindElements("//Assertion") {
			signedIDs[a.SelectAttrValue("ID", "")] = true
		}
		f.Add(raw(f, r), attribute)
	}
	for _, sign := range []struct{ response, assertion bool }{{false, true}, {true, false}, {true, true}} {
		s := spec(testEmail, "req-1", now)
		s.SignResponse, s.SignAssertion = sign.response, sign.assertion
		s.Attributes = map[string]string{"mail": "robert@example.com", "displayName": "Bob Member"}
		add(fg.Response(f, s), false)
		add(fg.Response(f, s), true)
	}
	s := spec(testEmail, "", now)
	s.Groups = []string{"a", "b"}
	add(fg.Response(f, s), false) // started at the identity provider
	s = spec(testEmail, "req-1", now)
	s.Audience = "https://perch.example/api/v1/auth/saml/metadata?org_id=someone-else"
	add(fg.Response(f, s), false)
	s = spec("mallory@example.com", "req-1", now)
	f.Add(raw(f, stranger.Response(f, s)), false) // signed, but not by the identity provider
	s.SignAssertion = false
	f.Add(raw(f, fg.Response(f, s)), false) // not signed at all
	wrapped := spec("mallory@example.com", "req-1", now)
	add(fg.Wrap(f, wrapped, fg.Assertion(wrapped), fg.Sign(f, fg.Assertion(spec(testEmail, "req-1", now)))), false)

	f.Fuzz(func(t *testing.T, b []byte, attribute bool) {
		trust := newTrust("req-1", now)
		if attribute {
			trust.EmailAttribute = "mail"
		}
		id, err := verify(trust, b)
		if err != nil {
			if ref, ok := errors.AsType[*Refusal](err); !ok || ref.Reason == "" {
				t.Fatalf("error %v (%T), want a *Refusal with a reason", err, err)
			}
			return
		}
		checkIdentity(t, id, trust)
		if !signedIDs[id.AssertionID] || !signedEmails[id.Email] {
			t.Fatalf("accepted %+v, which the identity provider did not sign", id)
		}
	})
}

// FuzzParseMetadata: nothing panics, a refusal says what is wrong in one
// line, and accepted metadata has what a sign-in needs, its certificates
// reading back the same from how they are stored.
func FuzzParseMetadata(f *testing.F) {
	good := testMetadata(f)
	f.Add([]byte(good))
	f.Add([]byte(`<EntitiesDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata">` + good + `</EntitiesDescriptor>`))
	f.Add([]byte(strings.ReplaceAll(good, "HTTP-Redirect", "HTTP-Artifact")))
	f.Add([]byte(x509Certificates.ReplaceAllString(good, "<X509Certificate>AAAA</X509Certificate>")))
	f.Add([]byte(`<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x"/>`))
	f.Add([]byte(`<!DOCTYPE x>` + good))
	f.Fuzz(func(t *testing.T, data []byte) {
		md, err := ParseMetadata(data)
		if err != nil {
			if msg := err.Error(); msg == "" || strings.Contains(msg, "\n") {
				t.Fatalf("the metadata %q: want one line", msg)
			}
			return
		}
		if md.Descriptor == nil || md.EntityID == "" || md.EntityID != strings.TrimSpace(md.EntityID) {
			t.Fatalf("accepted without an entity ID: %+v", md)
		}
		if !strings.HasPrefix(md.SSOURL, "https://") && !strings.HasPrefix(md.SSOURL, "http://") {
			t.Fatalf("accepted the sign-in address %q", md.SSOURL)
		}
		certs, err := ParseCertsPEM(CertsPEM(md.Certs))
		if err != nil || len(certs) != len(md.Certs) {
			t.Fatalf("the certificates stored read back as %d, %v; want %d", len(certs), err, len(md.Certs))
		}
		for i := range certs {
			if !certs[i].Equal(md.Certs[i]) {
				t.Fatalf("certificate %d reads back another", i)
			}
		}
	})
}

// FuzzScanXML holds the streaming scan to what the parse after it builds:
// a document the scan lets through is, as etree reads it, within the
// limits, and one it finds malformed etree does not read into an element
// either. Small limits let the fuzzer cross each of them.
func FuzzScanXML(f *testing.F) {
	now := time.Now()
	f.Add(raw(f, forger().Response(f, spec(testEmail, "req-1", now))))
	for _, s := range []string{
		`<r><a/><a/><a/></r>`, `<r><a><a><a><a><a/></a></a></a></a></r>`, `<r><a b="" c="" d="" e="" f=""/></r>`,
		`<r><!----><!----><!----><?p?></r>`, `<!DOCTYPE r [<!ENTITY a "aa">]><r/>`, `<?xml version="1.0" encoding="latin1"?><r/>`,
		`<a></b>`, `<a>`, ``, `<r xmlns:x="u"><x:a x:b=""/></r>`, `<r><![CDATA[x]]></r>`,
	} {
		f.Add([]byte(s))
	}
	small := Limits{Size: 4096, Elements: 20, Depth: 5, Attributes: 4, Markup: 3}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, l := range []Limits{small, ResponseLimits} {
			err := scanXML(b, l)
			se, ok := errors.AsType[*shapeError](err)
			switch {
			case err != nil && (!ok || se.what == ""):
				t.Fatalf("error %v (%T), want a *shapeError", err, err)
			case err == nil && len(b) > l.Size:
				t.Fatalf("%d bytes let through, past %d", len(b), l.Size)
			}
			doc := etree.NewDocument()
			if doc.ReadFromBytes(b) != nil || doc.Root() == nil {
				continue
			}
			if ok && se.malformed {
				t.Fatalf("malformed to the scan (%v), yet etree reads it", err)
			}
			if err == nil {
				elements, depth, attrs := shape(doc.Root(), 1)
				if elements > l.Elements || depth > l.Depth || attrs > l.Attributes {
					t.Fatalf("let through, and etree reads %d elements, %d deep, up to %d attributes, past %+v", elements, depth, attrs, l)
				}
			}
		}
	})
}

// shape counts the elements under el (el included), their deepest nesting
// from el at depth, and the most attributes on one of them.
func shape(el *etree.Element, depth int) (elements, deepest, attrs int) {
	elements, deepest, attrs = 1, depth, len(el.Attr)
	for _, c := range el.ChildElements() {
		e, d, a := shape(c, depth+1)
		elements, deepest, attrs = elements+e, max(deepest, d), max(attrs, a)
	}
	return elements, deepest, attrs
}
