-- Finding tasks (docs/finding-tasks.md): counts by status on projects, kept
-- with task_count in every task change's transaction; a full-text index of
-- titles; and indexes so that every filter and order of the task lists
-- across a workspace is an index scan.

-- +goose Up
ALTER TABLE projects
    ADD COLUMN open_count        integer NOT NULL DEFAULT 0 CHECK (open_count >= 0),
    ADD COLUMN in_progress_count integer NOT NULL DEFAULT 0 CHECK (in_progress_count >= 0),
    ADD COLUMN done_count        integer NOT NULL DEFAULT 0 CHECK (done_count >= 0),
    ADD COLUMN archived_count    integer NOT NULL DEFAULT 0 CHECK (archived_count >= 0);
UPDATE projects p SET
    open_count        = c.open,
    in_progress_count = c.in_progress,
    done_count        = c.done,
    archived_count    = c.archived
FROM (
    SELECT project_id,
           count(*) FILTER (WHERE status = 'open')        AS open,
           count(*) FILTER (WHERE status = 'in_progress') AS in_progress,
           count(*) FILTER (WHERE status = 'done')        AS done,
           count(*) FILTER (WHERE status = 'archived')    AS archived
    FROM tasks GROUP BY project_id
) c
WHERE c.project_id = p.id;

-- A title's words are its runs of letters and digits, lowercased (the
-- 'simple' configuration stems nothing and drops no word); q's words are cut
-- by the same rule and each matched as a prefix.
ALTER TABLE tasks ADD COLUMN search tsvector
    GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, regexp_replace(title, '[^[:alnum:]]+', ' ', 'g'))) STORED;
CREATE INDEX tasks_search_idx ON tasks USING gin (search);

CREATE INDEX tasks_workspace_created_idx ON tasks (workspace_id, created_at, id);
CREATE INDEX tasks_workspace_updated_idx ON tasks (workspace_id, updated_at, id);
CREATE INDEX tasks_workspace_due_idx ON tasks (workspace_id, due_at, id);
CREATE INDEX tasks_workspace_assignee_due_idx ON tasks (workspace_id, assignee_id, due_at, id);
