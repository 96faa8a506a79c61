-- Sign-in with GitHub and Google. user_identities links an account to an
-- account at a provider (its stable id there, "subject"), one per provider
-- and account. oauth_flows are sign-ins with a provider under way, between
-- the redirect to the provider and its return: found by the hash of their
-- state, used once, expiring after ten minutes; link_user_id is set when a
-- signed-in user started one to link the provider.

-- +goose Up
CREATE TABLE user_identities (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider   TEXT NOT NULL CHECK (provider IN ('github', 'google')),
    subject    TEXT NOT NULL,
    email      TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, provider)
);
CREATE UNIQUE INDEX user_identities_subject ON user_identities (provider, subject);

CREATE TABLE oauth_flows (
    state_hash     TEXT PRIMARY KEY,
    provider       TEXT NOT NULL,
    verifier       TEXT NOT NULL,
    nonce          TEXT NOT NULL DEFAULT '',
    redirect       TEXT NOT NULL,
    device_session TEXT NOT NULL DEFAULT '',
    link_user_id   TEXT REFERENCES users (id) ON DELETE CASCADE,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL
);
CREATE INDEX oauth_flows_expiry ON oauth_flows (expires_at);

-- +goose Down
DROP TABLE oauth_flows;
DROP TABLE user_identities;
