-- Workspaces, users, API keys and projects.
--
-- Ids are compared byte by byte (COLLATE "C") so that lists ordered by
-- (created_at, id) come out in the same order as on SQLite and as Go sorts
-- strings, whatever the database's default collation.

-- +goose Up
CREATE TABLE workspaces (
    id         text COLLATE "C" PRIMARY KEY,
    name       text NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE users (
    id           text COLLATE "C" PRIMARY KEY,
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    email        text NOT NULL,
    name         text NOT NULL,
    role         text NOT NULL CHECK (role IN ('admin', 'member', 'guest')),
    created_at   timestamptz NOT NULL,
    CONSTRAINT users_workspace_email_key UNIQUE (workspace_id, email),
    -- Lets api_keys require its user to be of the key's own workspace.
    CONSTRAINT users_workspace_id_key UNIQUE (workspace_id, id)
);
CREATE INDEX users_workspace_created_idx ON users (workspace_id, created_at, id);

CREATE TABLE api_keys (
    id           text COLLATE "C" PRIMARY KEY,
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    user_id      text COLLATE "C" NOT NULL,
    name         text NOT NULL,
    secret_hash  text NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz,
    CONSTRAINT api_keys_secret_hash_key UNIQUE (secret_hash),
    CONSTRAINT api_keys_user_fkey FOREIGN KEY (workspace_id, user_id) REFERENCES users (workspace_id, id)
);
CREATE INDEX api_keys_user_created_idx ON api_keys (user_id, created_at, id);

CREATE TABLE projects (
    id           text COLLATE "C" PRIMARY KEY,
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    name         text NOT NULL,
    key          text NOT NULL,
    task_count   integer NOT NULL DEFAULT 0 CHECK (task_count >= 0),
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    CONSTRAINT projects_workspace_key_key UNIQUE (workspace_id, key)
);
CREATE INDEX projects_workspace_created_idx ON projects (workspace_id, created_at, id);
