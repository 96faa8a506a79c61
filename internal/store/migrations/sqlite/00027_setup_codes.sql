-- The one-time setup links of a server with no platform admin: each
-- `perch serve` that starts while no account is a platform admin makes a
-- code, prints its link, and keeps only the code's SHA-256 here, with its
-- expiry. Redeeming one makes the signed-in user the platform admin and
-- deletes them all; so does any other grant (perch admin grant).

-- +goose Up
CREATE TABLE setup_codes (
    hash       TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE setup_codes;
