-- The readable event log. Every event gets a log position (seq) after it
-- commits, from one sequencer at a time (SQLite runs one write transaction
-- at a time): positions follow commit order, which created_at does not.
-- project_id is the project of the event (the task's project for task.*
-- events), for filtering.

-- +goose Up
ALTER TABLE events ADD COLUMN seq INTEGER;
ALTER TABLE events ADD COLUMN project_id TEXT;

UPDATE events SET project_id = CASE
        WHEN type LIKE 'task.%' THEN json_extract(CAST(payload AS TEXT), '$.data.project_id')
        ELSE json_extract(CAST(payload AS TEXT), '$.data.id')
    END;
UPDATE events SET seq = ordered.n
FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM events) AS ordered
WHERE events.id = ordered.id;

CREATE TABLE event_sequence (
    id   INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    last INTEGER NOT NULL
) STRICT;
INSERT INTO event_sequence (id, last) SELECT 1, coalesce(max(seq), 0) FROM events;

CREATE UNIQUE INDEX events_seq_idx ON events (seq);
CREATE INDEX events_workspace_seq_idx ON events (workspace_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX events_workspace_project_seq_idx ON events (workspace_id, project_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX events_workspace_type_seq_idx ON events (workspace_id, type, seq) WHERE seq IS NOT NULL;
-- The sequencer positions a run's events in rowid (insertion) order: with
-- one writer at a time, that is their commit order.
CREATE INDEX events_unpositioned_idx ON events (seq) WHERE seq IS NULL; -- entries in rowid order
CREATE INDEX events_created_idx ON events (created_at);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);
