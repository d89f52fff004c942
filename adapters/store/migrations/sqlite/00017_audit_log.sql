-- The audit log (docs/audit.md): one row per security change, written in
-- the change's transaction. Each workspace's rows form a hash chain by seq:
-- hash covers the row's canonical form and prev_hash, the previous row's
-- hash. changes is the JSON the hash covered. audit_heads holds each
-- chain's end, locked by the transaction that appends, so that
-- concurrent changes of a workspace take consecutive places and cannot fork
-- the chain, and what retention removed last (pruned_seq, pruned_hash), from
-- which the oldest kept row verifies.

-- +goose Up
CREATE TABLE audit_events (
    id               TEXT PRIMARY KEY,
    workspace_id     TEXT NOT NULL REFERENCES workspaces (id),
    seq              INTEGER NOT NULL,
    action           TEXT NOT NULL,
    actor_type       TEXT NOT NULL,
    actor_user_id    TEXT,
    actor_api_key_id TEXT,
    actor_ip         TEXT,
    actor_user_agent TEXT,
    target_type      TEXT NOT NULL,
    target_id        TEXT NOT NULL,
    changes          TEXT NOT NULL,
    request_id       TEXT,
    created_at       TEXT NOT NULL,
    prev_hash        TEXT NOT NULL,
    hash             TEXT NOT NULL,
    CONSTRAINT audit_events_chain_key UNIQUE (workspace_id, seq)
) STRICT;
-- The list is newest first, in chain order (seq; created_at never goes back
-- along a chain), on the chain's unique index, filtered by any of action,
-- actor, target on theirs; retention removes by created_at.
CREATE INDEX audit_events_action_idx ON audit_events (workspace_id, action, seq);
CREATE INDEX audit_events_target_idx ON audit_events (workspace_id, target_id, seq);
CREATE INDEX audit_events_actor_user_idx ON audit_events (workspace_id, actor_user_id, seq);
CREATE INDEX audit_events_actor_key_idx ON audit_events (workspace_id, actor_api_key_id, seq);
CREATE INDEX audit_events_created_idx ON audit_events (created_at);

CREATE TABLE audit_heads (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces (id),
    seq          INTEGER NOT NULL DEFAULT 0,
    hash         TEXT NOT NULL DEFAULT '',
    last_at      TEXT,
    pruned_seq   INTEGER NOT NULL DEFAULT 0,
    pruned_hash  TEXT NOT NULL DEFAULT ''
) STRICT;

-- A failed authentication names its key by the secret's prefix.
CREATE INDEX api_keys_prefix_idx ON api_keys (prefix);
