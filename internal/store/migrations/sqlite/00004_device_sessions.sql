-- Desktop sign-ins (device/PKCE flow): the app's loopback port and S256 code
-- challenge; then the user who approved or denied it and the SHA-256 of the
-- one-time code an approval issues.

-- +goose Up
-- status is pending, approved, denied or exchanged; one not exchanged past
-- expires_at reads as expired. Exchanging is a conditional update from
-- approved, so the tokens are handed out once.
CREATE TABLE device_sessions (
    id             TEXT PRIMARY KEY,
    port           INTEGER NOT NULL CHECK (port BETWEEN 1024 AND 65535),
    code_challenge TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'exchanged')),
    user_id        TEXT REFERENCES users (id) ON DELETE CASCADE,
    code_hash      TEXT,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    decided_at     BIGINT,
    exchanged_at   BIGINT,
    CHECK (status = 'pending' OR (user_id IS NOT NULL AND decided_at IS NOT NULL)),
    CHECK (status IN ('pending', 'denied') OR code_hash IS NOT NULL)
);
CREATE INDEX device_sessions_expires ON device_sessions (expires_at);

-- +goose Down
DROP TABLE device_sessions;
