-- The e-mail settings an admin stores, which win over PERCH_SMTP_URL: one
-- row, the password sealed under the server's key (base64; '' for none).
-- And the newsletter: when each user opted in, NULL while they have not.

-- +goose Up
CREATE TABLE email_settings (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    host            TEXT NOT NULL,
    port            INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
    username        TEXT NOT NULL DEFAULT '',
    password_sealed TEXT NOT NULL DEFAULT '',
    from_address    TEXT NOT NULL,
    tls             TEXT NOT NULL CHECK (tls IN ('none', 'starttls', 'tls')),
    updated_at      BIGINT NOT NULL
);

ALTER TABLE users ADD COLUMN newsletter_at BIGINT;
CREATE INDEX users_newsletter ON users (newsletter_at, id) WHERE newsletter_at IS NOT NULL;

-- +goose Down
DROP INDEX users_newsletter;
ALTER TABLE users DROP COLUMN newsletter_at;
DROP TABLE email_settings;
