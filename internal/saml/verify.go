package saml

import (
	"crypto/x509"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/beevik/etree"
	dsig "github.com/russellhaering/goxmldsig"
	"github.com/russellhaering/goxmldsig/etreeutils"

	"github.com/perch-dev/perch"
)

// Perch reads every SAML response itself before the library does
// (docs/DESIGN.md, SAML; advisory GO-2026-6909): it takes the one assertion the
// response may carry, has goxmldsig verify the signatures over it, and
// reads every value it uses from what the signature covers, as the
// verifier hands it back, after checking that the same value stands in
// the document as received as one plain run of text. Each check has a
// message of its own, which the person signing in reads on the sign-in
// page.

// Trust is what one response is checked against: the organisation's
// identity provider and this server's values for the organisation.
type Trust struct {
	IDPEntityID       string
	Certs             []*x509.Certificate // the identity provider's signing certificates
	Audience          string              // this server's entity ID for the organisation
	ACSURL            string
	RequestID         string // the sign-in started here that the answer must name; "" for none
	AllowIDPInitiated bool
	EmailAttribute    string // "" reads the address from the NameID
	Now               time.Time
}

// Identity is what a verified assertion says.
type Identity struct {
	AssertionID string
	Email       string
	Name        string    // from the usual name attributes; "" when none is sent
	Until       time.Time // the end of its validity, until which its ID is remembered
}

// Verify checks a parsed response against t: its one assertion's
// signatures by the identity provider's certificates, then what it says
// (status, issuer, audience, destination and recipient, times, the sign-in
// it answers), and answers who it signs in. Its errors are *Refusal, with
// Verified set when the signatures had verified. The caller still makes
// sure the assertion is used once and the request it answers is consumed.
func (t Trust) Verify(r *Response) (*Identity, error) {
	signed, err := t.verifySignatures(r.doc)
	if err != nil {
		return nil, err
	}
	id, err := t.check(signed)
	if ref, ok := errors.AsType[*Refusal](err); ok {
		ref.Verified = true
	}
	return id, err
}

// signedResponse is a response whose signatures verified against the
// identity provider's certificate: the response and the assertion as the
// verifier read them back from what it verified, and the assertion as it
// arrived.
type signedResponse struct {
	response, assertion, received *etree.Element
}

// verifySignatures finds the one assertion of a response (the document
// ParseResponse made of the decoded SAMLResponse) and verifies the signatures
// over it. Until it succeeds, nothing shows that the response comes from
// the organisation's identity provider; check then reads what it says.
func (t Trust) verifySignatures(doc *etree.Document) (*signedResponse, error) {
	received := doc.Root()
	if received == nil || !is(received, nsProtocol, "Response") {
		return nil, refuse("The identity provider's answer is not a SAML response.")
	}

	// One assertion in the whole document, by its local name in any
	// namespace: a second one, signed or not, is how signature wrapping
	// slips a forged assertion past a verifier that checks another.
	var found []*etree.Element
	encrypted := false
	walk(received, func(el *etree.Element) {
		switch el.Tag {
		case "Assertion":
			found = append(found, el)
		case "EncryptedAssertion":
			encrypted = true
		}
	})
	if encrypted {
		return nil, refuse("The identity provider encrypted the assertion, which Perch does not accept: turn assertion encryption off for Perch (the response travels over HTTPS).")
	}
	if len(found) != 1 {
		return nil, refuse("The identity provider's response must carry exactly one assertion; this one carries %d.", len(found))
	}
	original := found[0]
	if original.Parent() != received || !is(original, nsAssertion, "Assertion") {
		return nil, refuse("The assertion is not where a SAML response carries it.")
	}

	// Signed: the response, the assertion, or both, each by one of the
	// identity provider's certificates.
	responseSig, err := signatureOf(received)
	if err != nil {
		return nil, err
	}
	assertionSig, err := signatureOf(original)
	if err != nil {
		return nil, err
	}
	if responseSig == nil && assertionSig == nil {
		return nil, refuse("The identity provider's response is not signed: sign the response or the assertion.")
	}
	response, assertion := received, (*etree.Element)(nil)
	if responseSig != nil {
		if response, err = t.verifySignature(received, responseSig); err != nil {
			return nil, refuse("The response's signature does not verify against the identity provider's certificate.")
		}
		in := childrenOf(response, nsAssertion, "Assertion")
		if len(in) != 1 {
			return nil, refuse("The identity provider's response must carry exactly one assertion; this one carries %d.", len(in))
		}
		assertion = in[0]
	}
	if assertionSig != nil {
		signed, err := t.verifySignature(original, assertionSig)
		if err != nil {
			return nil, refuse("The assertion's signature does not verify against the identity provider's certificate.")
		}
		if assertion != nil && attr(assertion, "ID") != attr(signed, "ID") {
			return nil, refuse("The signed response and the signed assertion disagree.")
		}
		assertion = signed
	}
	return &signedResponse{response: response, assertion: assertion, received: original}, nil
}

// check reads the verified response and assertion; the e-mail address of
// the assertion as it arrived must read the same.
func (t Trust) check(signed *signedResponse) (*Identity, error) {
	response, assertion, received := signed.response, signed.assertion, signed.received
	if code := firstChild(firstChild(response, nsProtocol, "Status"), nsProtocol, "StatusCode"); code == nil || attr(code, "Value") != statusSuccess {
		return nil, refuse("The identity provider did not sign you in (its answer is not a success).")
	}

	// The issuer: present, and the identity provider of the organisation.
	issuers := childrenOf(assertion, nsAssertion, "Issuer")
	if len(issuers) == 0 {
		return nil, refuse("The assertion names no issuer.")
	}
	if issuer, ok := cleanText(issuers[0]); len(issuers) != 1 || !ok || issuer != t.IDPEntityID {
		return nil, refuse("The assertion was issued by another identity provider than the organisation's.")
	}
	if ri := childrenOf(response, nsAssertion, "Issuer"); len(ri) > 0 {
		if issuer, ok := cleanText(ri[0]); len(ri) != 1 || !ok || issuer != t.IDPEntityID {
			return nil, refuse("The response was issued by another identity provider than the organisation's.")
		}
	}

	// Sent to this server: the response's destination, the assertion's
	// audience and the bearer's recipient.
	if d := response.SelectAttr("Destination"); d != nil && d.Space == "" && d.Value != t.ACSURL {
		return nil, refuse("The response is addressed to another destination than this server's sign-in address.")
	}
	conditions := childrenOf(assertion, nsAssertion, "Conditions")
	if len(conditions) != 1 {
		return nil, refuse("The assertion must carry one Conditions element.")
	}
	restrictions := childrenOf(conditions[0], nsAssertion, "AudienceRestriction")
	if len(restrictions) == 0 {
		return nil, refuse("The assertion names no audience.")
	}
	for _, r := range restrictions { // each restriction must admit this server
		ours := false
		for _, a := range childrenOf(r, nsAssertion, "Audience") {
			if v, ok := cleanText(a); ok && v == t.Audience {
				ours = true
			}
		}
		if !ours {
			return nil, refuse("The assertion is meant for another audience than this organisation's entity ID.")
		}
	}

	now := t.Now
	until := now.Add(perch.SAMLClockSkew)
	subjects := childrenOf(assertion, nsAssertion, "Subject")
	if len(subjects) != 1 {
		return nil, refuse("The assertion must have one subject.")
	}
	subject := subjects[0]
	inResponseTo, bearers := "", 0
	for _, sc := range childrenOf(subject, nsAssertion, "SubjectConfirmation") {
		if attr(sc, "Method") != cmBearer {
			continue
		}
		bearers++
		data := firstChild(sc, nsAssertion, "SubjectConfirmationData")
		if data == nil || attr(data, "Recipient") != t.ACSURL {
			return nil, refuse("The assertion's recipient is not this server's sign-in address.")
		}
		end, err := samlTime(data, "NotOnOrAfter", true)
		if err != nil {
			return nil, err
		}
		if !now.Before(end.Add(perch.SAMLClockSkew)) {
			return nil, refuse("The assertion has expired: sign in again.")
		}
		if end.After(until) {
			until = end
		}
		if bearers > 1 && attr(data, "InResponseTo") != inResponseTo {
			return nil, refuse("The assertion answers two different sign-ins.")
		}
		inResponseTo = attr(data, "InResponseTo")
	}
	if bearers == 0 {
		return nil, refuse("The assertion has no bearer confirmation.")
	}
	start, err := samlTime(conditions[0], "NotBefore", false)
	if err != nil {
		return nil, err
	}
	if !start.IsZero() && now.Before(start.Add(-perch.SAMLClockSkew)) {
		return nil, refuse("The assertion is not valid yet: check the clocks of the identity provider and of this server.")
	}
	end, err := samlTime(conditions[0], "NotOnOrAfter", false)
	if err != nil {
		return nil, err
	}
	if !end.IsZero() {
		if !now.Before(end.Add(perch.SAMLClockSkew)) {
			return nil, refuse("The assertion has expired: sign in again.")
		}
		if end.After(until) {
			until = end
		}
	}

	// The sign-in it answers: one started here, or none when the identity
	// provider may start sign-ins.
	if r := attr(response, "InResponseTo"); r != "" && r != inResponseTo {
		return nil, refuse("The response and its assertion answer different sign-ins.")
	}
	switch {
	case inResponseTo == "" && !t.AllowIDPInitiated:
		return nil, refuse("Sign-in started at the identity provider is not allowed for this organisation: start at Perch with “Sign in with SSO”.")
	case inResponseTo != "" && inResponseTo != t.RequestID:
		return nil, refuse("The response answers a sign-in that this server did not start, or one that expired or was used: start again.")
	}

	id := attr(assertion, "ID")
	if id == "" || utf8.RuneCountInString(id) > 256 || perch.TextProblem(id, perch.SingleLine) != "" {
		return nil, refuse("The assertion has no usable ID.")
	}
	email, err := t.emailOf(assertion)
	if err != nil {
		return nil, err
	}
	if again, err := t.emailOf(received); err != nil || again != email {
		return nil, refuse("The e-mail address in the assertion is not one plain value (it holds a comment or markup).")
	}
	return &Identity{AssertionID: id, Email: email, Name: nameOf(assertion), Until: until}, nil
}

// emailOf reads the address from the configured attribute, or from the
// NameID when there is no such attribute (or none is configured). The
// value must be one plain run of text that is an e-mail address.
func (t Trust) emailOf(assertion *etree.Element) (string, error) {
	if t.EmailAttribute != "" {
		attrs := attributes(assertion, t.EmailAttribute)
		switch {
		case len(attrs) > 1:
			return "", refuse("The assertion carries the attribute %q more than once.", t.EmailAttribute)
		case len(attrs) == 1:
			values := childrenOf(attrs[0], nsAssertion, "AttributeValue")
			if len(values) != 1 {
				return "", refuse("The attribute %q must hold exactly one value.", t.EmailAttribute)
			}
			return emailValue(values[0])
		}
	}
	subject := firstChild(assertion, nsAssertion, "Subject")
	ids := childrenOf(subject, nsAssertion, "NameID")
	if len(ids) != 1 {
		if t.EmailAttribute != "" {
			return "", refuse("The assertion carries neither the attribute %q nor a NameID with the e-mail address.", t.EmailAttribute)
		}
		return "", refuse("The assertion carries no NameID: send the e-mail address as the NameID, or name the attribute that carries it.")
	}
	return emailValue(ids[0])
}

// emailValue is el's text when it is one plain value and an address.
func emailValue(el *etree.Element) (string, error) {
	v, ok := cleanText(el)
	if !ok {
		return "", refuse("The e-mail address in the assertion is not one plain value (it holds a comment or markup).")
	}
	p := perch.Problems{}
	perch.ValidateEmail(p, v)
	if len(p) > 0 {
		return "", refuse("The identity provider sent %q where an e-mail address belongs.", clip(v, 100))
	}
	return v, nil
}

// nameAttributes are the attribute names (or their last path segment,
// lowercased) that carry a display name, best first.
var nameAttributes = []string{"displayname", "name", "cn", "commonname", "urn:oid:2.16.840.1.113730.3.1.241", "urn:oid:2.5.4.3"}

// nameOf is the person's name from the assertion's attributes: a display
// name, else given name and surname; "" when none is sent.
func nameOf(assertion *etree.Element) string {
	values := map[string]string{}
	for _, st := range childrenOf(assertion, nsAssertion, "AttributeStatement") {
		for _, a := range childrenOf(st, nsAssertion, "Attribute") {
			vs := childrenOf(a, nsAssertion, "AttributeValue")
			if len(vs) != 1 {
				continue
			}
			v, ok := cleanText(vs[0])
			if !ok {
				continue
			}
			for _, n := range []string{attr(a, "Name"), attr(a, "FriendlyName")} {
				n = strings.ToLower(n)
				if i := strings.LastIndexByte(n, '/'); i >= 0 {
					n = n[i+1:]
				}
				if _, seen := values[n]; !seen && n != "" {
					values[n] = v
				}
			}
		}
	}
	name := ""
	for _, n := range nameAttributes {
		if v := values[n]; v != "" {
			name = v
			break
		}
	}
	if name == "" {
		given := firstOf(values, "givenname", "firstname", "urn:oid:2.5.4.42")
		family := firstOf(values, "surname", "sn", "lastname", "familyname", "urn:oid:2.5.4.4")
		name = strings.TrimSpace(given + " " + family)
	}
	name = strings.TrimSpace(perch.CleanText(name, perch.SingleLine))
	if utf8.RuneCountInString(name) > perch.MaxNameLen {
		name = string([]rune(name)[:perch.MaxNameLen])
	}
	return name
}

func firstOf(values map[string]string, names ...string) string {
	for _, n := range names {
		if v := values[n]; v != "" {
			return v
		}
	}
	return ""
}

// attributes are the assertion's attributes whose Name or FriendlyName is
// name.
func attributes(assertion *etree.Element, name string) []*etree.Element {
	var out []*etree.Element
	for _, st := range childrenOf(assertion, nsAssertion, "AttributeStatement") {
		for _, a := range childrenOf(st, nsAssertion, "Attribute") {
			if attr(a, "Name") == name || attr(a, "FriendlyName") == name {
				out = append(out, a)
			}
		}
	}
	return out
}

// verifySignature has goxmldsig verify sig, a Signature child of el, with
// each of the identity provider's certificates in turn, and answers the
// element the signature covers, as goxmldsig read it back from the bytes
// it verified. The signature must refer to el by its ID and to nothing
// else.
func (t Trust) verifySignature(el, sig *etree.Element) (*etree.Element, error) {
	id := attr(el, "ID")
	info := childrenOf(sig, nsDSig, "SignedInfo")
	if id == "" || len(info) != 1 {
		return nil, errors.New("saml: a signature without SignedInfo, or of an element without an ID")
	}
	refs := childrenOf(info[0], nsDSig, "Reference")
	if len(refs) != 1 || attr(refs[0], "URI") != "#"+id {
		return nil, errors.New("saml: the signature does not refer to the element alone")
	}
	ctx, err := etreeutils.NSBuildParentContext(el)
	if err == nil {
		ctx, err = ctx.SubContext(el)
	}
	if err != nil {
		return nil, err
	}
	detached, err := etreeutils.NSDetatch(ctx, el)
	if err != nil {
		return nil, err
	}
	// A KeyInfo without a certificate (a bare key value) names no key the
	// verifier can check against the trusted ones; it is not signed, and
	// without it the verifier uses the trusted certificate.
	if s := firstChild(detached, nsDSig, "Signature"); s != nil {
		if ki := firstChild(s, nsDSig, "KeyInfo"); ki != nil && ki.FindElement(".//X509Certificate") == nil {
			s.RemoveChild(ki)
		}
	}
	err = errors.New("saml: no certificate of the identity provider")
	for _, cert := range t.Certs {
		vc := dsig.NewDefaultValidationContext(&dsig.MemoryX509CertificateStore{Roots: []*x509.Certificate{cert}})
		vc.IdAttribute = "ID"
		vc.Clock = dsig.NewFakeClockAt(t.Now)
		var signed *etree.Element
		if signed, err = vc.Validate(detached); err == nil {
			if attr(signed, "ID") != id || signed.Tag != el.Tag || signed.NamespaceURI() != el.NamespaceURI() {
				return nil, errors.New("saml: the verified element is not the one signed")
			}
			return signed, nil
		}
	}
	return nil, err
}

// signatureOf returns el's own Signature (a child), nil when it has none,
// or an error when it has more than one.
func signatureOf(el *etree.Element) (*etree.Element, error) {
	sigs := childrenOf(el, nsDSig, "Signature")
	switch len(sigs) {
	case 0:
		return nil, nil
	case 1:
		return sigs[0], nil
	}
	return nil, refuse("The identity provider's response carries more than one signature on one element.")
}

// samlTime reads a time attribute of el; required says whether it must be
// there. A missing optional one is the zero time.
func samlTime(el *etree.Element, name string, required bool) (time.Time, error) {
	v := attr(el, name)
	if v == "" {
		if required {
			return time.Time{}, refuse("The assertion has no %s time.", name)
		}
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, refuse("The assertion's %s time %q cannot be read.", name, clip(v, 40))
	}
	return t, nil
}
