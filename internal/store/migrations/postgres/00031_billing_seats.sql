-- Seats billed (DESIGN.md §10, Billing: seats): orgs.billing_seats is the
-- quantity the provider's subscription bills, as the provider last said
-- (a subscription event's quantity) or was told by the seat job (NULL:
-- not known, or no subscription). The seat job itself is a row of jobs
-- (kind billing.seats); jobs_pending_kind finds an organisation's job of a
-- kind still waiting to be claimed, which a membership change joins
-- rather than queueing another.

-- +goose Up
ALTER TABLE orgs ADD COLUMN billing_seats INTEGER;
CREATE INDEX jobs_pending_kind ON jobs (org_id, kind) WHERE failed_at IS NULL AND claimed_at IS NULL;

-- +goose Down
DROP INDEX jobs_pending_kind;
ALTER TABLE orgs DROP COLUMN billing_seats;
