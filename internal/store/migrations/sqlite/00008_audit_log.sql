-- The audit log: every change of state and security event, appended and
-- never changed (a trigger refuses updates); retention deletes the oldest.
-- changes is a JSON object.

-- +goose Up
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          BIGINT NOT NULL,
    action      TEXT NOT NULL,
    actor_type  TEXT NOT NULL CHECK (actor_type IN ('user', 'admin', 'system', 'scim', 'provider')),
    actor_id    TEXT NOT NULL DEFAULT '',
    actor_email TEXT NOT NULL DEFAULT '',
    target_type TEXT NOT NULL DEFAULT '',
    target_id   TEXT NOT NULL DEFAULT '',
    org_id      TEXT NOT NULL DEFAULT '',
    ip          TEXT NOT NULL DEFAULT '',
    user_agent  TEXT NOT NULL DEFAULT '',
    request_id  TEXT NOT NULL DEFAULT '',
    changes     TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_org ON audit_log (org_id, id);
CREATE INDEX audit_log_actor ON audit_log (actor_id, id);

-- +goose StatementBegin
CREATE TRIGGER audit_log_append_only BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit entries are never changed');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER audit_log_append_only;
DROP TABLE audit_log;
