-- A webhook's pending deliveries in due order. SQLite claims the oldest due
-- deliveries of all webhooks under its single write lock
-- (webhook_deliveries_due_idx stays); the index replaces
-- webhook_deliveries_webhook_pending_idx, as on PostgreSQL, where it also
-- drives the claim per webhook.

-- +goose Up
CREATE INDEX webhook_deliveries_webhook_due_idx ON webhook_deliveries (webhook_id, next_attempt_at) WHERE status = 'pending';
DROP INDEX webhook_deliveries_webhook_pending_idx;
