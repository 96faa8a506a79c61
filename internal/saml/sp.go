package saml

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"encoding/xml"
	"errors"
	"math/big"
	"net/url"
	"time"

	crewjam "github.com/crewjam/saml"
	dsig "github.com/russellhaering/goxmldsig"
)

// ServiceProvider is this server's side of one organisation's single
// sign-on, built on crewjam/saml's: the metadata the identity provider
// reads, the AuthnRequest that starts a sign-in, and the library's own
// checks of a response after Perch's (Trust.Verify).
type ServiceProvider struct {
	EntityID          string // also the URL of its metadata
	ACSURL            string
	Certificate       *x509.Certificate // published in the metadata
	Key               crypto.Signer     // signs AuthnRequests; nil where nothing is signed
	IDP               *Metadata
	AllowIDPInitiated bool
}

// library is sp as crewjam/saml's service provider.
func (sp ServiceProvider) library() (*crewjam.ServiceProvider, error) {
	if sp.IDP == nil {
		return nil, errors.New("saml: no identity provider metadata")
	}
	entity, err := url.Parse(sp.EntityID)
	if err != nil {
		return nil, err
	}
	acs, err := url.Parse(sp.ACSURL)
	if err != nil {
		return nil, err
	}
	return &crewjam.ServiceProvider{
		EntityID: entity.String(), Key: sp.Key, Certificate: sp.Certificate, MetadataURL: *entity, AcsURL: *acs,
		IDPMetadata: sp.IDP.Descriptor, AuthnNameIDFormat: crewjam.EmailAddressNameIDFormat,
		AllowIDPInitiated: sp.AllowIDPInitiated, SignatureMethod: dsig.RSASHA256SignatureMethod,
	}, nil
}

// Metadata is the service provider's metadata document, with its XML
// declaration. It publishes the signing certificate (the AuthnRequests are
// signed), no encryption key (assertions come unencrypted, over HTTPS) and
// the HTTP-POST binding of the ACS alone.
func (sp ServiceProvider) Metadata() ([]byte, error) {
	lib, err := sp.library()
	if err != nil {
		return nil, err
	}
	ed := lib.Metadata()
	for i := range ed.SPSSODescriptors {
		d := &ed.SPSSODescriptors[i]
		var keys []crewjam.KeyDescriptor
		for _, k := range d.KeyDescriptors {
			if k.Use == "signing" {
				keys = append(keys, k)
			}
		}
		d.KeyDescriptors = keys
		var acs []crewjam.IndexedEndpoint
		for _, e := range d.AssertionConsumerServices {
			if e.Binding == crewjam.HTTPPostBinding {
				acs = append(acs, e)
			}
		}
		d.AssertionConsumerServices = acs
	}
	out, err := xml.MarshalIndent(ed, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), out...), nil
}

// AuthnRequest makes a signed AuthnRequest to the identity provider's
// single sign-on address (HTTP-Redirect binding), asking for the answer at
// the ACS (HTTP-POST binding) with relayState. It answers the request's
// ID, which the answer must name, and the address to send the browser to.
func (sp ServiceProvider) AuthnRequest(relayState string) (id string, to *url.URL, err error) {
	lib, err := sp.library()
	if err != nil {
		return "", nil, err
	}
	req, err := lib.MakeAuthenticationRequest(sp.IDP.SSOURL, crewjam.HTTPRedirectBinding, crewjam.HTTPPostBinding)
	if err != nil {
		return "", nil, err
	}
	to, err = req.Redirect(relayState, lib)
	if err != nil {
		return "", nil, err
	}
	return req.ID, to, nil
}

// LibraryCheck has crewjam/saml check a decoded response as well,
// answering to requestID ("" for a sign-in the identity provider started),
// after Trust.Verify accepted it: its parser reads only what Perch's
// signature checks passed. It answers the ID of the assertion the library
// read; its error is the library's own reason, for the server's log, not
// for the person signing in.
func (sp ServiceProvider) LibraryCheck(raw []byte, requestID string) (assertionID string, err error) {
	lib, err := sp.library()
	if err != nil {
		return "", err
	}
	var possible []string
	if requestID != "" {
		possible = []string{requestID}
	}
	assertion, err := lib.ParseXMLResponse(raw, possible, lib.AcsURL)
	if err != nil {
		if ire, ok := errors.AsType[*crewjam.InvalidResponseError](err); ok {
			return "", ire.PrivateErr
		}
		return "", err
	}
	return assertion.ID, nil
}

// certificateLife is how long the certificate of a service provider key
// is valid.
const certificateLife = 10 * 365 * 24 * time.Hour

// NewKey makes a service provider key and its self-signed certificate
// (PEM) for the subject name, which the metadata publishes. generate makes
// the key; nil means a new 2048-bit RSA key.
func NewKey(name string, now time.Time, generate func() (*rsa.PrivateKey, error)) (*rsa.PrivateKey, string, error) {
	if generate == nil {
		generate = func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) }
	}
	key, err := generate()
	if err != nil {
		return nil, "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"Perch"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certificateLife),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, "", err
	}
	return key, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), nil
}
