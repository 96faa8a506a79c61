-- Accounts: organisations, users, sign-ins, API tokens, plans, announcements
-- and feature flags. Times are Unix milliseconds (BIGINT) in both dialects.

-- +goose Up
CREATE TABLE plans (
    slug                TEXT PRIMARY KEY,
    name                TEXT NOT NULL,
    price_monthly_cents INTEGER NOT NULL CHECK (price_monthly_cents >= 0),
    max_seats           INTEGER NOT NULL CHECK (max_seats > 0),
    position            INTEGER NOT NULL
);
INSERT INTO plans (slug, name, price_monthly_cents, max_seats, position) VALUES
    ('solo', 'Solo', 900, 1, 1),
    ('team', 'Team', 4900, 25, 2),
    ('enterprise', 'Enterprise', 49900, 1000, 3);

CREATE TABLE orgs (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    slug          TEXT NOT NULL UNIQUE,
    plan          TEXT NOT NULL REFERENCES plans (slug),
    plan_status   TEXT NOT NULL,
    trial_ends_at BIGINT,
    created_at    BIGINT NOT NULL
);

CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    org_role       TEXT NOT NULL CHECK (org_role IN ('owner', 'admin', 'member')),
    joined_at      BIGINT NOT NULL,
    email          TEXT NOT NULL,
    email_norm     TEXT NOT NULL UNIQUE,
    name           TEXT NOT NULL,
    password_hash  TEXT NOT NULL DEFAULT '',
    email_verified BOOLEAN NOT NULL DEFAULT FALSE,
    is_admin       BOOLEAN NOT NULL DEFAULT FALSE,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE INDEX users_org ON users (org_id);

-- A session is one sign-in; its access and refresh tokens live in
-- session_tokens, stored only as SHA-256 hashes.
CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE session_tokens (
    hash       TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);
CREATE INDEX session_tokens_session ON session_tokens (session_id);
CREATE INDEX session_tokens_expires ON session_tokens (expires_at);

CREATE TABLE api_tokens (
    id               TEXT PRIMARY KEY,
    user_id          TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    label            TEXT NOT NULL,
    token_prefix     TEXT NOT NULL,
    hash             TEXT NOT NULL UNIQUE,
    is_active        BOOLEAN NOT NULL DEFAULT TRUE,
    created_at       BIGINT NOT NULL,
    last_verified_at BIGINT
);
CREATE INDEX api_tokens_user ON api_tokens (user_id, created_at);

CREATE TABLE announcements (
    id         TEXT PRIMARY KEY,
    title      TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX announcements_created ON announcements (created_at);

CREATE TABLE feature_flags (
    key         TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    enabled     BOOLEAN NOT NULL
);
INSERT INTO feature_flags (key, description, enabled) VALUES
    ('workflows', 'Rules that filter, enrich, route and digest events', TRUE),
    ('marketplace', 'Install workflows from the marketplace', TRUE),
    ('digest_email', 'Daily e-mail digest of unread notifications', FALSE);

-- +goose Down
DROP TABLE feature_flags;
DROP TABLE announcements;
DROP TABLE api_tokens;
DROP TABLE session_tokens;
DROP TABLE sessions;
DROP TABLE users;
DROP TABLE orgs;
DROP TABLE plans;
