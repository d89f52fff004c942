-- Tasks. Every list query is a keyset range scan: one index per filter
-- combination of GET /projects/{id}/tasks, each ending in (created_at, id).

-- +goose Up
-- Lets tasks require their project to be of the task's own workspace.
CREATE UNIQUE INDEX projects_workspace_id_key ON projects (workspace_id, id);

CREATE TABLE tasks (
    id           TEXT NOT NULL PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    project_id   TEXT NOT NULL,
    title        TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('open', 'in_progress', 'done', 'archived')),
    assignee_id  TEXT,
    due_at       TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    CONSTRAINT tasks_project_fkey FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id),
    CONSTRAINT tasks_assignee_fkey FOREIGN KEY (workspace_id, assignee_id) REFERENCES users (workspace_id, id)
) STRICT;
CREATE INDEX tasks_project_created_idx ON tasks (project_id, created_at, id);
CREATE INDEX tasks_project_status_created_idx ON tasks (project_id, status, created_at, id);
CREATE INDEX tasks_project_assignee_created_idx ON tasks (project_id, assignee_id, created_at, id);
CREATE INDEX tasks_project_status_assignee_created_idx ON tasks (project_id, status, assignee_id, created_at, id);

