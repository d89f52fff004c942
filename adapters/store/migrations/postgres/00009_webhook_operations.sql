-- Webhook operations (docs/webhooks.md): custom headers sent with every
-- delivery (a JSON object), why an inactive webhook is inactive, and its run
-- of failed attempts, written with the attempts' outcomes so that deciding
-- to disable it reads one row, not the delivery history. Webhooks inactive
-- before this were turned off by a user or by a 410; they are marked "user".

-- +goose Up
ALTER TABLE webhooks ADD COLUMN headers text NOT NULL DEFAULT '{}';
ALTER TABLE webhooks ADD COLUMN disabled_reason text;
ALTER TABLE webhooks ADD COLUMN disabled_at timestamptz;
ALTER TABLE webhooks ADD COLUMN failing_since timestamptz;
ALTER TABLE webhooks ADD COLUMN failed_attempts integer NOT NULL DEFAULT 0;
UPDATE webhooks SET disabled_reason = 'user', disabled_at = updated_at WHERE NOT active;

-- Events gain two types: webhook.disabled (in the log, to subscribers and
-- other webhooks) and webhook.ping (one delivery, never in the log).
ALTER TABLE events DROP CONSTRAINT events_type_check;
ALTER TABLE events ADD CONSTRAINT events_type_check CHECK (type IN ('task.created', 'task.updated', 'task.deleted',
    'project.created', 'project.updated', 'webhook.disabled', 'webhook.ping'));

-- Pings are never positioned: the index of what the sequencer has still to
-- position leaves them out, or every run would step over all of them.
DROP INDEX events_unpositioned_idx;
CREATE INDEX events_unpositioned_idx ON events (inserted) WHERE seq IS NULL AND type <> 'webhook.ping';
