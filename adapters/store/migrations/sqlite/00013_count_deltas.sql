-- Reads of a project's counts go through the view projects_counted. On
-- PostgreSQL it adds the project's pending count deltas to its row, so that
-- writers of one project do not queue behind its row lock
-- (docs/performance.md#creates). SQLite has one writer at a time, so there is
-- no lock to spare: its triggers (migration 00010) keep counting into the
-- project's row, and the view is the row. task_count is the sum of the
-- counts by status, and the triggers below keep the column task_count equal
-- to it (the server no longer writes it).

-- +goose Up
-- +goose StatementBegin
CREATE TRIGGER tasks_count_total_insert AFTER INSERT ON tasks BEGIN
    UPDATE projects SET task_count = task_count + 1 WHERE workspace_id = new.workspace_id AND id = new.project_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER tasks_count_total_delete AFTER DELETE ON tasks BEGIN
    UPDATE projects SET task_count = task_count - 1 WHERE workspace_id = old.workspace_id AND id = old.project_id;
END;
-- +goose StatementEnd
CREATE VIEW projects_counted AS
SELECT id, workspace_id, name, key, created_at, updated_at,
       open_count, in_progress_count, done_count, archived_count
FROM projects;

