-- Self-service, scoped keys (docs/keys.md): a key shows the first 12
-- characters of its secret to be recognised by (keys made before this know
-- only their hash, and show wtk_ and stars), holds its scopes (a JSON array;
-- every earlier key may do everything its user may) and, for a key
-- restricted to projects, their ids (a JSON array; NULL for every project).
-- Listing a workspace's keys pages by (created_at, id).

-- +goose Up
ALTER TABLE api_keys ADD COLUMN prefix TEXT NOT NULL DEFAULT 'wtk_********';
ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT '["*"]';
ALTER TABLE api_keys ADD COLUMN project_ids TEXT;
CREATE INDEX api_keys_workspace_created_idx ON api_keys (workspace_id, created_at, id);
