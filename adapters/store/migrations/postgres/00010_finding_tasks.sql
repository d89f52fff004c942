-- Finding tasks (docs/finding-tasks.md): counts by status on projects, kept
-- by triggers in every task change's transaction (so that a server of an
-- earlier version, still running during a rolling update, keeps them too);
-- a full-text index of titles; and indexes so that every filter and order
-- of the task lists across a workspace is an index scan.

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

-- +goose StatementBegin
CREATE FUNCTION worktrack_count_task_statuses() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    task tasks;
    delta integer;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        UPDATE projects SET
            open_count        = open_count        + (NEW.status = 'open')::int        - (OLD.status = 'open')::int,
            in_progress_count = in_progress_count + (NEW.status = 'in_progress')::int - (OLD.status = 'in_progress')::int,
            done_count        = done_count        + (NEW.status = 'done')::int        - (OLD.status = 'done')::int,
            archived_count    = archived_count    + (NEW.status = 'archived')::int    - (OLD.status = 'archived')::int
        WHERE workspace_id = NEW.workspace_id AND id = NEW.project_id;
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        task := NEW;
        delta := 1;
    ELSE
        task := OLD;
        delta := -1;
    END IF;
    UPDATE projects SET
        open_count        = open_count        + delta * (task.status = 'open')::int,
        in_progress_count = in_progress_count + delta * (task.status = 'in_progress')::int,
        done_count        = done_count        + delta * (task.status = 'done')::int,
        archived_count    = archived_count    + delta * (task.status = 'archived')::int
    WHERE workspace_id = task.workspace_id AND id = task.project_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER tasks_count_statuses_insert AFTER INSERT ON tasks
    FOR EACH ROW EXECUTE FUNCTION worktrack_count_task_statuses();
CREATE TRIGGER tasks_count_statuses_delete AFTER DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION worktrack_count_task_statuses();
CREATE TRIGGER tasks_count_statuses_update AFTER UPDATE OF status ON tasks
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION worktrack_count_task_statuses();

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
