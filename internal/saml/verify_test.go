package saml

import (
	"strings"
	"testing"
	"time"

	"github.com/beevik/etree"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/samltest"
)

// TestVerifyAcceptsSignedResponses: a response signed on the assertion, on
// the response or on both is accepted, and says who it signs in and until
// when its ID must be remembered.
func TestVerifyAcceptsSignedResponses(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, sign := range []struct{ response, assertion bool }{{false, true}, {true, false}, {true, true}} {
		s := spec(testEmail, "req-1", now)
		s.SignResponse, s.SignAssertion = sign.response, sign.assertion
		id, err := verify(newTrust("req-1", now), raw(t, forger().Response(t, s)))
		if err != nil {
			t.Fatalf("signed %+v: %v", sign, err)
		}
		if id.Email != testEmail || id.AssertionID == "" || id.Name != "" {
			t.Errorf("signed %+v: identity %+v", sign, id)
		}
		if until := now.Add(5 * time.Minute).Truncate(time.Millisecond); id.Until.Before(until) {
			t.Errorf("signed %+v: remembered until %v, before the assertion's end %v", sign, id.Until, until)
		}
	}
}

// TestVerifyReadsAttributes: the address from the configured attribute,
// else the NameID; the name from a display name, else given name and
// surname.
func TestVerifyReadsAttributes(t *testing.T) {
	t.Parallel()
	now := time.Now()
	cases := []struct {
		name       string
		attribute  string
		attributes map[string]string
		email      string
		person     string
	}{
		{"NameID", "", nil, testEmail, ""},
		{"display name", "", map[string]string{"http://schemas.microsoft.com/identity/claims/displayname": "Bob B", "givenName": "X"}, testEmail, "Bob B"},
		{"given name and surname", "", map[string]string{"givenName": "Bob", "surname": "Member"}, testEmail, "Bob Member"},
		{"the configured attribute", "mail", map[string]string{"mail": "robert@example.com"}, "robert@example.com", ""},
		{"the configured attribute, absent", "mail", nil, testEmail, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := spec(testEmail, "", now)
			s.Attributes = c.attributes
			trust := newTrust("", now)
			trust.AllowIDPInitiated, trust.EmailAttribute = true, c.attribute
			id, err := verify(trust, raw(t, forger().Response(t, s)))
			if err != nil {
				t.Fatal(err)
			}
			if id.Email != c.email || id.Name != c.person {
				t.Errorf("identity %+v, want %q %q", id, c.email, c.person)
			}
		})
	}
}

// TestVerifyRefuses: responses wrong in one way each, with the refusal of
// Perch's own check (so that removing it fails its case), and Verified as
// the server audits it: true once the identity provider's signature
// verified, false for what anyone could have made.
func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	now := time.Now()
	f := forger()
	_, strangerKeys := testKeys()
	stranger := samltest.Forger{Keys: strangerKeys, Issuer: testIssuer}
	signTampered := func(s samltest.Spec, tamper func(assertion *etree.Element)) *etree.Element {
		a := f.Assertion(s)
		tamper(a)
		return f.Wrap(t, s, f.Sign(t, a))
	}
	cases := []struct {
		name, want string
		verified   bool
		trust      func(*Trust)
		forge      func(s samltest.Spec) *etree.Element
	}{
		{"unsigned", "is not signed", false, nil, func(s samltest.Spec) *etree.Element {
			s.SignAssertion = false
			return f.Response(t, s)
		}},
		{"signed by another key", "does not verify", false, nil, func(s samltest.Spec) *etree.Element {
			return stranger.Response(t, s)
		}},
		{"response signed by another key", "does not verify", false, nil, func(s samltest.Spec) *etree.Element {
			s.SignAssertion, s.SignResponse = false, true
			return stranger.Response(t, s)
		}},
		{"altered after signing", "does not verify", false, nil, func(s samltest.Spec) *etree.Element {
			r := f.Response(t, s)
			r.FindElement("//NameID").SetText("olive.owner@example.com")
			return r
		}},
		{"wrong audience", "another audience", true, nil, func(s samltest.Spec) *etree.Element {
			s.Audience = "https://perch.example/api/v1/auth/saml/metadata?org_id=someone-else"
			return f.Response(t, s)
		}},
		{"wrong destination", "another destination", true, nil, func(s samltest.Spec) *etree.Element {
			s.Recipient, s.Destination = s.Destination, "https://evil.test/acs"
			return f.Response(t, s)
		}},
		{"wrong recipient", "recipient is not this server", true, nil, func(s samltest.Spec) *etree.Element {
			s.Recipient = "https://evil.test/acs"
			return f.Response(t, s)
		}},
		{"expired", "has expired", true, nil, func(s samltest.Spec) *etree.Element {
			s.Now = s.Now.Add(-10 * time.Minute)
			return f.Response(t, s)
		}},
		{"bearer confirmation expired", "has expired", true, nil, func(s samltest.Spec) *etree.Element {
			return signTampered(s, func(a *etree.Element) {
				a.FindElement(".//SubjectConfirmationData").CreateAttr("NotOnOrAfter", stamp(s.Now.Add(-3*time.Minute)))
			})
		}},
		{"conditions expired", "has expired", true, nil, func(s samltest.Spec) *etree.Element {
			return signTampered(s, func(a *etree.Element) {
				a.FindElement("./Conditions").CreateAttr("NotOnOrAfter", stamp(s.Now.Add(-3*time.Minute)))
			})
		}},
		{"an unreadable time", "cannot be read", true, nil, func(s samltest.Spec) *etree.Element {
			return signTampered(s, func(a *etree.Element) {
				a.FindElement("./Conditions").CreateAttr("NotBefore", "yesterday")
			})
		}},
		{"not yet valid", "not valid yet", true, nil, func(s samltest.Spec) *etree.Element {
			s.Now = s.Now.Add(10 * time.Minute)
			return f.Response(t, s)
		}},
		{"unknown InResponseTo", "did not start", true, nil, func(s samltest.Spec) *etree.Element {
			s.InResponseTo = samltest.ID()
			return f.Response(t, s)
		}},
		{"started at the identity provider", "not allowed for this organisation", true, nil, func(s samltest.Spec) *etree.Element {
			s.InResponseTo = ""
			return f.Response(t, s)
		}},
		{"missing issuer", "names no issuer", true, nil, func(s samltest.Spec) *etree.Element {
			s.NoIssuer = true
			return f.Response(t, s)
		}},
		{"another identity provider's issuer", "another identity provider", true, nil, func(s samltest.Spec) *etree.Element {
			s.Issuer = "https://other-idp.example/metadata"
			return f.Response(t, s)
		}},
		{"signature wrapping: an unsigned assertion beside the signed one", "exactly one assertion", false, nil, func(s samltest.Spec) *etree.Element {
			signed := f.Sign(t, f.Assertion(s))
			evil := s
			evil.NameID = "olive.owner@example.com"
			return f.Wrap(t, s, f.Assertion(evil), signed)
		}},
		{"signature wrapping: the signed assertion hidden in Extensions", "exactly one assertion", false, nil, func(s samltest.Spec) *etree.Element {
			signed := f.Sign(t, f.Assertion(s))
			evil := s
			evil.NameID = "olive.owner@example.com"
			r := f.Wrap(t, s, f.Assertion(evil))
			ext := etree.NewElement("samlp:Extensions")
			ext.AddChild(signed)
			r.InsertChildAt(1, ext)
			return r
		}},
		{"comment-split NameID", "not one plain value", true, nil, func(s samltest.Spec) *etree.Element {
			// The identity provider vouches for bob@example.com.evil.test;
			// a comment, which the signature does not cover, splits it.
			s.NameID = testEmail + ".evil.test"
			r := f.Response(t, s)
			id := r.FindElement("//NameID")
			for _, c := range append([]etree.Token(nil), id.Child...) {
				id.RemoveChild(c)
			}
			id.CreateText(testEmail)
			id.CreateComment("")
			id.CreateText(".evil.test")
			return r
		}},
		{"not an address", "where an e-mail address belongs", true, nil, func(s samltest.Spec) *etree.Element {
			s.NameID = "bob"
			return f.Response(t, s)
		}},
		{"the attribute twice", "more than once", true, func(tr *Trust) { tr.EmailAttribute = "mail" }, func(s samltest.Spec) *etree.Element {
			s.Attributes = map[string]string{"mail": testEmail}
			return signTampered(s, func(a *etree.Element) {
				st := a.FindElement("./AttributeStatement")
				st.AddChild(st.FindElement("./Attribute").Copy())
			})
		}},
		{"encrypted assertion", "encrypted the assertion", false, nil, func(s samltest.Spec) *etree.Element {
			r := f.Wrap(t, s)
			r.CreateElement("saml:EncryptedAssertion").CreateElement("xenc:EncryptedData")
			return r
		}},
		{"a failed status", "not a success", true, nil, func(s samltest.Spec) *etree.Element {
			r := f.Response(t, s)
			r.FindElement("./Status/StatusCode").CreateAttr("Value", "urn:oasis:names:tc:SAML:2.0:status:Requester")
			return r
		}},
		{"not a response", "not a SAML response", false, nil, func(s samltest.Spec) *etree.Element {
			return f.Sign(t, f.Assertion(s))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			trust := newTrust("req-1", now)
			if c.trust != nil {
				c.trust(&trust)
			}
			id, err := verify(trust, raw(t, c.forge(spec(testEmail, "req-1", now))))
			if err == nil {
				t.Fatalf("accepted as %+v", id)
			}
			wantRefusal(t, err, c.want, c.verified)
		})
	}
}

// TestParseResponseBounds: documents whose parse would cost far more than
// a real response's are refused, by the one streaming scan, with a message
// that says what they cross; a real one fits well within the limits.
func TestParseResponseBounds(t *testing.T) {
	t.Parallel()
	doc := func(n int, one string) []byte {
		return []byte(`<samlp:Response xmlns:samlp="` + nsProtocol + `" ID="_x" Version="2.0">` +
			strings.Repeat(one, n) + `</samlp:Response>`)
	}
	var attrs strings.Builder
	attrs.WriteString("<a")
	for i := range 33 {
		attrs.WriteString(" a" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + `=""`)
	}
	attrs.WriteString("/>")
	for _, c := range []struct {
		name, want string
		doc        []byte
	}{
		{"280 KB", "larger than the 256 KiB Perch reads", doc(70_000, "<a/>")},
		{"2,001 elements", "more than 2000 elements, far more than a sign-in needs", doc(2000, "<a/>")},
		{"33 deep", "nests elements more than 32 deep", doc(1, strings.Repeat("<a>", 32)+strings.Repeat("</a>", 32))},
		{"33 attributes", "more than 32 attributes", doc(1, attrs.String())},
		{"17 comments", "more than 16 comments", doc(17, "<!---->")},
		{"a document type declaration", "document type declaration", append([]byte(`<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">]>`), doc(1, "<a/>")...)},
		{"not XML", "not well-formed XML", []byte("<a><b></a>")},
		{"unclosed", "not well-formed XML", []byte("<a>")},
		{"empty", "not well-formed XML", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseResponse(c.doc)
			wantRefusal(t, err, c.want, false)
		})
	}
	if _, err := ParseResponse(doc(2000-1, "<a/>")); err != nil {
		t.Errorf("2,000 elements: %v", err)
	}
	if err := ErrTooLarge.Error(); !strings.Contains(err, "256 KiB") {
		t.Errorf("ErrTooLarge = %q", err)
	}
}

// TestAudiences: what a response claims to be for, read before anything
// is verified, plain values only.
func TestAudiences(t *testing.T) {
	t.Parallel()
	s := spec(testEmail, "", time.Now())
	r := forger().Response(t, s)
	extra := r.FindElement("//AudienceRestriction").CreateElement("saml:Audience")
	extra.CreateText("a")
	extra.CreateComment("")
	extra.CreateText("b")
	resp, err := ParseResponse(raw(t, r))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Audiences(); len(got) != 1 || got[0] != testAudience {
		t.Errorf("Audiences() = %q, want [%q]", got, testAudience)
	}
}

// stamp writes a time as SAML does.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// checkIdentity checks what every Identity that Verify answers obeys.
func checkIdentity(t *testing.T, id *Identity, trust Trust) {
	t.Helper()
	p := perch.Problems{}
	perch.ValidateEmail(p, id.Email)
	switch {
	case len(p) > 0:
		t.Fatalf("accepted the address %q: %v", id.Email, p)
	case id.AssertionID == "":
		t.Fatal("accepted an assertion without an ID")
	case id.Until.Before(trust.Now):
		t.Fatalf("accepted an assertion valid until %v, before now %v", id.Until, trust.Now)
	case perch.TextProblem(id.Name, perch.SingleLine) != "" && id.Name != "":
		t.Fatalf("accepted the name %q", id.Name)
	}
}
