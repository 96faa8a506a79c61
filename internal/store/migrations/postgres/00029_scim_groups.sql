-- SCIM groups are teams: the identity provider's id for a team (its
-- externalId, not unique: a provider may push a group Perch already has
-- by name), and when the team last changed (its name or its members), which
-- SCIM answers as meta.lastModified. Existing teams last changed when they
-- were made, as far as anything recorded says.

-- +goose Up
ALTER TABLE teams ADD COLUMN external_id TEXT NOT NULL DEFAULT '';
ALTER TABLE teams ADD COLUMN updated_at BIGINT NOT NULL DEFAULT 0;
UPDATE teams SET updated_at = created_at;
CREATE INDEX teams_external_id ON teams (org_id, external_id);

-- +goose Down
DROP INDEX teams_external_id;
ALTER TABLE teams DROP COLUMN updated_at;
ALTER TABLE teams DROP COLUMN external_id;
