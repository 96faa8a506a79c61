-- SCIM provisioning: what an identity provider keeps of each member it
-- manages (its userName, unique per organisation without regard to case,
-- its externalId, and the attributes Perch answers back as JSON), and who
-- disabled an account ('admin' or 'scim'; '' for accounts disabled before
-- this column), so that an identity provider lifts only its own disable.

-- +goose Up
CREATE TABLE scim_users (
    user_id        TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    org_id         TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_name      TEXT NOT NULL,
    user_name_norm TEXT NOT NULL,
    external_id    TEXT NOT NULL DEFAULT '',
    attributes     TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE UNIQUE INDEX scim_users_user_name ON scim_users (org_id, user_name_norm);
CREATE INDEX scim_users_external_id ON scim_users (org_id, external_id);
ALTER TABLE users ADD COLUMN disabled_by TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE users DROP COLUMN disabled_by;
DROP INDEX scim_users_external_id;
DROP INDEX scim_users_user_name;
DROP TABLE scim_users;
