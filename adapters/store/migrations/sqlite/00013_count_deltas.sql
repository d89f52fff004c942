-- Reads of a project's counts go through the view projects_counted. On
-- PostgreSQL it adds the project's pending count deltas to its row, so that
-- writers of one project do not queue behind its row lock
-- (docs/performance.md#creates). SQLite has one writer at a time, so there is
-- no lock to spare: its triggers (migration 00010) keep counting into the
-- project's row, and the view is the row. task_count is the sum of the
-- counts by status: the column task_count is no longer read or written.

-- +goose Up
CREATE VIEW projects_counted AS
SELECT id, workspace_id, name, key, created_at, updated_at,
       open_count, in_progress_count, done_count, archived_count
FROM projects;

