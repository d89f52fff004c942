-- Secret rotation with a grace period: the secret a rotation replaced keeps
-- signing deliveries (a second Standard Webhooks signature) until
-- previous_secret_expires_at. Both are NULL when there is none.

-- +goose Up
ALTER TABLE webhooks ADD COLUMN previous_secret TEXT;
ALTER TABLE webhooks ADD COLUMN previous_secret_expires_at TEXT;
