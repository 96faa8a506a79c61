-- Workflow runs are written about as often as notifications, and on SQLite
-- by the one writer that ingest needs: every index a run row updates costs
-- ingest throughput. A run is only ever read by its workflow, newest first,
-- and pruned per workflow by age, so the (workflow_id, created_at, id)
-- index serves all of it. The table keeps its rowid as its key (its ids are
-- never looked up alone), loses the created_at index, and has no foreign
-- key (a lookup per insert): the store adds only runs of the organisation's
-- workflows, and DeleteWorkflow deletes a workflow's runs with it
-- (organisations are never deleted).

-- +goose Up
CREATE TABLE workflow_runs_lean (
    id               TEXT NOT NULL,
    org_id           TEXT NOT NULL,
    workflow_id      TEXT NOT NULL,
    workflow_version INTEGER NOT NULL,
    notification_id  TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL CHECK (status IN ('delivered', 'dropped', 'throttled', 'digested', 'failed')),
    steps            TEXT NOT NULL,
    duration_us      BIGINT NOT NULL,
    created_at       BIGINT NOT NULL
);
INSERT INTO workflow_runs_lean SELECT id, org_id, workflow_id, workflow_version, notification_id, status, steps, duration_us, created_at
    FROM workflow_runs;
DROP INDEX workflow_runs_created;
DROP INDEX workflow_runs_workflow;
DROP TABLE workflow_runs;
ALTER TABLE workflow_runs_lean RENAME TO workflow_runs;
CREATE INDEX workflow_runs_workflow ON workflow_runs (workflow_id, created_at, id);

-- +goose Down
CREATE TABLE workflow_runs_keyed (
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
INSERT INTO workflow_runs_keyed SELECT id, org_id, workflow_id, workflow_version, notification_id, status, steps, duration_us, created_at
    FROM workflow_runs;
DROP INDEX workflow_runs_workflow;
DROP TABLE workflow_runs;
ALTER TABLE workflow_runs_keyed RENAME TO workflow_runs;
CREATE INDEX workflow_runs_workflow ON workflow_runs (workflow_id, created_at, id);
CREATE INDEX workflow_runs_created ON workflow_runs (created_at);
