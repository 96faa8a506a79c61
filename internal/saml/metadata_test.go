package saml

import (
	"crypto/x509"
	"regexp"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/samltest"
)

// testMetadata is the metadata of the test identity provider, as crewjam's
// identity provider writes it.
func testMetadata(tb testing.TB) string {
	tb.Helper()
	idp, _ := testKeys()
	md, err := samltest.Metadata(idp, "https://idp.example")
	if err != nil {
		tb.Fatal(err)
	}
	return md
}

var x509Certificates = regexp.MustCompile(`(?s)<X509Certificate[^>]*>.*?</X509Certificate>`)

// TestParseMetadata: the entity ID, the HTTP-Redirect address and the
// signing certificate (not the encryption one) of an identity provider,
// alone or the one identity provider of an EntitiesDescriptor.
func TestParseMetadata(t *testing.T) {
	t.Parallel()
	idp, _ := testKeys()
	good := testMetadata(t)
	entities := `<EntitiesDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata">` + good +
		`<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://sp.example"><SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"/></EntityDescriptor>` +
		`</EntitiesDescriptor>`
	for name, data := range map[string]string{"EntityDescriptor": good, "EntitiesDescriptor": entities} {
		md, err := ParseMetadata([]byte(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if md.EntityID != "https://idp.example/metadata" || md.SSOURL != "https://idp.example/sso" || md.Descriptor == nil {
			t.Errorf("%s: %+v", name, md)
		}
		if len(md.Certs) != 1 || !md.Certs[0].Equal(idp.Cert) {
			t.Errorf("%s: %d certificates, want the signing one", name, len(md.Certs))
		}
	}
}

// TestParseMetadataRefuses: each missing or unreadable part is named, as
// the end of a sentence about "the metadata".
func TestParseMetadataRefuses(t *testing.T) {
	t.Parallel()
	good := testMetadata(t)
	cases := []struct{ name, data, want string }{
		{"not XML", "entityID=x", "is not XML"},
		{"another document", `<Response xmlns="urn:oasis:names:tc:SAML:2.0:protocol"/>`, "is not SAML metadata"},
		{"no entity ID", strings.Replace(good, `entityID="https://idp.example/metadata"`, "", 1), "names no entityID"},
		{"a service provider", `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x"/>`, "holds 0 IDPSSODescriptor"},
		{"two identity providers", `<EntitiesDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata">` + good + good + `</EntitiesDescriptor>`, "describes 2 identity providers"},
		{"no HTTP-Redirect", strings.ReplaceAll(good, "HTTP-Redirect", "HTTP-Artifact"), "HTTP-Redirect binding"},
		{"no certificate", x509Certificates.ReplaceAllString(good, ""), "has no signing certificate"},
		{"a certificate not in base64", x509Certificates.ReplaceAllString(good, "<X509Certificate>*</X509Certificate>"), "not base64"},
		{"a certificate that is not one", x509Certificates.ReplaceAllString(good, "<X509Certificate>AAAA</X509Certificate>"), "cannot be read"},
		{"5,001 elements", strings.Replace(good, "<NameIDFormat>", strings.Repeat("<Extensions/>", 5001)+"<NameIDFormat>", 1), "holds more than 5000 elements"},
		{"a document type declaration", `<!DOCTYPE x>` + good, "document type declaration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md, err := ParseMetadata([]byte(c.data))
			if err == nil {
				t.Fatalf("accepted as %+v", md)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("the metadata %v; want %q", err, c.want)
			}
		})
	}
}

// TestCertsPEM: certificates stored as PEM read back the same, the first
// to expire is found, and nothing stored is an error.
func TestCertsPEM(t *testing.T) {
	t.Parallel()
	idp, stranger := testKeys()
	stored := CertsPEM([]*x509.Certificate{idp.Cert, stranger.Cert})
	certs, err := ParseCertsPEM(stored)
	if err != nil || len(certs) != 2 || !certs[0].Equal(idp.Cert) || !certs[1].Equal(stranger.Cert) {
		t.Fatalf("ParseCertsPEM = %d certificates, %v", len(certs), err)
	}
	want := min(idp.Cert.NotAfter.Unix(), stranger.Cert.NotAfter.Unix())
	if got := FirstExpiry(certs); got.Unix() != want {
		t.Errorf("FirstExpiry = %v, want %v", got, want)
	}
	if _, err := ParseCertsPEM(""); err == nil {
		t.Error("ParseCertsPEM(\"\") accepted")
	}
}
