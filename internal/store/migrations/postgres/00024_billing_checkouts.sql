-- Billing checkouts (DESIGN.md §10): every hosted checkout Perch opened
-- for an organisation, by the provider's id (a Stripe Checkout Session, a
-- Paddle transaction). Only the event that completes one of them may bind
-- a provider's subscription and customer to an organisation
-- (orgs.billing_subscription_id, billing_customer_id); every later event
-- follows that binding, never the organisation it names in its metadata,
-- which anyone able to pay the provider can set. Pruned with
-- billing_events.

-- +goose Up
CREATE TABLE billing_checkouts (
    provider    TEXT NOT NULL,
    checkout_id TEXT NOT NULL,
    org_id      TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (provider, checkout_id)
);
CREATE INDEX billing_checkouts_created ON billing_checkouts (created_at);

-- +goose Down
DROP INDEX billing_checkouts_created;
DROP TABLE billing_checkouts;
