package server

import (
	"strings"
	"testing"
	"time"

	"github.com/beevik/etree"

	"github.com/perch-dev/perch/internal/samltest"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestSAMLRefusesForgedResponses brings hand-made responses to the ACS,
// each answering a sign-in started at Perch and signed with the identity
// provider's own key unless the attack is the signature, and each wrong in
// one way. A good one, made the same way, signs in: the refusals are the
// checks', not the forger's. Each expects the message of Perch's own check
// (the library's would be another), so removing that check fails its case.
// A refusal is audited for the organisation when the identity provider's
// signature verified (the response is its own, refused for what it says),
// and not when it did not, which anyone could post.
func TestSAMLRefusesForgedResponses(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		bob := e.invite("Bob Member", "member")
		e.configure(map[string]any{"jit_provisioning": true})
		stranger := samltest.Forger{Keys: samltest.NewKeyPair(t, "stranger"), Issuer: e.idp.EntityID()}

		// The good ones: the assertion signed, the response signed, both.
		for _, sign := range []struct{ response, assertion bool }{{false, true}, {true, false}, {true, true}} {
			b := samltest.NewBrowser(t)
			id, relay := e.startSignIn(b)
			spec := e.spec(bob.Email, id)
			spec.SignResponse, spec.SignAssertion = sign.response, sign.assertion
			e.signedIn(b, e.post(b, e.forger().Response(t, spec), relay), samlDefaultTarget, bob.Email)
		}

		unverified := map[string]bool{ // refused before any signature verified: not audited
			"unsigned": true, "signed by another key": true, "response signed by another key": true, "altered after signing": true,
			"signature wrapping: an unsigned assertion beside the signed one": true,
			"signature wrapping: the signed assertion hidden in Extensions":   true, "encrypted assertion": true,
		}
		cases := []struct {
			name, want string
			forge      func(spec samltest.Spec) *etree.Element
		}{
			{"unsigned", "is not signed", func(spec samltest.Spec) *etree.Element {
				spec.SignAssertion = false
				return e.forger().Response(t, spec)
			}},
			{"signed by another key", "does not verify", func(spec samltest.Spec) *etree.Element {
				return stranger.Response(t, spec)
			}},
			{"response signed by another key", "does not verify", func(spec samltest.Spec) *etree.Element {
				spec.SignAssertion = false
				spec.SignResponse = true
				return stranger.Response(t, spec)
			}},
			{"altered after signing", "does not verify", func(spec samltest.Spec) *etree.Element {
				r := e.forger().Response(t, spec)
				nameID(r).SetText("olive.owner@example.com")
				return r
			}},
			{"wrong audience", "another audience", func(spec samltest.Spec) *etree.Element {
				spec.Audience = e.base + samlMetadataPath + "?org_id=someone-else"
				return e.forger().Response(t, spec)
			}},
			{"wrong destination", "another destination", func(spec samltest.Spec) *etree.Element {
				spec.Recipient = spec.Destination
				spec.Destination = "https://evil.test/acs"
				return e.forger().Response(t, spec)
			}},
			{"wrong recipient", "recipient is not this server", func(spec samltest.Spec) *etree.Element {
				spec.Recipient = "https://evil.test/acs"
				return e.forger().Response(t, spec)
			}},
			{"expired", "has expired", func(spec samltest.Spec) *etree.Element {
				spec.Now = spec.Now.Add(-10 * time.Minute)
				return e.forger().Response(t, spec)
			}},
			{"bearer confirmation expired", "has expired", func(spec samltest.Spec) *etree.Element {
				return e.signTampered(t, spec, func(a *etree.Element) {
					a.FindElement(".//SubjectConfirmationData").CreateAttr("NotOnOrAfter", stamp(spec.Now.Add(-3*time.Minute)))
				})
			}},
			{"conditions expired", "has expired", func(spec samltest.Spec) *etree.Element {
				return e.signTampered(t, spec, func(a *etree.Element) {
					a.FindElement("./Conditions").CreateAttr("NotOnOrAfter", stamp(spec.Now.Add(-3*time.Minute)))
				})
			}},
			{"not yet valid", "not valid yet", func(spec samltest.Spec) *etree.Element {
				spec.Now = spec.Now.Add(10 * time.Minute)
				return e.forger().Response(t, spec)
			}},
			{"unknown InResponseTo", "did not start", func(spec samltest.Spec) *etree.Element {
				spec.InResponseTo = samltest.ID()
				return e.forger().Response(t, spec)
			}},
			{"started at the identity provider", "not allowed for this organisation", func(spec samltest.Spec) *etree.Element {
				spec.InResponseTo = ""
				return e.forger().Response(t, spec)
			}},
			{"missing issuer", "names no issuer", func(spec samltest.Spec) *etree.Element {
				spec.NoIssuer = true
				return e.forger().Response(t, spec)
			}},
			{"another identity provider's issuer", "another identity provider", func(spec samltest.Spec) *etree.Element {
				spec.Issuer = "https://other-idp.example/metadata"
				return e.forger().Response(t, spec)
			}},
			{"signature wrapping: an unsigned assertion beside the signed one", "exactly one assertion", func(spec samltest.Spec) *etree.Element {
				signed := e.forger().Sign(t, e.forger().Assertion(spec))
				evil := spec
				evil.NameID = e.owner.Email
				return e.forger().Wrap(t, spec, e.forger().Assertion(evil), signed)
			}},
			{"signature wrapping: the signed assertion hidden in Extensions", "exactly one assertion", func(spec samltest.Spec) *etree.Element {
				signed := e.forger().Sign(t, e.forger().Assertion(spec))
				evil := spec
				evil.NameID = e.owner.Email
				r := e.forger().Wrap(t, spec, e.forger().Assertion(evil))
				ext := etree.NewElement("samlp:Extensions")
				ext.AddChild(signed)
				r.InsertChildAt(1, ext)
				return r
			}},
			{"comment-split NameID", "not one plain value", func(spec samltest.Spec) *etree.Element {
				// The identity provider vouches for bob@example.com.evil.test;
				// a comment, which the signature does not cover, splits it.
				spec.NameID = bob.Email + ".evil.test"
				r := e.forger().Response(t, spec)
				id := nameID(r)
				for _, c := range append([]etree.Token(nil), id.Child...) {
					id.RemoveChild(c)
				}
				id.CreateText(bob.Email)
				id.CreateComment("")
				id.CreateText(".evil.test")
				return r
			}},
			{"encrypted assertion", "encrypted the assertion", func(spec samltest.Spec) *etree.Element {
				r := e.forger().Wrap(t, spec)
				r.CreateElement("saml:EncryptedAssertion").CreateElement("xenc:EncryptedData")
				return r
			}},
			{"a failed status", "not a success", func(spec samltest.Spec) *etree.Element {
				r := e.forger().Response(t, spec)
				r.FindElement("./Status/StatusCode").CreateAttr("Value", "urn:oasis:names:tc:SAML:2.0:status:Requester")
				return r
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				b := samltest.NewBrowser(t)
				id, relay := e.startSignIn(b)
				before := len(e.failuresAudited(e.owner.OrgID))
				refusedWith(t, e.post(b, c.forge(e.spec(bob.Email, id)), relay), c.want)
				want := 1
				if unverified[c.name] {
					want = 0
				}
				if n := len(e.failuresAudited(e.owner.OrgID)) - before; n != want {
					t.Errorf("%d entries audited for the organisation, want %d", n, want)
				}
			})
		}
		// Nobody was made by the attempts, though accounts are made at
		// sign-in here.
		if _, _, err := s.UserCredentials(t.Context(), bob.Email+".evil.test"); err == nil {
			t.Error("the comment-split address got an account")
		}
	})
}

// signTampered forges the response of spec with its assertion changed by
// tamper before it is signed: a response the identity provider signed as
// it is.
func (e *samlEnv) signTampered(t *testing.T, spec samltest.Spec, tamper func(assertion *etree.Element)) *etree.Element {
	a := e.forger().Assertion(spec)
	tamper(a)
	return e.forger().Wrap(t, spec, e.forger().Sign(t, a))
}

// stamp writes a time as SAML does.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// nameID is the NameID of a forged response's assertion.
func nameID(r *etree.Element) *etree.Element {
	for _, el := range r.FindElements("//NameID") {
		if !strings.Contains(el.GetPath(), "Extensions") {
			return el
		}
	}
	return nil
}
