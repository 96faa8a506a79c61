-- Billing (DESIGN.md §10): an organisation's subscription at its payment
-- provider (Stripe or Paddle), and every provider event received.
--
-- orgs: billing_provider is 'stripe', 'paddle' or '' before any payment; the
-- provider's customer and subscription ids find the organisation of an
-- event that does not name it; billing_event_at is when the last applied
-- event happened at the provider (an older one changes nothing);
-- trial_notice_at is when the "trial ends in 3 days" notice was claimed.
-- orgs_trial serves the trial jobs (expiry and the notice).
--
-- billing_events: every event received, applied or not, keyed by the
-- provider's id, so that a redelivery is recognised (org_id is '' when no
-- organisation was found). Pruned by received_at after 90 days.

-- +goose Up
ALTER TABLE orgs
    ADD COLUMN billing_provider TEXT NOT NULL DEFAULT '',
    ADD COLUMN billing_customer_id TEXT NOT NULL DEFAULT '',
    ADD COLUMN billing_subscription_id TEXT NOT NULL DEFAULT '',
    ADD COLUMN current_period_end BIGINT,
    ADD COLUMN cancel_at_period_end BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN billing_event_at BIGINT,
    ADD COLUMN trial_notice_at BIGINT;
CREATE INDEX orgs_billing_subscription ON orgs (billing_provider, billing_subscription_id);
CREATE INDEX orgs_billing_customer ON orgs (billing_provider, billing_customer_id);
CREATE INDEX orgs_trial ON orgs (plan_status, trial_ends_at);

CREATE TABLE billing_events (
    provider    TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    org_id      TEXT NOT NULL DEFAULT '',
    type        TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    PRIMARY KEY (provider, event_id)
);
CREATE INDEX billing_events_received ON billing_events (received_at);

-- +goose Down
DROP INDEX billing_events_received;
DROP TABLE billing_events;
DROP INDEX orgs_trial;
DROP INDEX orgs_billing_customer;
DROP INDEX orgs_billing_subscription;
ALTER TABLE orgs
    DROP COLUMN trial_notice_at,
    DROP COLUMN billing_event_at,
    DROP COLUMN cancel_at_period_end,
    DROP COLUMN current_period_end,
    DROP COLUMN billing_subscription_id,
    DROP COLUMN billing_customer_id,
    DROP COLUMN billing_provider;
