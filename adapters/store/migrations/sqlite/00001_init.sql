-- Workspaces, users, API keys and projects.
--
-- SQLite has no time type: instants are TEXT in one fixed-width UTC layout
-- (2006-01-02T15:04:05.000000Z, see store.Time), so that comparing the text
-- compares the instants. STRICT tables refuse values of the wrong type.

-- +goose Up
CREATE TABLE workspaces (
    id         TEXT NOT NULL PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;

CREATE TABLE users (
    id           TEXT NOT NULL PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    email        TEXT NOT NULL,
    name         TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'member', 'guest')),
    created_at   TEXT NOT NULL,
    CONSTRAINT users_workspace_email_key UNIQUE (workspace_id, email),
    -- Lets api_keys require its user to be of the key's own workspace.
    CONSTRAINT users_workspace_id_key UNIQUE (workspace_id, id)
) STRICT;
CREATE INDEX users_workspace_created_idx ON users (workspace_id, created_at, id);

CREATE TABLE api_keys (
    id           TEXT NOT NULL PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    user_id      TEXT NOT NULL,
    name         TEXT NOT NULL,
    secret_hash  TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT,
    revoked_at   TEXT,
    last_used_at TEXT,
    CONSTRAINT api_keys_secret_hash_key UNIQUE (secret_hash),
    CONSTRAINT api_keys_user_fkey FOREIGN KEY (workspace_id, user_id) REFERENCES users (workspace_id, id)
) STRICT;
CREATE INDEX api_keys_user_created_idx ON api_keys (user_id, created_at, id);

CREATE TABLE projects (
    id           TEXT NOT NULL PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    name         TEXT NOT NULL,
    key          TEXT NOT NULL,
    task_count   INTEGER NOT NULL DEFAULT 0 CHECK (task_count >= 0),
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    CONSTRAINT projects_workspace_key_key UNIQUE (workspace_id, key)
) STRICT;
CREATE INDEX projects_workspace_created_idx ON projects (workspace_id, created_at, id);
