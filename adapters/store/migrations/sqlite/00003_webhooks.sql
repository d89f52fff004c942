-- Webhooks, the event log and the delivery outbox (see the PostgreSQL file
-- of the same version for the design). SQLite has one writer at a time, so
-- a claim in a BEGIN IMMEDIATE transaction needs no row locks.

-- +goose Up
CREATE TABLE webhooks (
    id           TEXT NOT NULL PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    url          TEXT NOT NULL,
    -- A JSON array of event type names, in the order given.
    events       TEXT NOT NULL,
    active       INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    secret       TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    CONSTRAINT webhooks_workspace_id_key UNIQUE (workspace_id, id)
) STRICT;
CREATE INDEX webhooks_workspace_created_idx ON webhooks (workspace_id, created_at, id);

CREATE TABLE events (
    id           TEXT NOT NULL PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    type         TEXT NOT NULL CHECK (type IN ('task.created', 'task.updated', 'task.deleted', 'project.created', 'project.updated')),
    created_at   TEXT NOT NULL,
    -- The exact bytes every delivery of the event sends.
    payload      BLOB NOT NULL
) STRICT;
CREATE INDEX events_workspace_created_idx ON events (workspace_id, created_at, id);

CREATE TABLE webhook_deliveries (
    id               TEXT NOT NULL PRIMARY KEY,
    workspace_id     TEXT NOT NULL,
    webhook_id       TEXT NOT NULL,
    event_id         TEXT NOT NULL REFERENCES events (id),
    event_type       TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_attempt_at  TEXT,
    last_status_code INTEGER,
    last_error       TEXT,
    next_attempt_at  TEXT,
    window_start     TEXT NOT NULL,
    lease_until      TEXT,
    locked_by        TEXT,
    created_at       TEXT NOT NULL,
    CONSTRAINT webhook_deliveries_webhook_fkey FOREIGN KEY (workspace_id, webhook_id)
        REFERENCES webhooks (workspace_id, id) ON DELETE CASCADE,
    CONSTRAINT webhook_deliveries_next_check CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
) STRICT;
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook_created_idx ON webhook_deliveries (webhook_id, created_at, id);
CREATE INDEX webhook_deliveries_webhook_status_created_idx ON webhook_deliveries (webhook_id, status, created_at, id);
CREATE INDEX webhook_deliveries_webhook_pending_idx ON webhook_deliveries (webhook_id) WHERE status = 'pending';
