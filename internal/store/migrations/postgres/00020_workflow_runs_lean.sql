-- Workflow runs are pruned per workflow by age, through the
-- (workflow_id, created_at, id) index that lists them: the created_at
-- index only cost every run's insert. (On SQLite the table also drops its
-- primary key; PostgreSQL's writers do not queue behind each other, and the
-- key stays.)

-- +goose Up
DROP INDEX workflow_runs_created;

-- +goose Down
CREATE INDEX workflow_runs_created ON workflow_runs (created_at);
