package server

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"

	"github.com/beevik/etree"
	xrv "github.com/mattermost/xml-roundtrip-validator"
)

// Limits of a SAML response, which anyone may post to the ACS without
// signing in (DESIGN.md §13: the ACS bounds its work before any full
// parse). Parsing a document into a tree, checking that it reads back the
// same and canonicalising it for its signatures all cost in proportion to
// its elements, so a body of 150,000 empty elements took seconds of CPU
// where a real response takes milliseconds. scanSAMLResponse checks the
// limits in one streaming pass that keeps nothing and stops at the first
// limit crossed; only a document within them is parsed, once.
//
// A real response from Okta, Entra ID or AD FS is one assertion: some 30
// elements of protocol, about 12 per signature (one or two), and an
// AttributeValue per attribute value. crewjam's samlidp answers with 54
// elements in 7.5 KB; one signed twice and carrying 150 group values
// (Entra ID's most in a SAML token; past it, it sends a link instead) has
// 203 elements in 30 KB. Both nest 7 deep (a signature's transforms) and
// have at most 8 attributes on an element; a certificate chain in KeyInfo
// adds a few KB. The limits leave several times that: the tests hold real
// responses to a quarter of the size and elements and a third of the depth
// and attributes.
const (
	// maxSAMLResponseSize is the decoded response's size, 8 times the
	// 150-group one's.
	maxSAMLResponseSize = 256 << 10
	// maxSAMLForm is the size of the form that brings it: the response in
	// base64 (4/3 of it, and line breaks where an identity provider wraps
	// it), percent-encoded where base64 has + / and =, and the
	// RelayState. A body past it is not read further.
	maxSAMLForm = 512 << 10
	// maxSAMLElements allows some 1,900 attribute values (10 times the
	// 150 groups), where a sign-in reads one or two.
	maxSAMLElements = 2000
	// maxSAMLDepth is over four times the deepest real nesting.
	maxSAMLDepth = 32
	// maxSAMLAttributes is per element, namespace declarations included.
	maxSAMLAttributes = 32
	// maxSAMLMarkup counts comments and processing instructions, of which
	// identity providers send none but the XML declaration.
	maxSAMLMarkup = 16
)

// samlShapeAdvice ends the refusal of a response past a limit: the
// identity provider's configuration, not the person signing in, can
// change it.
const samlShapeAdvice = " Ask the organisation's administrators to send fewer attributes or group values to Perch."

// errSAMLTooLarge refuses a response past maxSAMLResponseSize, or a form
// past maxSAMLForm.
var errSAMLTooLarge = refuse("The identity provider's response is larger than the %d KiB Perch reads.%s",
	maxSAMLResponseSize>>10, samlShapeAdvice)

// scanSAMLResponse checks raw against the limits above without building
// anything from it, and refuses a document type declaration, which SAML
// does not allow. It reads tokens with encoding/xml's tokenizer, set as
// etree sets it (strict, a declared encoding taken as it is), so that a
// document it cannot read is one etree would not read either.
func scanSAMLResponse(raw []byte) error {
	if len(raw) > maxSAMLResponseSize {
		return errSAMLTooLarge
	}
	d := xml.NewDecoder(bytes.NewReader(raw))
	d.CharsetReader = func(_ string, input io.Reader) (io.Reader, error) { return input, nil }
	depth, elements, markup := 0, 0, 0
	for {
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			if depth != 0 || elements == 0 {
				return refuse("The identity provider's response is not well-formed XML.")
			}
			return nil
		}
		if err != nil {
			return refuse("The identity provider's response is not well-formed XML.")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			elements++
			depth++
			switch {
			case elements > maxSAMLElements:
				return refuse("The identity provider's response holds more than %d elements, far more than a sign-in needs.%s",
					maxSAMLElements, samlShapeAdvice)
			case depth > maxSAMLDepth:
				return refuse("The identity provider's response nests elements more than %d deep, which no SAML response does.", maxSAMLDepth)
			case len(t.Attr) > maxSAMLAttributes:
				return refuse("An element of the identity provider's response has more than %d attributes, which no SAML response needs.", maxSAMLAttributes)
			}
		case xml.EndElement:
			depth--
		case xml.Comment, xml.ProcInst:
			if markup++; markup > maxSAMLMarkup {
				return refuse("The identity provider's response holds more than %d comments and processing instructions.", maxSAMLMarkup)
			}
		case xml.Directive:
			return refuse("The identity provider's response holds a document type declaration, which SAML does not allow.")
		}
	}
}

// readXML parses a response, once, for both the organisation it names and
// its verification: within the limits of scanSAMLResponse, well-formed XML
// that reads back as it was written (the round-trip validator catches what
// encoding/xml would read differently the second time), with no document
// type declaration.
func readXML(raw []byte) (*etree.Document, error) {
	if err := scanSAMLResponse(raw); err != nil {
		return nil, err
	}
	if err := xrv.Validate(bytes.NewReader(raw)); err != nil {
		return nil, refuse("The identity provider's response is not well-formed XML.")
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(raw); err != nil {
		return nil, refuse("The identity provider's response is not well-formed XML.")
	}
	for _, tok := range doc.Child {
		if _, dtd := tok.(*etree.Directive); dtd {
			return nil, refuse("The identity provider's response holds a document type declaration, which SAML does not allow.")
		}
	}
	return doc, nil
}
