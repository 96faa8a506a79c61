package server

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/beevik/etree"
	xrv "github.com/mattermost/xml-roundtrip-validator"
)

// Limits of a SAML response, which anyone may post to the ACS without
// signing in (docs/DESIGN.md, SAML: the ACS bounds its work before any full
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

// xmlLimits bound a document that someone outside the server's operators
// can make it parse: a response posted to the ACS, or an identity
// provider's metadata, which an organisation's owner stores and every
// sign-in to the organisation reads again.
type xmlLimits struct {
	size, elements, depth, attributes, markup int
}

// samlResponseLimits are a response's, explained above.
var samlResponseLimits = xmlLimits{size: maxSAMLResponseSize, elements: maxSAMLElements, depth: maxSAMLDepth,
	attributes: maxSAMLAttributes, markup: maxSAMLMarkup}

// idpMetadataLimits are an identity provider's metadata's. Okta's and Entra
// ID's have a few dozen elements in a few KB, AD FS's some 600 in 60 KB (it
// lists every claim type it offers); a federation's aggregate (thousands of
// entities) is not one identity provider's metadata and is refused anyway.
var idpMetadataLimits = xmlLimits{size: 512 << 10, elements: 5000, depth: 32, attributes: 32, markup: 64}

// xmlShapeError is a document past one of its limits; what says how, as
// the end of a sentence about the document ("holds more than 2000
// elements, …").
type xmlShapeError struct {
	what      string
	malformed bool // not XML at all, within the limits as far as it went
}

func (e *xmlShapeError) Error() string { return e.what }

// scanXML checks raw against l without building anything from it, and
// refuses a document type declaration, which neither SAML responses nor
// metadata may hold. It reads tokens with encoding/xml's tokenizer, set as
// etree sets it (strict, a declared encoding taken as it is), so that a
// document it cannot read is one etree would not read either. Its errors
// are *xmlShapeError.
func scanXML(raw []byte, l xmlLimits) error {
	shape := func(format string, args ...any) error { return &xmlShapeError{what: fmt.Sprintf(format, args...)} }
	if len(raw) > l.size {
		return shape("is larger than the %d KiB Perch reads", l.size>>10)
	}
	d := xml.NewDecoder(bytes.NewReader(raw))
	d.CharsetReader = func(_ string, input io.Reader) (io.Reader, error) { return input, nil }
	depth, elements, markup := 0, 0, 0
	for {
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			if depth != 0 || elements == 0 {
				return &xmlShapeError{what: "is not well-formed XML", malformed: true}
			}
			return nil
		}
		if err != nil {
			return &xmlShapeError{what: "is not well-formed XML", malformed: true}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			elements++
			depth++
			switch {
			case elements > l.elements:
				return shape("holds more than %d elements", l.elements)
			case depth > l.depth:
				return shape("nests elements more than %d deep", l.depth)
			case len(t.Attr) > l.attributes:
				return shape("has an element with more than %d attributes", l.attributes)
			}
		case xml.EndElement:
			depth--
		case xml.Comment, xml.ProcInst:
			if markup++; markup > l.markup {
				return shape("holds more than %d comments and processing instructions", l.markup)
			}
		case xml.Directive:
			return shape("holds a document type declaration, which SAML does not allow")
		}
	}
}

// scanSAMLResponse checks a response against samlResponseLimits, with a
// refusal for the person signing in that says what was crossed.
func scanSAMLResponse(raw []byte) error {
	err := scanXML(raw, samlResponseLimits)
	se, ok := errors.AsType[*xmlShapeError](err)
	switch {
	case err == nil:
		return nil
	case !ok:
		return err
	case len(raw) > maxSAMLResponseSize:
		return errSAMLTooLarge
	case strings.HasPrefix(se.what, "holds more than") && strings.HasSuffix(se.what, "elements"):
		return refuse("The identity provider's response %s, far more than a sign-in needs.%s", se.what, samlShapeAdvice)
	}
	return refuse("The identity provider's response %s.", se.what)
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
