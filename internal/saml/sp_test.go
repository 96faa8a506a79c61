package saml

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beevik/etree"
)

// testSP is a service provider of the test organisation, with a key of its
// own (made once: NewKey makes a 2048-bit key).
var testSP = sync.OnceValues(func() (ServiceProvider, error) {
	key, certPEM, err := NewKey("Perch SAML org-1", time.Now(), nil)
	if err != nil {
		return ServiceProvider{}, err
	}
	block, _ := pem.Decode([]byte(certPEM))
	cert, err := x509.ParseCertificate(block.Bytes)
	return ServiceProvider{EntityID: testAudience, ACSURL: testACS, Certificate: cert, Key: key}, err
})

func newSP(t *testing.T) ServiceProvider {
	t.Helper()
	sp, err := testSP()
	if err != nil {
		t.Fatal(err)
	}
	if sp.IDP, err = ParseMetadata([]byte(testMetadata(t))); err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestServiceProviderMetadata: the signing certificate and the HTTP-POST
// ACS alone, under this organisation's entity ID.
func TestServiceProviderMetadata(t *testing.T) {
	t.Parallel()
	sp := newSP(t)
	out, err := sp.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "<?xml") {
		t.Errorf("no XML declaration: %.60s", out)
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(out); err != nil {
		t.Fatal(err)
	}
	if id := doc.Root().SelectAttrValue("entityID", ""); id != testAudience {
		t.Errorf("entityID %q, want %q", id, testAudience)
	}
	keys := doc.FindElements("//KeyDescriptor")
	if len(keys) != 1 || keys[0].SelectAttrValue("use", "") != "signing" {
		t.Errorf("%d key descriptors, want the signing one alone", len(keys))
	}
	acs := doc.FindElements("//AssertionConsumerService")
	if len(acs) != 1 || acs[0].SelectAttrValue("Binding", "") != "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" ||
		acs[0].SelectAttrValue("Location", "") != testACS {
		t.Errorf("%d assertion consumer services, want the HTTP-POST one at %s alone", len(acs), testACS)
	}
	sp.IDP = nil
	if _, err := sp.Metadata(); err == nil {
		t.Error("Metadata without the identity provider's metadata succeeded")
	}
}

// TestAuthnRequest: a signed request to the identity provider's
// HTTP-Redirect address, carrying the RelayState, whose answer the
// library then checks.
func TestAuthnRequest(t *testing.T) {
	t.Parallel()
	sp := newSP(t)
	id, to, err := sp.AuthnRequest("relay-1")
	if err != nil {
		t.Fatal(err)
	}
	q := to.Query()
	if id == "" || to.Host != "idp.example" || to.Path != "/sso" || q.Get("SAMLRequest") == "" || q.Get("RelayState") != "relay-1" ||
		q.Get("Signature") == "" || q.Get("SigAlg") == "" {
		t.Fatalf("AuthnRequest = %q, %s", id, to)
	}

	// The library's checks of a good answer read the assertion Verify did;
	// an answer to another request does not pass them.
	now := time.Now()
	good := raw(t, forger().Response(t, spec(testEmail, id, now)))
	ident, err := verify(newTrust(id, now), good)
	if err != nil {
		t.Fatal(err)
	}
	assertionID, err := sp.LibraryCheck(good, id)
	if err != nil || assertionID != ident.AssertionID {
		t.Fatalf("LibraryCheck = %q, %v; want %q", assertionID, err, ident.AssertionID)
	}
	if _, err := sp.LibraryCheck(good, "another-request"); err == nil {
		t.Error("the library accepted an answer to another request")
	}
}
