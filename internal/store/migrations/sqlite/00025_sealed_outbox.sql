-- No raw credentials at rest. Mail kept in the outbox (no SMTP server)
-- carries verification, reset and invitation links: its link and bodies
-- are now sealed with the server's key (sealed: base64, '' for none), or
-- left out where there is no key (withheld); mail whose link is a
-- credential expires with it (expires_at; NULL: kept). Messages kept
-- before stay readable until a server with a key seals them at start-up,
-- and expire with their links, as new ones do.
--
-- OAuth flows now keep their PKCE verifier and nonce sealed under their
-- state. The flows under way (at most ten minutes of sign-ins) were kept
-- in the clear and are dropped: those sign-ins start again.

-- +goose Up
ALTER TABLE mail_outbox ADD COLUMN sealed TEXT NOT NULL DEFAULT '';
ALTER TABLE mail_outbox ADD COLUMN withheld BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE mail_outbox ADD COLUMN expires_at BIGINT;
UPDATE mail_outbox SET expires_at = created_at + CASE kind
    WHEN 'password_reset' THEN 3600000
    WHEN 'verify_email' THEN 172800000
    WHEN 'email_change' THEN 172800000
    WHEN 'invitation' THEN 604800000
    END
    WHERE kind IN ('password_reset', 'verify_email', 'email_change', 'invitation');
CREATE INDEX mail_outbox_expiry ON mail_outbox (expires_at);

DELETE FROM oauth_flows;

-- +goose Down
-- An older Perch cannot open sealed mail, nor tell withheld mail apart.
DELETE FROM mail_outbox WHERE sealed <> '' OR withheld;
DROP INDEX mail_outbox_expiry;
ALTER TABLE mail_outbox DROP COLUMN expires_at;
ALTER TABLE mail_outbox DROP COLUMN withheld;
ALTER TABLE mail_outbox DROP COLUMN sealed;
