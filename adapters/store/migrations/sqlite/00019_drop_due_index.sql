-- webhook_deliveries_due_idx (every pending delivery by next_attempt_at)
-- is read by no query any more: a claim goes webhook by webhook through
-- webhook_deliveries_webhook_due_idx, as on PostgreSQL (whose migration
-- 00007 dropped its own), and the backlog gauge counts through
-- webhook_deliveries_webhook_status_created_idx. Every delivery's insert
-- and every finish paid for it while holding the one writer.

-- +goose Up
DROP INDEX webhook_deliveries_due_idx;

