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

-- A title's words are its runs of letters and digits, lowercased; q's words
-- are cut by the same rule and each must be the start of a title word. The
-- index holds every prefix of every word, so that a word of q is one exact
-- lexeme: a GIN lookup the planner can estimate from the column's
-- statistics (a prefix query, 'wri':*, it cannot, and its partial match
-- costs ten times as much). A small pending list keeps reads from scanning
-- a long list of unmerged insertions between vacuums.
-- +goose StatementBegin
CREATE FUNCTION worktrack_title_prefixes(title text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN (SELECT array_to_tsvector(array_agg(DISTINCT left(w, n)))
            FROM regexp_split_to_table(lower(title), '[^[:alnum:]]+') AS w, generate_series(1, length(w)) AS n
            WHERE w <> '');
-- +goose StatementEnd
ALTER TABLE tasks ADD COLUMN search tsvector GENERATED ALWAYS AS (worktrack_title_prefixes(title)) STORED;
CREATE INDEX tasks_search_idx ON tasks USING gin (search) WITH (gin_pending_list_limit = 64);

CREATE INDEX tasks_workspace_created_idx ON tasks (workspace_id, created_at, id);
CREATE INDEX tasks_workspace_updated_idx ON tasks (workspace_id, updated_at, id);
CREATE INDEX tasks_workspace_due_idx ON tasks (workspace_id, due_at, id);
CREATE INDEX tasks_workspace_assignee_due_idx ON tasks (workspace_id, assignee_id, due_at, id);
