-- A project's task counts without the project's row lock (docs/performance.md#creates).
-- The counts by status used to be kept by triggers that UPDATEd the project's
-- row in every task change's transaction, so every writer of a project held
-- that row's lock to its commit and writers of one project ran one at a time.
-- Now a task change appends its delta to project_count_deltas (on insertion
-- and deletion one row per project for a whole statement, from its transition
-- table), and nothing writes the project's row: writers of one project take
-- only the key-share lock of the tasks' foreign key, which never conflicts
-- with another's. Reads see the view projects_counted: the row's counts plus
-- the project's deltas, exact after every commit. Each server folds the deltas
-- into the rows every second (store.FoldCounts), so few are ever pending.
-- task_count is the sum of the counts by status; the fold keeps the column
-- task_count equal to it, so that a folded row reads whole without the view.
-- A server of an earlier version reads the rows and counts into task_count
-- itself, so it must not run beside this one: stop the servers of earlier
-- versions before the first of this version starts (docs/deploy.md).

-- +goose Up
CREATE TABLE project_count_deltas (
    id          bigserial PRIMARY KEY,
    project_id  text COLLATE "C" NOT NULL,
    open        integer NOT NULL,
    in_progress integer NOT NULL,
    done        integer NOT NULL,
    archived    integer NOT NULL
);
CREATE INDEX project_count_deltas_project_idx ON project_count_deltas (project_id);

DROP TRIGGER tasks_count_statuses_insert ON tasks;
DROP TRIGGER tasks_count_statuses_delete ON tasks;
DROP TRIGGER tasks_count_statuses_update ON tasks;
DROP FUNCTION worktrack_count_task_statuses();

-- +goose StatementBegin
CREATE FUNCTION worktrack_count_inserted_tasks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO project_count_deltas (project_id, open, in_progress, done, archived)
    SELECT project_id,
           count(*) FILTER (WHERE status = 'open'),
           count(*) FILTER (WHERE status = 'in_progress'),
           count(*) FILTER (WHERE status = 'done'),
           count(*) FILTER (WHERE status = 'archived')
    FROM inserted_tasks GROUP BY project_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION worktrack_count_deleted_tasks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO project_count_deltas (project_id, open, in_progress, done, archived)
    SELECT project_id,
           -count(*) FILTER (WHERE status = 'open'),
           -count(*) FILTER (WHERE status = 'in_progress'),
           -count(*) FILTER (WHERE status = 'done'),
           -count(*) FILTER (WHERE status = 'archived')
    FROM deleted_tasks GROUP BY project_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION worktrack_count_moved_task() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO project_count_deltas (project_id, open, in_progress, done, archived) VALUES (
        NEW.project_id,
        (NEW.status = 'open')::int        - (OLD.status = 'open')::int,
        (NEW.status = 'in_progress')::int - (OLD.status = 'in_progress')::int,
        (NEW.status = 'done')::int        - (OLD.status = 'done')::int,
        (NEW.status = 'archived')::int    - (OLD.status = 'archived')::int);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER tasks_count_insert AFTER INSERT ON tasks
    REFERENCING NEW TABLE AS inserted_tasks FOR EACH STATEMENT EXECUTE FUNCTION worktrack_count_inserted_tasks();
CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks
    REFERENCING OLD TABLE AS deleted_tasks FOR EACH STATEMENT EXECUTE FUNCTION worktrack_count_deleted_tasks();
-- A status move is one row at a time: a transition table cannot go with
-- UPDATE OF a column list.
CREATE TRIGGER tasks_count_move AFTER UPDATE OF status ON tasks
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION worktrack_count_moved_task();

-- The project as reads see it: one index probe of its deltas (usually none).
CREATE VIEW projects_counted AS
SELECT p.id, p.workspace_id, p.name, p.key, p.created_at, p.updated_at,
       p.open_count        + coalesce(d.open, 0)        AS open_count,
       p.in_progress_count + coalesce(d.in_progress, 0) AS in_progress_count,
       p.done_count        + coalesce(d.done, 0)        AS done_count,
       p.archived_count    + coalesce(d.archived, 0)    AS archived_count
FROM projects p
LEFT JOIN LATERAL (
    SELECT sum(open)::int AS open, sum(in_progress)::int AS in_progress,
           sum(done)::int AS done, sum(archived)::int AS archived
    FROM project_count_deltas WHERE project_id = p.id
) d ON true;
