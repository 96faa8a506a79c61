package saml

import (
	"crypto/x509"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beevik/etree"

	"github.com/perch-dev/perch/internal/samltest"
)

// The values a test service provider and identity provider use.
const (
	testIssuer   = "https://idp.example/metadata"
	testAudience = "https://perch.example/api/v1/auth/saml/metadata?org_id=org-1"
	testACS      = "https://perch.example/api/v1/auth/saml/acs"
	testEmail    = "bob@example.com"
)

// testKeys are the identity provider's key and a stranger's, made once:
// a 2048-bit RSA key takes a good part of a second, and every test and
// fuzz seed here signs with one of these two.
var testKeys = sync.OnceValues(func() (idp, stranger samltest.KeyPair) {
	var err error
	if idp, err = samltest.GenerateKeyPair("idp"); err != nil {
		panic(err)
	}
	if stranger, err = samltest.GenerateKeyPair("stranger"); err != nil {
		panic(err)
	}
	return idp, stranger
})

// forger signs as the identity provider the trust of newTrust trusts.
func forger() samltest.Forger {
	idp, _ := testKeys()
	return samltest.Forger{Keys: idp, Issuer: testIssuer}
}

// newTrust is what a response answering requestID is checked against, at now.
func newTrust(requestID string, now time.Time) Trust {
	idp, _ := testKeys()
	return Trust{IDPEntityID: testIssuer, Certs: []*x509.Certificate{idp.Cert}, Audience: testAudience, ACSURL: testACS,
		RequestID: requestID, Now: now}
}

// spec is a good response about nameID answering requestID, its assertion
// signed.
func spec(nameID, requestID string, now time.Time) samltest.Spec {
	return samltest.Spec{NameID: nameID, Audience: testAudience, Destination: testACS, InResponseTo: requestID,
		Now: now, SignAssertion: true}
}

// raw is el as the bytes of a decoded SAMLResponse.
func raw(tb testing.TB, el *etree.Element) []byte {
	tb.Helper()
	doc := etree.NewDocument()
	doc.SetRoot(el)
	b, err := doc.WriteToBytes()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// verify parses and verifies b against t.
func verify(t Trust, b []byte) (*Identity, error) {
	r, err := ParseResponse(b)
	if err != nil {
		return nil, err
	}
	return t.Verify(r)
}

// wantRefusal checks that err is a *Refusal whose reason holds want, and
// whether it was refused after the signatures verified.
func wantRefusal(tb testing.TB, err error, want string, verified bool) {
	tb.Helper()
	ref, ok := errors.AsType[*Refusal](err)
	switch {
	case !ok:
		tb.Fatalf("error %v (%T), want a *Refusal with %q", err, err, want)
	case !strings.Contains(ref.Reason, want):
		tb.Fatalf("refused with %q, want %q", ref.Reason, want)
	case ref.Verified != verified:
		tb.Fatalf("refusal %q has Verified %v, want %v", ref.Reason, ref.Verified, verified)
	}
}
