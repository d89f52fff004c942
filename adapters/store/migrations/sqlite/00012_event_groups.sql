-- Events recorded together (the task.created events of one bulk creation)
-- take consecutive log positions (docs/events.md). On SQLite a write
-- transaction excludes every other writer, so the rows of one INSERT take
-- consecutive rowids and the sequencer's rowid order keeps them together;
-- log_group is PostgreSQL's, kept here so that both databases' events have
-- the same columns.

-- +goose Up
ALTER TABLE events ADD COLUMN log_group INTEGER;
