package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// SAMLConfig is an organisation's stored single sign-on. The service
// provider's private key is sealed (internal/secrets) by the caller: the
// store never sees it in the clear. IDPCertificates are PEM blocks.
type SAMLConfig struct {
	OrgID             string
	Enabled           bool
	Enforce           bool
	JITProvisioning   bool
	DefaultRole       string
	EmailAttribute    string
	AllowIDPInitiated bool
	IDPMetadataXML    string
	IDPMetadataURL    string
	IDPEntityID       string
	IDPSSOURL         string
	IDPCertificates   string
	SPKeySealed       []byte
	SPCertificate     string // PEM
	DomainToken       string
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

const samlConfigColumns = `org_id, enabled, enforce, jit_provisioning, default_role, email_attribute, allow_idp_initiated,
	idp_metadata_xml, idp_metadata_url, idp_entity_id, idp_sso_url, idp_certificates, sp_key_sealed, sp_certificate,
	domain_token, created_at, updated_at`

// SAMLConfig returns the organisation's settings, or ENOTFOUND when none
// are stored.
func (s *Store) SAMLConfig(ctx context.Context, orgID string) (*SAMLConfig, error) {
	var c SAMLConfig
	var sealed string
	var created, updated int64
	err := s.r.QueryRowContext(ctx, s.q(`SELECT `+samlConfigColumns+` FROM saml_configs WHERE org_id = ?`), orgID).Scan(
		&c.OrgID, &c.Enabled, &c.Enforce, &c.JITProvisioning, &c.DefaultRole, &c.EmailAttribute, &c.AllowIDPInitiated,
		&c.IDPMetadataXML, &c.IDPMetadataURL, &c.IDPEntityID, &c.IDPSSOURL, &c.IDPCertificates, &sealed, &c.SPCertificate,
		&c.DomainToken, &created, &updated)
	if err != nil {
		return nil, notFound(err, "SAML configuration")
	}
	if c.SPKeySealed, err = base64.StdEncoding.DecodeString(sealed); err != nil {
		return nil, errors.New("store: the stored SAML key is not base64")
	}
	c.CreatedAt, c.UpdatedAt = fromMS(created), fromMS(updated)
	return &c, nil
}

// PutSAMLConfig stores c as the organisation's settings. The service
// provider's key and certificate and the domain token are written only
// when there were no settings: an update keeps them, so that two first
// saves at once end with one key. It answers the settings as stored.
func (s *Store) PutSAMLConfig(ctx context.Context, c SAMLConfig) (*SAMLConfig, error) {
	now := ms(s.now())
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO saml_configs (`+samlConfigColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (org_id) DO UPDATE SET enabled = excluded.enabled, enforce = excluded.enforce,
			jit_provisioning = excluded.jit_provisioning, default_role = excluded.default_role,
			email_attribute = excluded.email_attribute, allow_idp_initiated = excluded.allow_idp_initiated,
			idp_metadata_xml = excluded.idp_metadata_xml, idp_metadata_url = excluded.idp_metadata_url,
			idp_entity_id = excluded.idp_entity_id, idp_sso_url = excluded.idp_sso_url,
			idp_certificates = excluded.idp_certificates, updated_at = excluded.updated_at`),
		c.OrgID, c.Enabled, c.Enforce, c.JITProvisioning, c.DefaultRole, c.EmailAttribute, c.AllowIDPInitiated,
		c.IDPMetadataXML, c.IDPMetadataURL, c.IDPEntityID, c.IDPSSOURL, c.IDPCertificates,
		base64.StdEncoding.EncodeToString(c.SPKeySealed), c.SPCertificate, c.DomainToken, now, now)
	if err != nil {
		return nil, err
	}
	return s.SAMLConfig(ctx, c.OrgID)
}

// DeleteSAMLConfig removes the organisation's settings with their domains
// and the sign-ins waiting for an answer, or returns ENOTFOUND.
func (s *Store) DeleteSAMLConfig(ctx context.Context, orgID string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM saml_requests WHERE org_id = ?`), orgID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM saml_domains WHERE org_id = ?`), orgID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM saml_configs WHERE org_id = ?`), orgID)
		return expectOne(res, err, "SAML configuration")
	})
}

// SSOEnforced reports whether the organisation signs in with SAML alone
// (enabled and enforced).
func (s *Store) SSOEnforced(ctx context.Context, orgID string) (bool, error) {
	var n int
	err := s.r.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM saml_configs WHERE org_id = ? AND enabled AND enforce`), orgID).Scan(&n)
	return n > 0, err
}

// SAMLDomains lists the organisation's domains by name.
func (s *Store) SAMLDomains(ctx context.Context, orgID string) ([]perch.SAMLDomain, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT domain, verified_at FROM saml_domains WHERE org_id = ? ORDER BY domain`), orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []perch.SAMLDomain{}
	for rows.Next() {
		var d perch.SAMLDomain
		var at sql.NullInt64
		if err := rows.Scan(&d.Domain, &at); err != nil {
			return nil, err
		}
		d.VerifiedAt = fromNullMS(at)
		d.Verified = d.VerifiedAt != nil
		out = append(out, d)
	}
	return out, rows.Err()
}

// errDomainTaken answers a domain verified already by another organisation.
func errDomainTaken(domain string) error {
	return perch.Errorf(perch.ECONFLICT, "The domain %s is verified already for another organisation.", domain)
}

// SetSAMLDomains makes domains the organisation's list: those not in it go,
// new ones come unverified, or verified at once with verified (a platform
// admin's word), which also verifies those already listed. A domain
// verified for another organisation is ECONFLICT. The settings must exist
// (ENOTFOUND).
func (s *Store) SetSAMLDomains(ctx context.Context, orgID string, domains []string, verified bool) error {
	now := ms(s.now())
	return s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM saml_configs WHERE org_id = ?`), orgID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return perch.Errorf(perch.ENOTFOUND, "SAML configuration not found.")
		}
		rows, err := tx.QueryContext(ctx, s.q(`SELECT domain FROM saml_domains WHERE org_id = ?`), orgID)
		if err != nil {
			return err
		}
		var have []string
		for rows.Next() {
			var d string
			if err := rows.Scan(&d); err != nil {
				rows.Close()
				return err
			}
			have = append(have, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, d := range have {
			if !slices.Contains(domains, d) {
				if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM saml_domains WHERE org_id = ? AND domain = ?`), orgID, d); err != nil {
					return err
				}
			}
		}
		var at any
		if verified {
			at = now
		}
		for _, d := range domains {
			_, err := tx.ExecContext(ctx, s.q(`INSERT INTO saml_domains (org_id, domain, verified_at, created_at) VALUES (?, ?, ?, ?)
				ON CONFLICT (org_id, domain) DO UPDATE SET verified_at = COALESCE(saml_domains.verified_at, excluded.verified_at)`),
				orgID, d, at, now)
			if isUniqueViolation(err) {
				return errDomainTaken(d)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// VerifySAMLDomain marks one of the organisation's domains verified. A
// domain verified for another organisation is ECONFLICT; one the
// organisation does not list, ENOTFOUND.
func (s *Store) VerifySAMLDomain(ctx context.Context, orgID, domain string) error {
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE saml_domains SET verified_at = ? WHERE org_id = ? AND domain = ? AND verified_at IS NULL`),
		ms(s.now()), orgID, domain)
	if isUniqueViolation(err) {
		return errDomainTaken(domain)
	}
	return expectOne(res, err, "Unverified domain")
}

// DomainVerified reports whether orgID has verified domain (compared
// without regard to case): the addresses its identity provider may create
// accounts for.
func (s *Store) DomainVerified(ctx context.Context, orgID, domain string) (bool, error) {
	var n int
	err := s.r.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM saml_domains WHERE org_id = ? AND domain = ? AND verified_at IS NOT NULL`),
		orgID, strings.ToLower(domain)).Scan(&n)
	return n > 0, err
}

// SAMLOrgByDomain returns the organisation that verified domain and has
// SAML enabled, or ENOTFOUND.
func (s *Store) SAMLOrgByDomain(ctx context.Context, domain string) (string, error) {
	var orgID string
	err := s.r.QueryRowContext(ctx, s.q(`SELECT d.org_id FROM saml_domains d JOIN saml_configs c ON c.org_id = d.org_id
		WHERE d.domain = ? AND d.verified_at IS NOT NULL AND c.enabled`), strings.ToLower(domain)).Scan(&orgID)
	return orgID, notFound(err, "Single sign-on")
}

// SAMLOrgBySlug returns the organisation with the slug whose SAML is
// enabled, or ENOTFOUND.
func (s *Store) SAMLOrgBySlug(ctx context.Context, slug string) (string, error) {
	var orgID string
	err := s.r.QueryRowContext(ctx, s.q(`SELECT o.id FROM orgs o JOIN saml_configs c ON c.org_id = o.id
		WHERE o.slug = ? AND c.enabled`), strings.ToLower(strings.TrimSpace(slug))).Scan(&orgID)
	return orgID, notFound(err, "Single sign-on")
}

// SAMLRequest is a sign-in started here and waiting for the identity
// provider's answer: the AuthnRequest's ID, the RelayState that comes back
// with the answer, where the browser goes once signed in, and the hash of
// the secret the browser that started it keeps in a cookie (BrowserHash,
// "" for a sign-in started before browsers were bound).
type SAMLRequest struct {
	ID, OrgID, RelayState, Target string
	BrowserHash                   string
	ExpiresAt                     time.Time
}

// CreateSAMLRequest records a sign-in started now.
func (s *Store) CreateSAMLRequest(ctx context.Context, r SAMLRequest) error {
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO saml_requests (id, org_id, relay_state, target, browser_hash, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`), r.ID, r.OrgID, r.RelayState, r.Target, r.BrowserHash, ms(s.now()), ms(r.ExpiresAt))
	return err
}

// SAMLRequestByRelay returns the live sign-in of a RelayState, or
// ENOTFOUND (also once it expired or was answered).
func (s *Store) SAMLRequestByRelay(ctx context.Context, relay string) (*SAMLRequest, error) {
	var r SAMLRequest
	var expires int64
	err := s.r.QueryRowContext(ctx, s.q(`SELECT id, org_id, relay_state, target, browser_hash, expires_at FROM saml_requests
		WHERE relay_state = ? AND expires_at > ?`), relay, ms(s.now())).Scan(&r.ID, &r.OrgID, &r.RelayState, &r.Target, &r.BrowserHash, &expires)
	if err != nil {
		return nil, notFound(err, "Sign-in request")
	}
	r.ExpiresAt = fromMS(expires)
	return &r, nil
}

// ConsumeSAMLRequest ends a live sign-in of the organisation once its
// answer is accepted. Only one caller succeeds; the others, and any call
// after it expired, get ENOTFOUND.
func (s *Store) ConsumeSAMLRequest(ctx context.Context, orgID, id string) error {
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM saml_requests WHERE id = ? AND org_id = ? AND expires_at > ?`), id, orgID, ms(s.now()))
	return expectOne(res, err, "Sign-in request")
}

// MarkSAMLAssertionUsed records that the organisation accepted the
// assertion with this ID, to be remembered until expires. An assertion
// recorded already, on any instance, is ECONFLICT.
func (s *Store) MarkSAMLAssertionUsed(ctx context.Context, orgID, assertionID string, expires time.Time) error {
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO saml_assertions_seen (org_id, assertion_id, expires_at) VALUES (?, ?, ?)`),
		orgID, assertionID, ms(expires))
	if isUniqueViolation(err) {
		return perch.Errorf(perch.ECONFLICT, "This sign-in response was used already.")
	}
	return err
}

// PruneSAML deletes sign-ins that were never answered and used assertions
// past their expiry.
func (s *Store) PruneSAML(ctx context.Context) (int64, error) {
	now := ms(s.now())
	var total int64
	for _, table := range []string{"saml_requests", "saml_assertions_seen"} {
		res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM `+table+` WHERE expires_at <= ?`), now)
		if err != nil {
			return total, err
		}
		n, err := res.RowsAffected()
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// SetSCIMToken makes the token with this hash the organisation's SCIM
// token, in place of any other at once.
func (s *Store) SetSCIMToken(ctx context.Context, orgID, hash, prefix string) (*perch.SCIMToken, error) {
	now := s.now()
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO scim_tokens (org_id, hash, token_prefix, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (org_id) DO UPDATE SET hash = excluded.hash, token_prefix = excluded.token_prefix, created_at = excluded.created_at`),
		orgID, hash, prefix, ms(now))
	if err != nil {
		return nil, err
	}
	return &perch.SCIMToken{TokenPrefix: prefix, CreatedAt: now}, nil
}

// SCIMToken describes the organisation's SCIM token, or ENOTFOUND.
func (s *Store) SCIMToken(ctx context.Context, orgID string) (*perch.SCIMToken, error) {
	var t perch.SCIMToken
	var created int64
	err := s.r.QueryRowContext(ctx, s.q(`SELECT token_prefix, created_at FROM scim_tokens WHERE org_id = ?`), orgID).Scan(&t.TokenPrefix, &created)
	if err != nil {
		return nil, notFound(err, "SCIM token")
	}
	t.CreatedAt = fromMS(created)
	return &t, nil
}

// SCIMTokenOrg returns the organisation whose SCIM token has this hash, or
// ENOTFOUND: the SCIM endpoints' authentication.
func (s *Store) SCIMTokenOrg(ctx context.Context, hash string) (string, error) {
	var orgID string
	err := s.r.QueryRowContext(ctx, s.q(`SELECT org_id FROM scim_tokens WHERE hash = ?`), hash).Scan(&orgID)
	return orgID, notFound(err, "SCIM token")
}

// CreateSSOUser makes an account in the organisation at its first SAML
// sign-in (just-in-time provisioning), with no password. The address is
// the organisation's assertion (email_asserted_by), not a proven mailbox.
// It is ECONFLICT when the address has an account or the plan's seats are
// full.
func (s *Store) CreateSSOUser(ctx context.Context, orgID, email, name, role string) (*perch.User, error) {
	now := s.now()
	email, name = strings.TrimSpace(email), strings.TrimSpace(name)
	u := &perch.User{ID: newID(), Email: email, Name: name, OrgID: orgID, OrgRole: role, CreatedAt: now, UpdatedAt: now}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.seatFree(ctx, tx, orgID, now); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO users
			(id, org_id, org_role, joined_at, email, email_norm, name, email_asserted_by, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			u.ID, orgID, role, ms(now), email, perch.NormalizeEmail(email), name, orgID, ms(now), ms(now))
		if isUniqueViolation(err) {
			return perch.Errorf(perch.ECONFLICT, "An account with this e-mail address already exists.")
		}
		if err != nil {
			return err
		}
		return s.seatsChanged(ctx, tx, orgID)
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}
