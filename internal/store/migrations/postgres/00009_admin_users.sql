-- Administration of users and organisations: an account can be disabled
-- (every sign-in and credential of it refused until it is enabled again),
-- when it was last seen is kept (to the minute), and the admin lists page
-- newest first by (created_at, id). orgs_plan counts each plan's
-- subscribers.

-- +goose Up
ALTER TABLE users
    ADD COLUMN disabled_at BIGINT,
    ADD COLUMN last_seen_at BIGINT;
CREATE INDEX users_created ON users (created_at, id);
CREATE INDEX orgs_created ON orgs (created_at, id);
CREATE INDEX orgs_plan ON orgs (plan, plan_status);

-- +goose Down
DROP INDEX orgs_plan;
DROP INDEX orgs_created;
DROP INDEX users_created;
ALTER TABLE users
    DROP COLUMN last_seen_at,
    DROP COLUMN disabled_at;
