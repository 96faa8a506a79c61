package saml

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
// where a real response takes milliseconds. ParseResponse checks the
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
	// MaxResponseSize is the decoded response's size, 8 times the
	// 150-group one's.
	MaxResponseSize = 256 << 10
	// maxElements allows some 1,900 attribute values (10 times the 150
	// groups), where a sign-in reads one or two.
	maxElements = 2000
	// maxDepth is over four times the deepest real nesting.
	maxDepth = 32
	// maxAttributes is per element, namespace declarations included.
	maxAttributes = 32
	// maxMarkup counts comments and processing instructions, of which
	// identity providers send none but the XML declaration.
	maxMarkup = 16
)

// shapeAdvice ends the refusal of a response past a limit: the identity
// provider's configuration, not the person signing in, can change it.
const shapeAdvice = " Ask the organisation's administrators to send fewer attributes or group values to Perch."

// ErrTooLarge refuses a response past MaxResponseSize, or the form that
// brings one when it is past the size such a response takes in it.
var ErrTooLarge error = refuse("The identity provider's response is larger than the %d KiB Perch reads.%s",
	MaxResponseSize>>10, shapeAdvice)

// Limits bound a document that someone outside the server's operators can
// make it parse: a response posted to the ACS, or an identity provider's
// metadata, which an organisation's owner stores and every sign-in to the
// organisation reads again.
type Limits struct {
	Size, Elements, Depth, Attributes int
	// Markup counts comments and processing instructions.
	Markup int
}

// ResponseLimits are a response's, explained above.
var ResponseLimits = Limits{Size: MaxResponseSize, Elements: maxElements, Depth: maxDepth,
	Attributes: maxAttributes, Markup: maxMarkup}

// MetadataLimits are an identity provider's metadata's. Okta's and Entra
// ID's have a few dozen elements in a few KB, AD FS's some 600 in 60 KB (it
// lists every claim type it offers); a federation's aggregate (thousands of
// entities) is not one identity provider's metadata and is refused anyway.
var MetadataLimits = Limits{Size: 512 << 10, Elements: 5000, Depth: 32, Attributes: 32, Markup: 64}

// shapeError is a document past one of its limits; what says how, as the
// end of a sentence about the document ("holds more than 2000 elements,
// …").
type shapeError struct {
	what      string
	malformed bool // not XML at all, within the limits as far as it went
}

func (e *shapeError) Error() string { return e.what }

// scanXML checks raw against l without building anything from it, and
// refuses a document type declaration, which neither SAML responses nor
// metadata may hold. It reads tokens with encoding/xml's tokenizer, set as
// etree sets it (strict, a declared encoding taken as it is), so that a
// document it cannot read is one etree would not read either. Its errors
// are *shapeError.
func scanXML(raw []byte, l Limits) error {
	shape := func(format string, args ...any) error { return &shapeError{what: fmt.Sprintf(format, args...)} }
	if len(raw) > l.Size {
		return shape("is larger than the %d KiB Perch reads", l.Size>>10)
	}
	d := xml.NewDecoder(bytes.NewReader(raw))
	d.CharsetReader = func(_ string, input io.Reader) (io.Reader, error) { return input, nil }
	depth, elements, markup := 0, 0, 0
	for {
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			if depth != 0 || elements == 0 {
				return &shapeError{what: "is not well-formed XML", malformed: true}
			}
			return nil
		}
		if err != nil {
			return &shapeError{what: "is not well-formed XML", malformed: true}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			elements++
			depth++
			switch {
			case elements > l.Elements:
				return shape("holds more than %d elements", l.Elements)
			case depth > l.Depth:
				return shape("nests elements more than %d deep", l.Depth)
			case len(t.Attr) > l.Attributes:
				return shape("has an element with more than %d attributes", l.Attributes)
			}
		case xml.EndElement:
			depth--
		case xml.Comment, xml.ProcInst:
			if markup++; markup > l.Markup {
				return shape("holds more than %d comments and processing instructions", l.Markup)
			}
		case xml.Directive:
			return shape("holds a document type declaration, which SAML does not allow")
		}
	}
}

// scanResponse checks a response against ResponseLimits, with a refusal
// for the person signing in that says what was crossed.
func scanResponse(raw []byte) error {
	err := scanXML(raw, ResponseLimits)
	se, ok := errors.AsType[*shapeError](err)
	switch {
	case err == nil:
		return nil
	case !ok:
		return err
	case len(raw) > MaxResponseSize:
		return ErrTooLarge
	case strings.HasPrefix(se.what, "holds more than") && strings.HasSuffix(se.what, "elements"):
		return refuse("The identity provider's response %s, far more than a sign-in needs.%s", se.what, shapeAdvice)
	}
	return refuse("The identity provider's response %s.", se.what)
}

// Response is a SAML response as it was posted, parsed once and not yet
// verified: nothing in it is to be trusted before Trust.Verify accepts it.
type Response struct {
	doc *etree.Document
}

// ParseResponse parses a decoded SAMLResponse, once, for both the
// organisation it names and its verification: within ResponseLimits
// (checked first, in one streaming pass), well-formed XML that reads back
// as it was written (the round-trip validator catches what encoding/xml
// would read differently the second time), with no document type
// declaration. Its errors are *Refusal.
func ParseResponse(raw []byte) (*Response, error) {
	if err := scanResponse(raw); err != nil {
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
	return &Response{doc: doc}, nil
}

// Audiences are the plain values of every Audience element anywhere in the
// response, read without trusting them, in document order: what the
// response claims to be for, so that the server can find the organisation
// whose identity provider must then have signed it.
func (r *Response) Audiences() []string {
	var out []string
	for _, el := range r.doc.FindElements("//Audience") {
		if v, ok := cleanText(el); ok {
			out = append(out, v)
		}
	}
	return out
}
