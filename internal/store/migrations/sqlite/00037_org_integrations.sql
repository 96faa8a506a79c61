-- What an organisation stored to act on a source system for its members
-- (docs/DESIGN.md, Notification actions): one row per organisation and
-- kind ('pagerduty'), the credential sealed under the server's key
-- (base64), and the settings that go with it (PagerDuty's From address).

-- +goose Up
CREATE TABLE org_integrations (
    org_id        TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    kind          TEXT NOT NULL CHECK (kind IN ('pagerduty')),
    secret_sealed TEXT NOT NULL,
    from_email    TEXT NOT NULL DEFAULT '',
    updated_at    BIGINT NOT NULL,
    PRIMARY KEY (org_id, kind)
);

-- +goose Down
DROP TABLE org_integrations;
