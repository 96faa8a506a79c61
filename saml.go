package perch

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// SAML single sign-on per organisation (docs/DESIGN.md, SAML).

// SAMLClockSkew is how far a SAML response's validity window is stretched
// on either side for clocks that disagree.
const SAMLClockSkew = 2 * time.Minute

// SAMLRequestTTL is how long a sign-in started at Perch waits for the
// identity provider's answer.
const SAMLRequestTTL = 10 * time.Minute

// DomainVerificationPrefix starts the DNS TXT record that proves an
// organisation holds a domain: perch-domain-verification=<token>, on the
// domain itself.
const DomainVerificationPrefix = "perch-domain-verification="

// Limits of the SAML settings.
const (
	MaxSAMLDomains        = 20
	MaxMetadataURLLen     = 2048
	MaxEmailAttributeLen  = 256
	MaxDomainLen          = 253
	SAMLCertificateNotice = 30 * 24 * time.Hour // the test warns of an IdP certificate that expires within this
)

// SAMLConfig is an organisation's single sign-on as its owners and the
// platform admins read it: the settings, the identity provider's values
// taken from its metadata, and the values of this server (the service
// provider) to enter at the identity provider.
type SAMLConfig struct {
	OrgID             string `json:"org_id"`
	Configured        bool   `json:"configured"` // false: nothing is stored yet, and only the SP's values are meaningful
	Enabled           bool   `json:"enabled"`
	Enforce           bool   `json:"enforce"`
	JITProvisioning   bool   `json:"jit_provisioning"`
	DefaultRole       string `json:"default_role"`
	EmailAttribute    string `json:"email_attribute"`
	AllowIDPInitiated bool   `json:"allow_idp_initiated"`

	IDPMetadataXML      string     `json:"idp_metadata_xml"`
	IDPMetadataURL      string     `json:"idp_metadata_url"`
	IDPEntityID         string     `json:"idp_entity_id"`
	IDPSSOURL           string     `json:"idp_sso_url"`
	IDPCertificateUntil *time.Time `json:"idp_certificate_expires_at"` // the first of its signing certificates to expire

	// The service provider: what the identity provider needs.
	EntityID    string `json:"entity_id"`
	ACSURL      string `json:"acs_url"`
	MetadataURL string `json:"metadata_url"`
	Certificate string `json:"certificate"` // PEM; "" until the configuration is first stored
	LoginURL    string `json:"login_url"`

	Domains            []SAMLDomain `json:"domains"`
	DomainVerification string       `json:"domain_verification"` // the TXT record's value; "" until stored
	SCIMToken          *SCIMToken   `json:"scim_token"`          // the organisation's SCIM token, if one was made
	SCIMBaseURL        string       `json:"scim_base_url"`       // what the identity provider's SCIM connector is given

	CreatedAt *time.Time `json:"created_at"`
	UpdatedAt *time.Time `json:"updated_at"`
}

// SAMLDomain is an e-mail domain of an organisation, for SSO discovery:
// only a verified one sends its addresses to the organisation's sign-in.
type SAMLDomain struct {
	Domain     string     `json:"domain"`
	Verified   bool       `json:"verified"`
	VerifiedAt *time.Time `json:"verified_at"`
}

// SCIMToken describes an organisation's SCIM token; its raw value is shown
// once, when it is made.
type SCIMToken struct {
	TokenPrefix string    `json:"token_prefix"`
	CreatedAt   time.Time `json:"created_at"`
}

// SAMLSettings is what an owner or a platform admin stores: the identity
// provider's metadata (pasted, or a URL the server fetches) and the
// switches. A nil Domains leaves the domains as they are.
type SAMLSettings struct {
	IDPMetadataXML    string    `json:"idp_metadata_xml"`
	IDPMetadataURL    string    `json:"idp_metadata_url"`
	Enabled           bool      `json:"enabled"`
	Enforce           bool      `json:"enforce"`
	JITProvisioning   bool      `json:"jit_provisioning"`
	DefaultRole       string    `json:"default_role"`
	EmailAttribute    string    `json:"email_attribute"`
	AllowIDPInitiated bool      `json:"allow_idp_initiated"`
	Domains           *[]string `json:"domains"`
}

// Validate trims the settings, fills the default role (member) and
// reports every problem at once. It does not read the metadata: that
// needs the XML parser, in the server.
func (s *SAMLSettings) Validate() error {
	p := Problems{}
	s.IDPMetadataXML = strings.TrimSpace(s.IDPMetadataXML)
	s.IDPMetadataURL = strings.TrimSpace(s.IDPMetadataURL)
	s.EmailAttribute = strings.TrimSpace(s.EmailAttribute)
	s.DefaultRole = strings.TrimSpace(s.DefaultRole)
	switch {
	case s.IDPMetadataXML == "" && s.IDPMetadataURL == "":
		p.Add("idp_metadata_xml", "is required (or idp_metadata_url)")
	case s.IDPMetadataXML != "" && s.IDPMetadataURL != "":
		p.Add("idp_metadata_url", "give the metadata or its URL, not both")
	case s.IDPMetadataURL != "":
		if problem := MetadataURLProblem(s.IDPMetadataURL); problem != "" {
			p.Add("idp_metadata_url", problem)
		}
	}
	if s.IDPMetadataXML != "" && !utf8.ValidString(s.IDPMetadataXML) {
		p.Add("idp_metadata_xml", "must be valid UTF-8")
	}
	if s.DefaultRole == "" {
		s.DefaultRole = RoleMember
	}
	if s.DefaultRole != RoleMember && s.DefaultRole != RoleAdmin {
		p.Add("default_role", "must be member or admin")
	}
	if utf8.RuneCountInString(s.EmailAttribute) > MaxEmailAttributeLen {
		p.Add("email_attribute", fmt.Sprintf("must be at most %d characters", MaxEmailAttributeLen))
	}
	CheckText(p, "email_attribute", s.EmailAttribute, SingleLine)
	if s.Enforce && !s.Enabled {
		p.Add("enforce", "needs enabled: sign-in cannot be limited to single sign-on while it is off")
	}
	if s.Domains != nil {
		ds, problem := NormalizeDomains(*s.Domains)
		if problem != "" {
			p.Add("domains", problem)
		}
		s.Domains = &ds
	}
	return p.Err()
}

// MetadataURLProblem returns what is wrong with the URL of an identity
// provider's metadata, or "": an absolute http or https URL with a host
// and no credentials.
func MetadataURLProblem(raw string) string {
	if len(raw) > MaxMetadataURLLen {
		return fmt.Sprintf("must be at most %d characters", MaxMetadataURLLen)
	}
	if TextProblem(raw, SingleLine) != "" || strings.ContainsAny(raw, " \\") {
		return "must be a URL"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return "must be an absolute URL, such as https://idp.example.com/metadata"
	case u.Scheme != "https" && u.Scheme != "http":
		return "must be an http or https URL"
	case u.User != nil:
		return "must not hold a user name or password"
	}
	return ""
}

// NormalizeDomains lowercases and checks a list of e-mail domains, drops
// repeats, and returns what is wrong with the first bad one.
func NormalizeDomains(in []string) ([]string, string) {
	if len(in) > MaxSAMLDomains {
		return nil, fmt.Sprintf("must hold at most %d domains", MaxSAMLDomains)
	}
	out := []string{}
	seen := map[string]bool{}
	for _, d := range in {
		d = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
		if problem := DomainProblem(d); problem != "" {
			return nil, fmt.Sprintf("%q %s", d, problem)
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out, ""
}

// DomainProblem returns what is wrong with a lowercased domain name, or "":
// two labels or more of letters, digits and inner hyphens (an
// internationalised name in its xn-- form), 253 characters at most.
func DomainProblem(d string) string {
	if d == "" || len(d) > MaxDomainLen {
		return "is not a domain name"
	}
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return "is not a domain name (example.com, say)"
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "is not a domain name"
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "is not a domain name (write an internationalised one in its xn-- form)"
			}
		}
	}
	return ""
}

// EmailDomain returns the domain of an e-mail address, lowercased.
func EmailDomain(email string) string {
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(email[at+1:])), ".")
}
