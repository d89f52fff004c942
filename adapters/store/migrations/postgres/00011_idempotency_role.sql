-- The role of the key's user when an idempotent request first ran: a
-- replay is answered only while the user's role is at least that
-- (docs/api.md#idempotent-requests). Records kept before this column
-- existed count as an admin's, the most cautious reading.

-- +goose Up
ALTER TABLE idempotency_keys ADD COLUMN role text NOT NULL DEFAULT 'admin';
