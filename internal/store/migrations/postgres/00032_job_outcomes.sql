-- Workflow jobs (forwards and e-mails) say what became of them: a job
-- knows the workflow, run and step that queued it and the notification it
-- carries; one that was carried out is kept as delivered (done_at, its
-- payload cleared) instead of deleted, and one the SSRF guard refused is
-- given up at once and marked refused. Delivered and given-up jobs are
-- pruned with the runs (PERCH_RETENTION). Jobs queued before this carry
-- their workflow and notification in their payload, copied out here; they
-- have no run.

-- +goose Up
ALTER TABLE jobs ADD COLUMN workflow_id TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN run_id TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN step INTEGER NOT NULL DEFAULT -1;
ALTER TABLE jobs ADD COLUMN notification_id TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN refused BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE jobs ADD COLUMN done_at BIGINT;
UPDATE jobs SET workflow_id = COALESCE(payload::jsonb ->> 'workflow_id', ''), notification_id = COALESCE(payload::jsonb -> 'notification' ->> 'id', '');
DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (next_at) WHERE failed_at IS NULL AND done_at IS NULL;
CREATE INDEX jobs_run ON jobs (run_id) WHERE run_id <> '';
CREATE INDEX jobs_done ON jobs (done_at) WHERE done_at IS NOT NULL;

-- +goose Down
DROP INDEX jobs_done;
DROP INDEX jobs_run;
DROP INDEX jobs_due;
DELETE FROM jobs WHERE done_at IS NOT NULL;
CREATE INDEX jobs_due ON jobs (next_at) WHERE failed_at IS NULL;
ALTER TABLE jobs DROP COLUMN done_at;
ALTER TABLE jobs DROP COLUMN refused;
ALTER TABLE jobs DROP COLUMN notification_id;
ALTER TABLE jobs DROP COLUMN step;
ALTER TABLE jobs DROP COLUMN run_id;
ALTER TABLE jobs DROP COLUMN workflow_id;
