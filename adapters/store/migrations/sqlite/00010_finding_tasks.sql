-- Finding tasks (docs/finding-tasks.md): counts by status on projects, kept
-- by triggers in every task change's transaction (so that a server of an
-- earlier version keeps them too); a full-text index of
-- titles (FTS5, kept by triggers); and indexes for the filters and orders
-- of the task lists across a workspace.

-- +goose Up
ALTER TABLE projects ADD COLUMN open_count INTEGER NOT NULL DEFAULT 0 CHECK (open_count >= 0);
ALTER TABLE projects ADD COLUMN in_progress_count INTEGER NOT NULL DEFAULT 0 CHECK (in_progress_count >= 0);
ALTER TABLE projects ADD COLUMN done_count INTEGER NOT NULL DEFAULT 0 CHECK (done_count >= 0);
ALTER TABLE projects ADD COLUMN archived_count INTEGER NOT NULL DEFAULT 0 CHECK (archived_count >= 0);
UPDATE projects SET
    open_count        = (SELECT count(*) FROM tasks WHERE tasks.project_id = projects.id AND status = 'open'),
    in_progress_count = (SELECT count(*) FROM tasks WHERE tasks.project_id = projects.id AND status = 'in_progress'),
    done_count        = (SELECT count(*) FROM tasks WHERE tasks.project_id = projects.id AND status = 'done'),
    archived_count    = (SELECT count(*) FROM tasks WHERE tasks.project_id = projects.id AND status = 'archived');

-- +goose StatementBegin
CREATE TRIGGER tasks_count_statuses_insert AFTER INSERT ON tasks BEGIN
    UPDATE projects SET
        open_count        = open_count        + (new.status = 'open'),
        in_progress_count = in_progress_count + (new.status = 'in_progress'),
        done_count        = done_count        + (new.status = 'done'),
        archived_count    = archived_count    + (new.status = 'archived')
    WHERE workspace_id = new.workspace_id AND id = new.project_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER tasks_count_statuses_delete AFTER DELETE ON tasks BEGIN
    UPDATE projects SET
        open_count        = open_count        - (old.status = 'open'),
        in_progress_count = in_progress_count - (old.status = 'in_progress'),
        done_count        = done_count        - (old.status = 'done'),
        archived_count    = archived_count    - (old.status = 'archived')
    WHERE workspace_id = old.workspace_id AND id = old.project_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER tasks_count_statuses_update AFTER UPDATE OF status ON tasks WHEN old.status <> new.status BEGIN
    UPDATE projects SET
        open_count        = open_count        + (new.status = 'open')        - (old.status = 'open'),
        in_progress_count = in_progress_count + (new.status = 'in_progress') - (old.status = 'in_progress'),
        done_count        = done_count        + (new.status = 'done')        - (old.status = 'done'),
        archived_count    = archived_count    + (new.status = 'archived')    - (old.status = 'archived')
    WHERE workspace_id = new.workspace_id AND id = new.project_id;
END;
-- +goose StatementEnd

-- The index of titles' words: the unicode61 tokenizer cuts a title into its
-- runs of letters and digits and folds their case (diacritics are kept, as
-- PostgreSQL keeps them). It reads the titles from tasks by rowid
-- (external content) and the triggers keep it in step; after a VACUUM,
-- which may renumber the rowids of tasks, rebuild it with
-- INSERT INTO tasks_fts (tasks_fts) VALUES ('rebuild').
CREATE VIRTUAL TABLE tasks_fts USING fts5 (title, content = 'tasks', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 0');
INSERT INTO tasks_fts (tasks_fts) VALUES ('rebuild');
-- +goose StatementBegin
CREATE TRIGGER tasks_fts_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO tasks_fts (rowid, title) VALUES (new.rowid, new.title);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER tasks_fts_delete AFTER DELETE ON tasks BEGIN
    INSERT INTO tasks_fts (tasks_fts, rowid, title) VALUES ('delete', old.rowid, old.title);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER tasks_fts_update AFTER UPDATE OF title ON tasks BEGIN
    INSERT INTO tasks_fts (tasks_fts, rowid, title) VALUES ('delete', old.rowid, old.title);
    INSERT INTO tasks_fts (rowid, title) VALUES (new.rowid, new.title);
END;
-- +goose StatementEnd

CREATE INDEX tasks_workspace_created_idx ON tasks (workspace_id, created_at, id);
CREATE INDEX tasks_workspace_updated_idx ON tasks (workspace_id, updated_at, id);
CREATE INDEX tasks_workspace_due_idx ON tasks (workspace_id, due_at, id);
CREATE INDEX tasks_workspace_assignee_due_idx ON tasks (workspace_id, assignee_id, due_at, id);
