-- Workflow state that every instance shares (DESIGN.md §11), and the
-- durable job queue of the steps that run after a notification is stored.
-- Nothing here refers to the workflows table: rows name an organisation and
-- a key the workflow engine makes, and go when the organisation goes.
--
-- workflow_throttles: how many notifications counted against (org_id, key)
-- in the fixed window [window_start, window_end), Unix ms. One upsert counts
-- and answers the count, so instances sharing the database let exactly the
-- step's max through. Pruned once window_end has passed.
--
-- workflow_digests: one open digest per (org_id, key) with the end of its
-- window, how many notifications it holds (at most 1000) and how many more
-- came beyond that. workflow_digest_items holds the notifications (JSON) in
-- the order they came (seq). A due digest is deleted with its items by the
-- instance that claims it, so each is delivered once.
--
-- jobs: work done after a notification is stored (forward, email), retried
-- with backoff. next_at is when it is due, or when the lease of the worker
-- that claimed it ends (claimed_at is set while it is leased); failed_at is
-- set when it was given up, and it is kept with its last_error for the runs
-- page until pruned.

-- +goose Up
CREATE TABLE workflow_throttles (
    org_id       TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    key          TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    window_end   BIGINT NOT NULL,
    hits         BIGINT NOT NULL,
    PRIMARY KEY (org_id, key, window_start, window_end)
);
CREATE INDEX workflow_throttles_end ON workflow_throttles (window_end);

CREATE TABLE workflow_digests (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    window_end BIGINT NOT NULL,
    held       BIGINT NOT NULL,
    more       BIGINT NOT NULL,
    UNIQUE (org_id, key)
);
CREATE INDEX workflow_digests_due ON workflow_digests (window_end);

CREATE TABLE workflow_digest_items (
    digest_id TEXT NOT NULL,
    seq       BIGINT NOT NULL,
    org_id    TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    body      TEXT NOT NULL,
    PRIMARY KEY (digest_id, seq)
);

CREATE TABLE jobs (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    payload    TEXT NOT NULL,
    attempts   BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    next_at    BIGINT NOT NULL,
    claimed_at BIGINT,
    last_error TEXT NOT NULL DEFAULT '',
    failed_at  BIGINT
);
CREATE INDEX jobs_due ON jobs (next_at) WHERE failed_at IS NULL;
CREATE INDEX jobs_failed ON jobs (org_id, failed_at) WHERE failed_at IS NOT NULL;

-- +goose Down
DROP INDEX jobs_failed;
DROP INDEX jobs_due;
DROP TABLE jobs;
DROP TABLE workflow_digest_items;
DROP INDEX workflow_digests_due;
DROP TABLE workflow_digests;
DROP INDEX workflow_throttles_end;
DROP TABLE workflow_throttles;
