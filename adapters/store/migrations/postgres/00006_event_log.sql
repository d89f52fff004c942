-- The readable event log. Every event gets a log position (seq) after it
-- commits, from one sequencer at a time (the row lock on event_sequence):
-- positions follow commit order, which created_at does not, so a reader that
-- resumes after position N can never miss an event that commits later with
-- an earlier created_at. project_id is the project of the event (the task's
-- project for task.* events), for filtering.

-- +goose Up
ALTER TABLE events ADD COLUMN seq bigint;
-- Insertion order: the sequencer positions the events of one run in this
-- order, which for changes made one after another is their commit order
-- whatever the clocks say.
ALTER TABLE events ADD COLUMN inserted bigserial;
ALTER TABLE events ADD COLUMN project_id text COLLATE "C";

UPDATE events SET project_id = CASE
        WHEN type LIKE 'task.%' THEN convert_from(payload, 'UTF8')::jsonb -> 'data' ->> 'project_id'
        ELSE convert_from(payload, 'UTF8')::jsonb -> 'data' ->> 'id'
    END;
UPDATE events SET seq = ordered.n
FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM events) AS ordered
WHERE events.id = ordered.id;

CREATE TABLE event_sequence (
    id   integer PRIMARY KEY CHECK (id = 1),
    last bigint NOT NULL
);
INSERT INTO event_sequence (id, last) SELECT 1, coalesce(max(seq), 0) FROM events;

CREATE UNIQUE INDEX events_seq_idx ON events (seq);
CREATE INDEX events_workspace_seq_idx ON events (workspace_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX events_workspace_project_seq_idx ON events (workspace_id, project_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX events_workspace_type_seq_idx ON events (workspace_id, type, seq) WHERE seq IS NOT NULL;
-- What the sequencer has still to position: few rows, so a small index.
CREATE INDEX events_unpositioned_idx ON events (inserted) WHERE seq IS NULL;
-- Retention: the oldest events first.
CREATE INDEX events_created_idx ON events (created_at);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);
