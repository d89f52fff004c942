-- The audit log (docs/audit.md): one row per security change, written in
-- the change's transaction. Each workspace's rows form a hash chain by seq:
-- hash covers the row's canonical form and prev_hash, the previous row's
-- hash. changes is the JSON the hash covered. audit_heads holds each
-- chain's end, locked (FOR UPDATE) by the transaction that appends, so that
-- concurrent changes of a workspace take consecutive places and cannot fork
-- the chain, and what retention removed last (pruned_seq, pruned_hash), from
-- which the oldest kept row verifies.

-- +goose Up
CREATE TABLE audit_events (
    id               text COLLATE "C" PRIMARY KEY,
    workspace_id     text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    seq              bigint NOT NULL,
    action           text NOT NULL,
    actor_type       text NOT NULL,
    actor_user_id    text COLLATE "C",
    actor_api_key_id text COLLATE "C",
    actor_ip         text,
    actor_user_agent text,
    target_type      text NOT NULL,
    target_id        text COLLATE "C" NOT NULL,
    changes          text NOT NULL,
    request_id       text,
    created_at       timestamptz NOT NULL,
    prev_hash        text NOT NULL,
    hash             text NOT NULL,
    CONSTRAINT audit_events_chain_key UNIQUE (workspace_id, seq)
);
-- The list is newest first, in chain order (seq; created_at never goes back
-- along a chain), on the chain's unique index, filtered by any of action,
-- actor, target on theirs; retention removes by created_at.
CREATE INDEX audit_events_action_idx ON audit_events (workspace_id, action, seq);
CREATE INDEX audit_events_target_idx ON audit_events (workspace_id, target_id, seq);
CREATE INDEX audit_events_actor_user_idx ON audit_events (workspace_id, actor_user_id, seq);
CREATE INDEX audit_events_actor_key_idx ON audit_events (workspace_id, actor_api_key_id, seq);
CREATE INDEX audit_events_created_idx ON audit_events (created_at);

CREATE TABLE audit_heads (
    workspace_id text COLLATE "C" PRIMARY KEY REFERENCES workspaces (id),
    seq          bigint NOT NULL DEFAULT 0,
    hash         text NOT NULL DEFAULT '',
    last_at      timestamptz,
    pruned_seq   bigint NOT NULL DEFAULT 0,
    pruned_hash  text NOT NULL DEFAULT ''
);

-- A failed authentication names its key by the secret's prefix.
CREATE INDEX api_keys_prefix_idx ON api_keys (prefix);
