-- Organisations: teams and their members, invitations, single-use e-mail
-- links (verification, address change, password reset) and the mail outbox.

-- +goose Up
CREATE TABLE teams (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    name_norm   TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    UNIQUE (org_id, name_norm)
);

CREATE TABLE team_members (
    team_id  TEXT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    user_id  TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    added_at BIGINT NOT NULL,
    PRIMARY KEY (team_id, user_id)
);
CREATE INDEX team_members_user ON team_members (user_id);

-- status is pending, accepted or revoked; a pending invitation past
-- expires_at reads as expired.
CREATE TABLE invitations (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    email       TEXT NOT NULL,
    email_norm  TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    token_hash  TEXT NOT NULL UNIQUE,
    invited_by  TEXT REFERENCES users (id) ON DELETE SET NULL,
    status      TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'revoked')),
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    accepted_at BIGINT,
    revoked_at  BIGINT
);
CREATE INDEX invitations_org ON invitations (org_id, status);

CREATE TABLE email_tokens (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('verify_email', 'email_change', 'password_reset')),
    email      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);
CREATE INDEX email_tokens_user ON email_tokens (user_id, kind);

CREATE TABLE mail_outbox (
    id         TEXT PRIMARY KEY,
    recipient  TEXT NOT NULL,
    subject    TEXT NOT NULL,
    kind       TEXT NOT NULL,
    link       TEXT NOT NULL,
    body_text  TEXT NOT NULL,
    body_html  TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX mail_outbox_created ON mail_outbox (created_at);

-- +goose Down
DROP TABLE mail_outbox;
DROP TABLE email_tokens;
DROP TABLE invitations;
DROP TABLE team_members;
DROP TABLE teams;
