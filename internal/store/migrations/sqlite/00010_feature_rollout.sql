-- Feature flags: a rollout percentage (the share of users, picked by a
-- stable hash of the user id, who have a flag on while it is off by
-- default) and per-organisation overrides, which beat both.

-- +goose Up
ALTER TABLE feature_flags ADD COLUMN rollout_percent INTEGER NOT NULL DEFAULT 0
    CHECK (rollout_percent BETWEEN 0 AND 100);

CREATE TABLE feature_overrides (
    key     TEXT NOT NULL REFERENCES feature_flags (key) ON DELETE CASCADE,
    org_id  TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    enabled BOOLEAN NOT NULL,
    PRIMARY KEY (key, org_id)
);
CREATE INDEX feature_overrides_org ON feature_overrides (org_id);

-- +goose Down
DROP TABLE feature_overrides;
ALTER TABLE feature_flags DROP COLUMN rollout_percent;
