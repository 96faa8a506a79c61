-- Events: webhook tokens, notifications (ordered ids, for replay with
-- ?since=), per-user read state, and small key-value settings.

-- +goose Up
CREATE TABLE webhook_tokens (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    org_id       TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    team_id      TEXT REFERENCES teams (id) ON DELETE CASCADE,
    label        TEXT NOT NULL,
    sender       TEXT NOT NULL CHECK (sender IN ('incidents', 'code-host', 'monitoring', 'inbound')),
    scope        TEXT NOT NULL CHECK (scope IN ('user', 'team', 'org')),
    token_prefix TEXT NOT NULL,
    hash         TEXT NOT NULL UNIQUE,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT
);
CREATE INDEX webhook_tokens_user ON webhook_tokens (user_id, created_at);

-- AUTOINCREMENT: an id is never reused, even after pruning the newest rows.
CREATE TABLE notifications (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    scope_type TEXT NOT NULL CHECK (scope_type IN ('user', 'team', 'org', 'all')),
    scope_id   TEXT NOT NULL,
    tab        TEXT NOT NULL,
    title      TEXT NOT NULL,
    message    TEXT NOT NULL,
    severity   TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'error')),
    source     TEXT NOT NULL,
    url        TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    dedupe_key TEXT UNIQUE
);
CREATE INDEX notifications_scope ON notifications (scope_type, scope_id, id);
CREATE INDEX notifications_created ON notifications (created_at);

CREATE TABLE notification_reads (
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    notification_id BIGINT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    read_at         BIGINT NOT NULL,
    PRIMARY KEY (user_id, notification_id)
);
CREATE INDEX notification_reads_notification ON notification_reads (notification_id);

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- +goose Down
DROP TABLE settings;
DROP TABLE notification_reads;
DROP TABLE notifications;
DROP TABLE webhook_tokens;
