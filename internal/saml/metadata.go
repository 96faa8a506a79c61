package saml

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"time"

	crewjam "github.com/crewjam/saml"
)

// Metadata is what Perch takes from an identity provider's metadata.
type Metadata struct {
	Descriptor *crewjam.EntityDescriptor // for the library
	EntityID   string
	SSOURL     string              // HTTP-Redirect
	Certs      []*x509.Certificate // for signing
}

// ParseMetadata reads an identity provider's metadata: an
// EntityDescriptor, or an EntitiesDescriptor holding exactly one identity
// provider. It needs an entity ID, an SSO service with the HTTP-Redirect
// binding and at least one signing certificate (MetadataLimits bound it
// first). The error says what is wrong, for the person who pasted it, as
// the end of a sentence that begins "the metadata" ("… names no entityID").
func ParseMetadata(data []byte) (*Metadata, error) {
	// Owners store it, and every sign-in to the organisation reads it
	// again: bounded as a posted response is, before it is parsed.
	if err := scanXML(data, MetadataLimits); err != nil {
		if se, ok := errors.AsType[*shapeError](err); !ok || !se.malformed {
			return nil, err
		}
		// Not XML: the decoder below says where, within the limits.
	}
	var root struct{ XMLName xml.Name }
	if err := xml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("is not XML: %v", firstLine(err.Error()))
	}
	var candidates []crewjam.EntityDescriptor
	switch root.XMLName {
	case xml.Name{Space: "urn:oasis:names:tc:SAML:2.0:metadata", Local: "EntityDescriptor"}:
		var ed crewjam.EntityDescriptor
		if err := xml.Unmarshal(data, &ed); err != nil {
			return nil, fmt.Errorf("cannot be read as SAML metadata: %v", firstLine(err.Error()))
		}
		candidates = append(candidates, ed)
	case xml.Name{Space: "urn:oasis:names:tc:SAML:2.0:metadata", Local: "EntitiesDescriptor"}:
		var eds crewjam.EntitiesDescriptor
		if err := xml.Unmarshal(data, &eds); err != nil {
			return nil, fmt.Errorf("cannot be read as SAML metadata: %v", firstLine(err.Error()))
		}
		for _, ed := range eds.EntityDescriptors {
			if len(ed.IDPSSODescriptors) > 0 {
				candidates = append(candidates, ed)
			}
		}
	default:
		return nil, errors.New("is not SAML metadata (an EntityDescriptor)")
	}
	if len(candidates) != 1 {
		return nil, fmt.Errorf("describes %d identity providers; give the metadata of one", len(candidates))
	}
	ed := candidates[0]
	md := &Metadata{Descriptor: &ed, EntityID: strings.TrimSpace(ed.EntityID)}
	if md.EntityID == "" {
		return nil, errors.New("names no entityID")
	}
	if len(ed.IDPSSODescriptors) != 1 {
		return nil, fmt.Errorf("holds %d IDPSSODescriptor elements; one is needed", len(ed.IDPSSODescriptors))
	}
	idp := ed.IDPSSODescriptors[0]
	for _, sso := range idp.SingleSignOnServices {
		if sso.Binding == crewjam.HTTPRedirectBinding && md.SSOURL == "" {
			md.SSOURL = strings.TrimSpace(sso.Location)
		}
	}
	if md.SSOURL == "" || !strings.HasPrefix(md.SSOURL, "https://") && !strings.HasPrefix(md.SSOURL, "http://") {
		return nil, errors.New("has no SingleSignOnService with the HTTP-Redirect binding and an http(s) location")
	}
	for _, kd := range idp.KeyDescriptors {
		if kd.Use != "" && kd.Use != "signing" {
			continue
		}
		for _, c := range kd.KeyInfo.X509Data.X509Certificates {
			der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(c.Data), ""))
			if err != nil {
				return nil, errors.New("holds a certificate that is not base64")
			}
			cert, err := x509.ParseCertificate(der)
			if err != nil {
				return nil, fmt.Errorf("holds a certificate that cannot be read: %v", err)
			}
			md.Certs = append(md.Certs, cert)
		}
	}
	if len(md.Certs) == 0 {
		return nil, errors.New("has no signing certificate (a KeyDescriptor with an X509Certificate)")
	}
	return md, nil
}

// firstLine is the first line of s, for messages.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// CertsPEM is certs as PEM blocks, the form in which the server stores
// the identity provider's certificates.
func CertsPEM(certs []*x509.Certificate) string {
	var b bytes.Buffer
	for _, c := range certs {
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.String()
}

// ParseCertsPEM reads the certificates CertsPEM wrote; none is an error.
func ParseCertsPEM(s string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := []byte(s)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("saml: no stored certificate")
	}
	return out, nil
}

// FirstExpiry is when the first of certs expires.
func FirstExpiry(certs []*x509.Certificate) time.Time {
	var t time.Time
	for _, c := range certs {
		if t.IsZero() || c.NotAfter.Before(t) {
			t = c.NotAfter
		}
	}
	return t.UTC().Truncate(time.Second)
}
