package server

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/crewjam/saml"

	"github.com/perch-dev/perch/internal/netguard"
)

// Limits of fetching an identity provider's metadata from its URL (and
// netguard's: at most 3 redirects, http and https only).
const (
	metadataFetchTimeout = 10 * time.Second
	maxMetadataSize      = 1 << 20
)

// idpMetadata is what Perch takes from an identity provider's metadata.
type idpMetadata struct {
	Descriptor *saml.EntityDescriptor // for the library
	EntityID   string
	SSOURL     string              // HTTP-Redirect
	Certs      []*x509.Certificate // for signing
}

// parseIDPMetadata reads an identity provider's metadata: an
// EntityDescriptor, or an EntitiesDescriptor holding exactly one identity
// provider. It needs an entity ID, an SSO service with the HTTP-Redirect
// binding and at least one signing certificate; the error says what is
// missing, for the person who pasted it.
func parseIDPMetadata(data []byte) (*idpMetadata, error) {
	// Owners store it, and every sign-in to the organisation reads it
	// again: bounded as a posted response is, before it is parsed.
	if err := scanXML(data, idpMetadataLimits); err != nil {
		if se, ok := errors.AsType[*xmlShapeError](err); !ok || !se.malformed {
			return nil, err
		}
		// Not XML: the decoder below says where, within the limits.
	}
	var root struct{ XMLName xml.Name }
	if err := xml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("is not XML: %v", firstLine(err.Error()))
	}
	var candidates []saml.EntityDescriptor
	switch root.XMLName {
	case xml.Name{Space: "urn:oasis:names:tc:SAML:2.0:metadata", Local: "EntityDescriptor"}:
		var ed saml.EntityDescriptor
		if err := xml.Unmarshal(data, &ed); err != nil {
			return nil, fmt.Errorf("cannot be read as SAML metadata: %v", firstLine(err.Error()))
		}
		candidates = append(candidates, ed)
	case xml.Name{Space: "urn:oasis:names:tc:SAML:2.0:metadata", Local: "EntitiesDescriptor"}:
		var eds saml.EntitiesDescriptor
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
	md := &idpMetadata{Descriptor: &ed, EntityID: strings.TrimSpace(ed.EntityID)}
	if md.EntityID == "" {
		return nil, errors.New("names no entityID")
	}
	if len(ed.IDPSSODescriptors) != 1 {
		return nil, fmt.Errorf("holds %d IDPSSODescriptor elements; one is needed", len(ed.IDPSSODescriptors))
	}
	idp := ed.IDPSSODescriptors[0]
	for _, sso := range idp.SingleSignOnServices {
		if sso.Binding == saml.HTTPRedirectBinding && md.SSOURL == "" {
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

// certsPEM and parseCertsPEM store certificates as PEM blocks.
func certsPEM(certs []*x509.Certificate) string {
	var b bytes.Buffer
	for _, c := range certs {
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.String()
}

func parseCertsPEM(s string) ([]*x509.Certificate, error) {
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

// firstExpiry is when the first of certs expires.
func firstExpiry(certs []*x509.Certificate) time.Time {
	var t time.Time
	for _, c := range certs {
		if t.IsZero() || c.NotAfter.Before(t) {
			t = c.NotAfter
		}
	}
	return t.UTC().Truncate(time.Second)
}

// fetchMetadata gets an identity provider's metadata from its URL, within
// a time and size limit, through netguard, the guard of every outbound
// call: never from a loopback, private, link-local (the cloud metadata
// services live there), shared, multicast or other special address, nor
// from an IPv6 form that carries one (NAT64, 6to4, IPv4-compatible),
// however the name resolves and whatever a redirect says, so that the URL
// cannot reach into the server's own network.
// Options.SAMLMetadataLoopback lets tests reach loopback.
func (s *Server) fetchMetadata(ctx context.Context, rawURL string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, metadataFetchTimeout)
	defer cancel()
	guard := &netguard.Guard{AllowLoopback: s.opts.SAMLMetadataLoopback, Resolver: s.forwardResolver}
	client := guard.Client(metadataFetchTimeout)
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, errors.New("is not a URL the server can fetch")
	}
	req.Header.Set("Accept", "application/samlmetadata+xml, application/xml, text/xml")
	res, err := client.Do(req)
	if errors.Is(err, netguard.ErrRefused) {
		why := err.Error()
		if _, after, ok := strings.Cut(why, netguard.ErrRefused.Error()+": "); ok {
			why = after
		}
		return nil, fmt.Errorf("could not be fetched: %s, not a public address", why)
	}
	if err != nil {
		return nil, fmt.Errorf("could not be fetched: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("answered %s", res.Status)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxMetadataSize+1))
	if err != nil {
		return nil, fmt.Errorf("could not be read: %v", err)
	}
	if len(body) > maxMetadataSize {
		return nil, fmt.Errorf("answered more than %d KiB", maxMetadataSize>>10)
	}
	return body, nil
}
