package samltest

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/crewjam/saml"
	dsig "github.com/russellhaering/goxmldsig"
)

// Forger makes SAML responses by hand and signs them with Keys (through
// goxmldsig, as an identity provider would), for tests that tamper with
// them.
type Forger struct {
	Keys   KeyPair
	Issuer string // the identity provider's entity ID
}

// Spec is a response to forge: an assertion about NameID for Audience,
// sent to Destination (and Recipient), answering InResponseTo (none: a
// sign-in the identity provider started), valid from a minute before Now
// to five minutes after.
type Spec struct {
	NameID       string
	Audience     string
	Destination  string
	Recipient    string // the bearer's recipient; "" is Destination
	InResponseTo string
	Now          time.Time

	Issuer        string // the assertion's issuer; "" is the forger's
	NoIssuer      bool   // the assertion names no issuer
	SignResponse  bool
	SignAssertion bool
	// Attributes are added to the assertion, name → value.
	Attributes map[string]string
	// Groups are the values of a "groups" attribute, one AttributeValue
	// each, as Okta and Entra ID send group membership.
	Groups []string
}

// ID is a fresh SAML ID.
func ID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "id-" + hex.EncodeToString(b)
}

// Assertion is the assertion of s, unsigned.
func (f Forger) Assertion(s Spec) *etree.Element {
	now := s.Now.UTC()
	recipient := s.Recipient
	if recipient == "" {
		recipient = s.Destination
	}
	issuer := s.Issuer
	if issuer == "" {
		issuer = f.Issuer
	}
	a := &saml.Assertion{
		ID: ID(), IssueInstant: now, Version: "2.0",
		Issuer: saml.Issuer{Format: "urn:oasis:names:tc:SAML:2.0:nameid-format:entity", Value: issuer},
		Subject: &saml.Subject{
			NameID: &saml.NameID{Format: string(saml.EmailAddressNameIDFormat), Value: s.NameID},
			SubjectConfirmations: []saml.SubjectConfirmation{{
				Method: "urn:oasis:names:tc:SAML:2.0:cm:bearer",
				SubjectConfirmationData: &saml.SubjectConfirmationData{
					InResponseTo: s.InResponseTo, NotOnOrAfter: now.Add(5 * time.Minute), Recipient: recipient,
				},
			}},
		},
		Conditions: &saml.Conditions{
			NotBefore: now.Add(-time.Minute), NotOnOrAfter: now.Add(5 * time.Minute),
			AudienceRestrictions: []saml.AudienceRestriction{{Audience: saml.Audience{Value: s.Audience}}},
		},
		AuthnStatements: []saml.AuthnStatement{{AuthnInstant: now, SessionIndex: ID()}},
	}
	if len(s.Attributes) > 0 || len(s.Groups) > 0 {
		var st saml.AttributeStatement
		for name, v := range s.Attributes {
			st.Attributes = append(st.Attributes, saml.Attribute{Name: name, NameFormat: "urn:oasis:names:tc:SAML:2.0:attrname-format:basic",
				Values: []saml.AttributeValue{{Type: "xs:string", Value: v}}})
		}
		if len(s.Groups) > 0 {
			groups := saml.Attribute{Name: "groups", NameFormat: "urn:oasis:names:tc:SAML:2.0:attrname-format:basic"}
			for _, g := range s.Groups {
				groups.Values = append(groups.Values, saml.AttributeValue{Type: "xs:string", Value: g})
			}
			st.Attributes = append(st.Attributes, groups)
		}
		a.AttributeStatements = []saml.AttributeStatement{st}
	}
	el := a.Element()
	if s.NoIssuer {
		el.RemoveChild(el.SelectElement("saml:Issuer"))
	}
	return el
}

// Response forges the response of s, signed as s says.
func (f Forger) Response(tb testing.TB, s Spec) *etree.Element {
	tb.Helper()
	assertion := f.Assertion(s)
	if s.SignAssertion {
		assertion = f.Sign(tb, assertion)
	}
	return f.Wrap(tb, s, assertion)
}

// Wrap puts assertions into the response of s, signed when s says so.
func (f Forger) Wrap(tb testing.TB, s Spec, assertions ...*etree.Element) *etree.Element {
	tb.Helper()
	r := &saml.Response{ID: ID(), InResponseTo: s.InResponseTo, Version: "2.0", IssueInstant: s.Now.UTC(), Destination: s.Destination,
		Issuer: &saml.Issuer{Format: "urn:oasis:names:tc:SAML:2.0:nameid-format:entity", Value: f.Issuer},
		Status: saml.Status{StatusCode: saml.StatusCode{Value: saml.StatusSuccess}}}
	el := r.Element()
	for _, a := range assertions {
		el.AddChild(a)
	}
	if s.SignResponse {
		el = f.Sign(tb, el)
	}
	return el
}

// Sign signs el (which has an ID) with an enveloped signature, placed
// after its Issuer as SAML's schema has it.
func (f Forger) Sign(tb testing.TB, el *etree.Element) *etree.Element {
	tb.Helper()
	ctx := dsig.NewDefaultSigningContext(dsig.TLSCertKeyStore(tls.Certificate{
		Certificate: [][]byte{f.Keys.Cert.Raw}, PrivateKey: f.Keys.Key, Leaf: f.Keys.Cert}))
	ctx.Canonicalizer = dsig.MakeC14N10ExclusiveCanonicalizerWithPrefixList("")
	if err := ctx.SetSignatureMethod(dsig.RSASHA256SignatureMethod); err != nil {
		tb.Fatal(err)
	}
	signed, err := ctx.SignEnveloped(el)
	if err != nil {
		tb.Fatal(err)
	}
	// goxmldsig appends the signature without making it a child in
	// etree's books, so it is taken off the list by hand.
	if issuer := signed.SelectElement("Issuer"); issuer != nil {
		n := len(signed.Child)
		sig := signed.Child[n-1]
		signed.Child = signed.Child[:n-1]
		signed.InsertChildAt(issuer.Index()+1, sig)
	}
	return signed
}

// Encode is el as a document in base64, the form SAMLResponse has.
func Encode(tb testing.TB, el *etree.Element) string {
	tb.Helper()
	doc := etree.NewDocument()
	doc.SetRoot(el)
	b, err := doc.WriteToBytes()
	if err != nil {
		tb.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}
