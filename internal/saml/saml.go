// Package saml is the pure core of Perch's SAML 2.0 single sign-on, the
// service provider's side: the bounds a response or an identity provider's
// metadata must keep before anything parses it, the one parse of a
// response, Perch's own checks of its signatures and of what it says
// (Trust.Verify), the reading of an identity provider's metadata
// (ParseMetadata), and the service provider's metadata and AuthnRequest
// (ServiceProvider), built with crewjam/saml.
//
// Nothing here does I/O: the server fetches metadata, keeps the settings,
// the outstanding requests and the replay cache, and answers the browser.
// A response refused for what it is or says is a *Refusal, whose Reason is
// written for the person signing in and whose Verified says whether the
// identity provider's signature had verified, that is whether the
// organisation's identity provider had any part in it.
package saml

import (
	"fmt"
	"unicode/utf8"
)

// XML namespaces and values of SAML 2.0.
const (
	nsProtocol    = "urn:oasis:names:tc:SAML:2.0:protocol"
	nsAssertion   = "urn:oasis:names:tc:SAML:2.0:assertion"
	nsDSig        = "http://www.w3.org/2000/09/xmldsig#"
	statusSuccess = "urn:oasis:names:tc:SAML:2.0:status:Success"
	cmBearer      = "urn:oasis:names:tc:SAML:2.0:cm:bearer"
)

// Refusal is a response refused, with the reason for the person signing in.
type Refusal struct {
	// Reason is a sentence or two for the sign-in page.
	Reason string
	// Verified is true when the identity provider's signature over the
	// response verified before it was refused: the response is the
	// identity provider's own, refused for what it says. Until then anyone
	// could have made it.
	Verified bool
}

func (r *Refusal) Error() string { return r.Reason }

// refuse is a refusal; Verify marks it Verified when it comes after the
// signatures verified.
func refuse(format string, args ...any) *Refusal {
	return &Refusal{Reason: fmt.Sprintf(format, args...)}
}

// clip cuts s to at most n bytes, on a rune boundary, for messages that
// quote what an identity provider sent.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
