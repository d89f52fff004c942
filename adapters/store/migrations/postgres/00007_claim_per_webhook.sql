-- Claiming per webhook. A dispatcher claims, for each webhook with room, that
-- webhook's oldest due deliveries: the webhooks with pending deliveries are
-- found by a skip scan of this index, and each one's due deliveries by a
-- range scan of it. Claiming the oldest due deliveries of all webhooks
-- (webhook_deliveries_due_idx) made every claim read past the backlog of a
-- slow webhook to reach a fast one's. The index also serves what
-- webhook_deliveries_webhook_pending_idx served (failing a webhook's pending
-- deliveries), and the due index has no reader left here, so both go: a
-- delivery's insert and finish write two indexes fewer.

-- +goose Up
CREATE INDEX webhook_deliveries_webhook_due_idx ON webhook_deliveries (webhook_id, next_attempt_at) WHERE status = 'pending';
DROP INDEX webhook_deliveries_webhook_pending_idx;
DROP INDEX webhook_deliveries_due_idx;
