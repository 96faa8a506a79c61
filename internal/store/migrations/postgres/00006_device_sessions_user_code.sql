-- What the approval page of a desktop sign-in shows and how it was
-- approved: the name the app gave, the address it asked from, the hash of
-- the user code it shows, and whether the approver typed that code (only
-- then may a status poll take the tokens). Sign-ins started before this
-- migration have no user code, so they can finish only through the
-- loopback callback.

-- +goose Up
ALTER TABLE device_sessions
    ADD COLUMN client_name TEXT NOT NULL DEFAULT 'perch CLI',
    ADD COLUMN client_ip TEXT NOT NULL DEFAULT '',
    ADD COLUMN user_code_hash TEXT NOT NULL DEFAULT '',
    ADD COLUMN user_code_confirmed BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE device_sessions
    DROP COLUMN user_code_confirmed,
    DROP COLUMN user_code_hash,
    DROP COLUMN client_ip,
    DROP COLUMN client_name;
