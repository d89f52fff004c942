-- Webhooks, the event log and the delivery outbox.
--
-- An event and its deliveries are written in the transaction of the change
-- they record (transactional outbox). Dispatchers claim due deliveries with
-- SELECT … FOR UPDATE SKIP LOCKED and a lease (lease_until, locked_by), so
-- that several processes share the work and a crashed one's claims lapse.

-- +goose Up
CREATE TABLE webhooks (
    id           text COLLATE "C" PRIMARY KEY,
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    url          text NOT NULL,
    -- A JSON array of event type names, in the order given.
    events       text NOT NULL,
    active       boolean NOT NULL DEFAULT true,
    secret       text NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    -- Lets deliveries require their webhook to be of their own workspace.
    CONSTRAINT webhooks_workspace_id_key UNIQUE (workspace_id, id)
);
CREATE INDEX webhooks_workspace_created_idx ON webhooks (workspace_id, created_at, id);

CREATE TABLE events (
    id           text COLLATE "C" PRIMARY KEY,
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    type         text NOT NULL CHECK (type IN ('task.created', 'task.updated', 'task.deleted', 'project.created', 'project.updated')),
    created_at   timestamptz NOT NULL,
    -- The exact bytes every delivery of the event sends.
    payload      bytea NOT NULL
);
CREATE INDEX events_workspace_created_idx ON events (workspace_id, created_at, id);

CREATE TABLE webhook_deliveries (
    id               text COLLATE "C" PRIMARY KEY,
    workspace_id     text COLLATE "C" NOT NULL,
    webhook_id       text COLLATE "C" NOT NULL,
    event_id         text COLLATE "C" NOT NULL REFERENCES events (id),
    event_type       text NOT NULL,
    status           text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_attempt_at  timestamptz,
    last_status_code integer,
    last_error       text,
    next_attempt_at  timestamptz,
    window_start     timestamptz NOT NULL,
    lease_until      timestamptz,
    locked_by        text,
    created_at       timestamptz NOT NULL,
    CONSTRAINT webhook_deliveries_webhook_fkey FOREIGN KEY (workspace_id, webhook_id)
        REFERENCES webhooks (workspace_id, id) ON DELETE CASCADE,
    -- Exactly the pending deliveries have a next attempt.
    CONSTRAINT webhook_deliveries_next_check CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
);
-- Claiming: the due pending deliveries, oldest due first. Partial, so that
-- the (ever growing) finished deliveries cost the claim nothing.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
-- Keyset listing per webhook, with and without the status filter.
CREATE INDEX webhook_deliveries_webhook_created_idx ON webhook_deliveries (webhook_id, created_at, id);
CREATE INDEX webhook_deliveries_webhook_status_created_idx ON webhook_deliveries (webhook_id, status, created_at, id);
-- Failing a webhook's pending deliveries (410, deactivation).
CREATE INDEX webhook_deliveries_webhook_pending_idx ON webhook_deliveries (webhook_id) WHERE status = 'pending';
