-- SAML single sign-on per organisation: its settings (the service
-- provider's private key sealed under the server's key, base64), its e-mail
-- domains for discovery (a domain is verified for one organisation at
-- most), the sign-ins started here and not yet answered, the assertions
-- already used (the replay cache every instance shares), and the
-- organisation's SCIM token, stored as a hash.

-- +goose Up
CREATE TABLE saml_configs (
    org_id              TEXT PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    enabled             BOOLEAN NOT NULL,
    enforce             BOOLEAN NOT NULL,
    jit_provisioning    BOOLEAN NOT NULL,
    default_role        TEXT NOT NULL CHECK (default_role IN ('admin', 'member')),
    email_attribute     TEXT NOT NULL DEFAULT '',
    allow_idp_initiated BOOLEAN NOT NULL,
    idp_metadata_xml    TEXT NOT NULL,
    idp_metadata_url    TEXT NOT NULL DEFAULT '',
    idp_entity_id       TEXT NOT NULL,
    idp_sso_url         TEXT NOT NULL,
    idp_certificates    TEXT NOT NULL,
    sp_key_sealed       TEXT NOT NULL,
    sp_certificate      TEXT NOT NULL,
    domain_token        TEXT NOT NULL,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL
);

CREATE TABLE saml_domains (
    org_id      TEXT NOT NULL REFERENCES saml_configs (org_id) ON DELETE CASCADE,
    domain      TEXT NOT NULL,
    verified_at BIGINT,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, domain)
);
CREATE UNIQUE INDEX saml_domains_verified ON saml_domains (domain) WHERE verified_at IS NOT NULL;

CREATE TABLE saml_requests (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    relay_state TEXT NOT NULL UNIQUE,
    target      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX saml_requests_expires ON saml_requests (expires_at);

CREATE TABLE saml_assertions_seen (
    org_id       TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    assertion_id TEXT NOT NULL,
    expires_at   BIGINT NOT NULL,
    PRIMARY KEY (org_id, assertion_id)
);
CREATE INDEX saml_assertions_seen_expires ON saml_assertions_seen (expires_at);

CREATE TABLE scim_tokens (
    org_id       TEXT PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    hash         TEXT NOT NULL UNIQUE,
    token_prefix TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);

-- +goose Down
DROP TABLE scim_tokens;
DROP INDEX saml_assertions_seen_expires;
DROP TABLE saml_assertions_seen;
DROP INDEX saml_requests_expires;
DROP TABLE saml_requests;
DROP INDEX saml_domains_verified;
DROP TABLE saml_domains;
DROP TABLE saml_configs;
