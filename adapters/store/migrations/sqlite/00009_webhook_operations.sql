-- Webhook operations (docs/webhooks.md): custom headers sent with every
-- delivery (a JSON object), why an inactive webhook is inactive, and its run
-- of failed attempts, written with the attempts' outcomes so that deciding
-- to disable it reads one row, not the delivery history. Webhooks inactive
-- before this were turned off by a user or by a 410; they are marked "user".

-- +goose Up
ALTER TABLE webhooks ADD COLUMN headers TEXT NOT NULL DEFAULT '{}';
ALTER TABLE webhooks ADD COLUMN disabled_reason TEXT;
ALTER TABLE webhooks ADD COLUMN disabled_at TEXT;
ALTER TABLE webhooks ADD COLUMN failing_since TEXT;
ALTER TABLE webhooks ADD COLUMN failed_attempts INTEGER NOT NULL DEFAULT 0;
UPDATE webhooks SET disabled_reason = 'user', disabled_at = updated_at WHERE NOT active;

-- Events gain two types: webhook.disabled (in the log, to subscribers and
-- other webhooks) and webhook.ping (one delivery, never in the log). SQLite
-- cannot change a CHECK constraint in place, so the table is rebuilt, rows
-- and rowids (the sequencer's order) kept. Dropping the old table leaves
-- the deliveries that point at its rows without a parent until the copy is
-- back; deferring foreign keys lets the transaction hold that state, and the
-- commit still fails if any delivery is left without its event.
PRAGMA defer_foreign_keys = ON;
CREATE TEMP TABLE events_copy AS SELECT rowid AS old_rowid, * FROM events;
DROP TABLE events;
CREATE TABLE events (
    id           TEXT NOT NULL PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    type         TEXT NOT NULL CHECK (type IN ('task.created', 'task.updated', 'task.deleted',
                     'project.created', 'project.updated', 'webhook.disabled', 'webhook.ping')),
    created_at   TEXT NOT NULL,
    -- The exact bytes every delivery of the event sends.
    payload      BLOB NOT NULL,
    seq          INTEGER,
    project_id   TEXT
) STRICT;
INSERT INTO events (rowid, id, workspace_id, type, created_at, payload, seq, project_id)
SELECT old_rowid, id, workspace_id, type, created_at, payload, seq, project_id FROM events_copy ORDER BY old_rowid;
DROP TABLE events_copy;
CREATE INDEX events_workspace_created_idx ON events (workspace_id, created_at, id);
CREATE UNIQUE INDEX events_seq_idx ON events (seq);
CREATE INDEX events_workspace_seq_idx ON events (workspace_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX events_workspace_project_seq_idx ON events (workspace_id, project_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX events_workspace_type_seq_idx ON events (workspace_id, type, seq) WHERE seq IS NOT NULL;
-- Pings are never positioned: the sequencer's index leaves them out.
CREATE INDEX events_unpositioned_idx ON events (seq) WHERE seq IS NULL AND type <> 'webhook.ping'; -- entries in rowid order
CREATE INDEX events_created_idx ON events (created_at);
