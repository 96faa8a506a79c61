-- Workflows and the marketplace (DESIGN.md §11).
--
-- workflows: an organisation's rules; steps is the JSON of []perch.Step.
-- version is bumped by every change of condition or steps (and by
-- republishing a changed workflow). The published_* columns are the
-- snapshot the marketplace shows and installs, taken when the author
-- publishes: later edits do not leak until republished, and a withdrawn
-- workflow (published false) keeps its snapshot for installed copies'
-- update checks. installs counts installs of the published workflow. An
-- installed copy names its source (no foreign key: a deleted source leaves
-- its copies working), at most one copy per organisation; a fork only
-- remembers what it was forked from. evaluated/matched/failed are the
-- engine's counters, added in batches.
--
-- workflow_runs: one per match or failure, newest first per workflow by
-- (created_at, id); pruned by created_at with the notifications.

-- +goose Up
CREATE TABLE workflows (
    id                    TEXT PRIMARY KEY,
    org_id                TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name                  TEXT NOT NULL,
    description           TEXT NOT NULL DEFAULT '',
    enabled               BOOLEAN NOT NULL,
    condition             TEXT NOT NULL DEFAULT '',
    steps                 TEXT NOT NULL,
    version               INTEGER NOT NULL,
    published             BOOLEAN NOT NULL DEFAULT FALSE,
    published_at          BIGINT,
    published_version     INTEGER,
    published_name        TEXT,
    published_description TEXT,
    published_condition   TEXT,
    published_steps       TEXT,
    installs              BIGINT NOT NULL DEFAULT 0,
    source_workflow_id    TEXT,
    source_version        INTEGER,
    forked_from           TEXT,
    evaluated             BIGINT NOT NULL DEFAULT 0,
    matched               BIGINT NOT NULL DEFAULT 0,
    failed                BIGINT NOT NULL DEFAULT 0,
    created_by            TEXT NOT NULL,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL
);
CREATE INDEX workflows_org ON workflows (org_id, created_at);
CREATE INDEX workflows_published ON workflows (published, published_at);
CREATE UNIQUE INDEX workflows_source ON workflows (source_workflow_id, org_id);

CREATE TABLE workflow_runs (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL,
    workflow_id      TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    workflow_version INTEGER NOT NULL,
    notification_id  TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL CHECK (status IN ('delivered', 'dropped', 'throttled', 'digested', 'failed')),
    steps            TEXT NOT NULL,
    duration_us      BIGINT NOT NULL,
    created_at       BIGINT NOT NULL
);
CREATE INDEX workflow_runs_workflow ON workflow_runs (workflow_id, created_at, id);
CREATE INDEX workflow_runs_created ON workflow_runs (created_at);

-- +goose Down
DROP INDEX workflow_runs_created;
DROP INDEX workflow_runs_workflow;
DROP TABLE workflow_runs;
DROP INDEX workflows_source;
DROP INDEX workflows_published;
DROP INDEX workflows_org;
DROP TABLE workflows;
