-- Seats billed (DESIGN.md §10, Billing: seats). orgs.billing_seats is the
-- quantity the provider's subscription bills, as the provider last said (a
-- subscription event's quantity) or was told by the seat job (NULL: not
-- known, or no subscription). orgs.seat_job_at is when a seat job (jobs,
-- kind billing.seats) was queued that has not started yet (NULL: none):
-- a change of membership while one waits joins it instead of queueing
-- another, and the job clears it as it starts, before reading the count.

-- +goose Up
ALTER TABLE orgs ADD COLUMN billing_seats INTEGER;
ALTER TABLE orgs ADD COLUMN seat_job_at BIGINT;

-- +goose Down
ALTER TABLE orgs DROP COLUMN seat_job_at;
ALTER TABLE orgs DROP COLUMN billing_seats;
