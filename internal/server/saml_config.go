package server

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/saml"
	"github.com/perch-dev/perch/internal/store"
)

// An organisation's SAML settings, for its owners at /api/v1/org/saml and
// for platform admins at /api/v1/admin/orgs/{id}/saml, with the same
// shapes. The difference: a domain an admin lists is verified on their
// word, one an owner lists by a DNS TXT record.

// dnsLookupTimeout bounds the TXT lookups of one domain verification.
const dnsLookupTimeout = 5 * time.Second

// ssoOrg is the organisation a settings route acts on, and whether the
// caller acts as a platform admin: the path's organisation (which must
// exist) on admin routes, the caller's own on the owner's.
func (s *Server) ssoOrg(r *http.Request) (orgID string, asAdmin bool, err error) {
	id := r.PathValue("id")
	if id == "" {
		return principal(r).User.OrgID, false, nil
	}
	if id, err = adminOrgID(r); err != nil {
		return "", true, err
	}
	if _, err := s.ssoDB.Org(r.Context(), id); err != nil {
		return "", true, err
	}
	return id, true, nil
}

// describeSAML is the organisation's settings as GET answers them; when
// none are stored, the service provider's values alone.
func (s *Server) describeSAML(ctx context.Context, orgID string) (*perch.SAMLConfig, error) {
	out := &perch.SAMLConfig{OrgID: orgID, DefaultRole: perch.RoleMember, Domains: []perch.SAMLDomain{},
		EntityID: s.samlEntityID(orgID), ACSURL: s.samlACSURL(), MetadataURL: s.samlEntityID(orgID), LoginURL: s.samlLoginURL(orgID),
		SCIMBaseURL: s.scimBase()}
	tok, err := s.ssoDB.SCIMToken(ctx, orgID)
	switch perch.ErrorCode(err) {
	case "":
		out.SCIMToken = tok
	case perch.ENOTFOUND:
	default:
		return nil, err
	}
	cfg, err := s.ssoDB.SAMLConfig(ctx, orgID)
	if perch.ErrorCode(err) == perch.ENOTFOUND {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out.Configured, out.Enabled, out.Enforce, out.JITProvisioning = true, cfg.Enabled, cfg.Enforce, cfg.JITProvisioning
	out.DefaultRole, out.EmailAttribute, out.AllowIDPInitiated = cfg.DefaultRole, cfg.EmailAttribute, cfg.AllowIDPInitiated
	out.IDPMetadataXML, out.IDPMetadataURL, out.IDPEntityID, out.IDPSSOURL = cfg.IDPMetadataXML, cfg.IDPMetadataURL, cfg.IDPEntityID, cfg.IDPSSOURL
	out.Certificate, out.DomainVerification = cfg.SPCertificate, perch.DomainVerificationPrefix+cfg.DomainToken
	out.CreatedAt, out.UpdatedAt = &cfg.CreatedAt, &cfg.UpdatedAt
	if certs, err := saml.ParseCertsPEM(cfg.IDPCertificates); err == nil {
		t := saml.FirstExpiry(certs)
		out.IDPCertificateUntil = &t
	}
	if out.Domains, err = s.ssoDB.SAMLDomains(ctx, orgID); err != nil {
		return nil, err
	}
	return out, nil
}

// getSAML serves GET …/saml.
func (s *Server) getSAML(w http.ResponseWriter, r *http.Request) error {
	orgID, _, err := s.ssoOrg(r)
	if err != nil {
		return err
	}
	out, err := s.describeSAML(r.Context(), orgID)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, out)
}

// putSAML serves PUT …/saml: the identity provider's metadata (pasted, or
// fetched now from its URL) and the switches. The first save makes the
// organisation's service provider key, sealed under the server's key (503
// without one); later saves keep it.
func (s *Server) putSAML(w http.ResponseWriter, r *http.Request) error {
	orgID, asAdmin, err := s.ssoOrg(r)
	if err != nil {
		return err
	}
	var in perch.SAMLSettings
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := in.Validate(); err != nil {
		return err
	}
	ctx := r.Context()
	field, data := "idp_metadata_xml", []byte(in.IDPMetadataXML)
	if in.IDPMetadataURL != "" {
		field = "idp_metadata_url"
		if data, err = s.fetchMetadata(ctx, in.IDPMetadataURL); err != nil {
			return perch.Problems{field: "the metadata " + err.Error()}.Err()
		}
	}
	md, err := saml.ParseMetadata(data)
	if err != nil {
		return perch.Problems{field: "the metadata " + err.Error()}.Err()
	}
	if until := saml.FirstExpiry(md.Certs); !s.now().Before(until) {
		return perch.Problems{field: "the identity provider's signing certificate expired on " + until.Format(time.DateOnly)}.Err()
	}
	if asAdmin && in.Domains != nil {
		for _, d := range *in.Domains {
			if owner, err := s.ssoDB.SAMLOrgByDomain(ctx, d); err == nil && owner != orgID {
				return perch.Errorf(perch.ECONFLICT, "The domain %s is verified already for another organisation.", d)
			}
		}
	}
	c := store.SAMLConfig{OrgID: orgID, Enabled: in.Enabled, Enforce: in.Enforce, JITProvisioning: in.JITProvisioning,
		DefaultRole: in.DefaultRole, EmailAttribute: in.EmailAttribute, AllowIDPInitiated: in.AllowIDPInitiated,
		IDPMetadataXML: string(data), IDPMetadataURL: in.IDPMetadataURL, IDPEntityID: md.EntityID, IDPSSOURL: md.SSOURL,
		IDPCertificates: saml.CertsPEM(md.Certs)}
	prev, err := s.ssoDB.SAMLConfig(ctx, orgID)
	switch perch.ErrorCode(err) {
	case perch.ENOTFOUND:
		if s.opts.Secrets == nil {
			return errNoSecretKey
		}
		key, cert, err := saml.NewKey("Perch SAML "+orgID, s.now(), s.opts.SSO.NewKey)
		if err != nil {
			return err
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		c.SPKeySealed, c.SPCertificate, c.DomainToken = s.opts.Secrets.Seal(der), cert, strings.ToLower(rand.Text())
	case "":
	default:
		return err
	}
	if _, err := s.ssoDB.PutSAMLConfig(ctx, c); err != nil {
		return err
	}
	changes := map[string]any{"enabled": in.Enabled, "enforce": in.Enforce, "jit_provisioning": in.JITProvisioning,
		"default_role": in.DefaultRole, "email_attribute": in.EmailAttribute, "allow_idp_initiated": in.AllowIDPInitiated,
		"idp_entity_id": md.EntityID, "idp_sso_url": md.SSOURL, "idp_metadata_url": in.IDPMetadataURL}
	if in.Domains != nil {
		if err := s.ssoDB.SetSAMLDomains(ctx, orgID, *in.Domains, asAdmin); err != nil {
			return err
		}
		changes["domains"] = *in.Domains
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditSAMLUpdated, Target: orgTarget(orgID), OrgID: orgID, Changes: changes})
	if c.Enabled && c.Enforce && (prev == nil || !prev.Enabled || !prev.Enforce) {
		if err := s.ssoBinds(r, orgID, ""); err != nil { // sign-ins made before it do not outlive it
			return err
		}
	}
	if !asAdmin {
		s.checkDomains(r, orgID)
	}
	out, err := s.describeSAML(ctx, orgID)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, out)
}

// orgTarget is an organisation as the target of an entry.
func orgTarget(id string) perch.AuditTarget { return perch.AuditTarget{Type: "org", ID: id} }

// deleteSAML serves DELETE …/saml: the settings, the service provider key
// and the domains go; the SCIM token stays.
func (s *Server) deleteSAML(w http.ResponseWriter, r *http.Request) error {
	orgID, _, err := s.ssoOrg(r)
	if err != nil {
		return err
	}
	if err := s.ssoDB.DeleteSAMLConfig(r.Context(), orgID); err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditSAMLDeleted, Target: orgTarget(orgID), OrgID: orgID})
	return noContent(w)
}

// samlTestResult is the verdict of POST …/saml/test.
type samlTestResult struct {
	OK       bool     `json:"ok"`
	Problems []string `json:"problems"`
}

// testSAML serves POST …/saml/test: it reads the stored settings as a
// sign-in would and lists what stands in the way, with what expires
// soon. The metadata's URL, when there is one, is fetched again.
func (s *Server) testSAML(w http.ResponseWriter, r *http.Request) error {
	orgID, _, err := s.ssoOrg(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	res := samlTestResult{Problems: []string{}}
	cfg, err := s.ssoDB.SAMLConfig(ctx, orgID)
	switch perch.ErrorCode(err) {
	case "":
		res.Problems = s.samlProblems(ctx, cfg)
	case perch.ENOTFOUND:
		res.Problems = append(res.Problems, "SAML is not set up for this organisation: store the identity provider's metadata first.")
	default:
		return err
	}
	res.OK = len(res.Problems) == 0
	s.audit(r, perch.AuditEntry{Action: perch.AuditSAMLTested, Target: orgTarget(orgID), OrgID: orgID,
		Changes: map[string]any{"ok": res.OK, "problems": len(res.Problems)}})
	return respond(w, http.StatusOK, res)
}

// samlProblems lists what is wrong with stored settings.
func (s *Server) samlProblems(ctx context.Context, cfg *store.SAMLConfig) []string {
	problems := []string{}
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if !cfg.Enabled {
		add("Single sign-on is off (enabled is false): members cannot sign in with it.")
	}
	md, err := saml.ParseMetadata([]byte(cfg.IDPMetadataXML))
	if err != nil {
		add("The stored metadata %s.", err)
	}
	if cfg.IDPMetadataURL != "" {
		data, err := s.fetchMetadata(ctx, cfg.IDPMetadataURL)
		if err == nil {
			var now *saml.Metadata
			if now, err = saml.ParseMetadata(data); err == nil && md != nil && !sameIDP(md, now) {
				add("The metadata at %s has changed since it was stored (a new certificate or address?): save the settings again to take it.", cfg.IDPMetadataURL)
			}
		}
		if err != nil {
			add("The metadata at %s %s.", cfg.IDPMetadataURL, err)
		}
	}
	if md != nil {
		now := s.now()
		for _, c := range md.Certs {
			name := c.Subject.CommonName
			if name == "" {
				name = c.SerialNumber.String()
			}
			switch {
			case now.Before(c.NotBefore):
				add("The identity provider's certificate %q is not valid before %s.", name, c.NotBefore.UTC().Format(time.DateOnly))
			case !now.Before(c.NotAfter):
				add("The identity provider's certificate %q expired on %s: sign-ins are refused.", name, c.NotAfter.UTC().Format(time.DateOnly))
			case c.NotAfter.Sub(now) < perch.SAMLCertificateNotice:
				add("The identity provider's certificate %q expires on %s, within 30 days: have the identity provider roll it over and save its new metadata here.", name, c.NotAfter.UTC().Format(time.DateOnly))
			}
		}
	}
	if _, err := s.spKey(cfg); err != nil {
		add("This server cannot read the organisation's SAML key (%v): sign-ins cannot start.", err)
	}
	domains, err := s.ssoDB.SAMLDomains(ctx, cfg.OrgID)
	if err != nil {
		add("The domains cannot be read.")
	}
	for _, d := range domains {
		if !d.Verified {
			add("The domain %s is not verified: add the DNS TXT record %s%s to it, then verify it.", d.Domain, perch.DomainVerificationPrefix, cfg.DomainToken)
		}
	}
	return problems
}

// sameIDP reports whether two readings of metadata name the same identity
// provider, address and certificates.
func sameIDP(a, b *saml.Metadata) bool {
	return a.EntityID == b.EntityID && a.SSOURL == b.SSOURL && saml.CertsPEM(a.Certs) == saml.CertsPEM(b.Certs)
}

// createSCIMToken serves POST …/saml/scim-token: a new SCIM token for the
// organisation, answered once; the old one stops working at once.
func (s *Server) createSCIMToken(w http.ResponseWriter, r *http.Request) error {
	orgID, _, err := s.ssoOrg(r)
	if err != nil {
		return err
	}
	raw, hash := auth.NewToken(perch.SCIMTokenPrefix)
	tok, err := s.ssoDB.SetSCIMToken(r.Context(), orgID, hash, auth.DisplayPrefix(raw))
	if err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditSCIMTokenCreated, Target: perch.AuditTarget{Type: "scim_token", ID: orgID}, OrgID: orgID,
		Changes: map[string]any{"token_prefix": tok.TokenPrefix}})
	return respond(w, http.StatusCreated, map[string]any{"token": raw, "token_prefix": tok.TokenPrefix, "created_at": tok.CreatedAt})
}

// domainCheck is the outcome of one domain's verification.
type domainCheck struct {
	Domain   string `json:"domain"`
	Verified bool   `json:"verified"`
	Problem  string `json:"problem"`
}

// verifySAMLDomains serves POST /api/v1/org/saml/domains/verify: it looks
// up the TXT records of the organisation's unverified domains and answers
// every domain's state.
func (s *Server) verifySAMLDomains(w http.ResponseWriter, r *http.Request) error {
	orgID := principal(r).User.OrgID
	if _, err := s.samlConfigOf(r.Context(), orgID); err != nil {
		return err
	}
	return respond(w, http.StatusOK, s.checkDomains(r, orgID))
}

// checkDomains verifies each unverified domain of the organisation whose
// TXT records hold the organisation's verification value.
func (s *Server) checkDomains(r *http.Request, orgID string) []domainCheck {
	ctx := r.Context()
	out := []domainCheck{}
	cfg, err := s.ssoDB.SAMLConfig(ctx, orgID)
	if err != nil {
		return out
	}
	domains, err := s.ssoDB.SAMLDomains(ctx, orgID)
	if err != nil {
		return out
	}
	want := perch.DomainVerificationPrefix + cfg.DomainToken
	for _, d := range domains {
		c := domainCheck{Domain: d.Domain, Verified: d.Verified}
		if !d.Verified {
			c.Problem = s.verifyDomain(r, orgID, d.Domain, want)
			c.Verified = c.Problem == ""
		}
		out = append(out, c)
	}
	return out
}

// verifyDomain looks for the TXT record want on domain and marks the
// domain verified when it is there; it answers the problem, or "".
func (s *Server) verifyDomain(r *http.Request, orgID, domain, want string) string {
	ctx, cancel := context.WithTimeout(r.Context(), dnsLookupTimeout)
	defer cancel()
	records, err := s.opts.SSO.LookupTXT(ctx, domain)
	if err != nil {
		return fmt.Sprintf("The TXT records of %s could not be read: %v.", domain, err)
	}
	if !slices.ContainsFunc(records, func(v string) bool { return strings.TrimSpace(v) == want }) {
		return fmt.Sprintf("No TXT record %s was found on %s (DNS changes can take a while to show).", want, domain)
	}
	if err := s.ssoDB.VerifySAMLDomain(r.Context(), orgID, domain); err != nil {
		return perch.ErrorMessage(err)
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditSAMLDomainVerified, Target: orgTarget(orgID), OrgID: orgID,
		Changes: map[string]any{"domain": domain}})
	return ""
}
