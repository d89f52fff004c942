-- Events recorded together (the task.created events of one bulk creation)
-- take consecutive log positions, in the order they were inserted
-- (docs/events.md). The sequencer positions events in the order of their
-- inserted numbers, but a bigserial is drawn row by row, so the rows of one
-- multi-row INSERT can interleave with those of concurrent transactions. A
-- group of events therefore carries one number, log_group, drawn from the
-- same sequence just before its rows: the sequencer orders by
-- coalesce(log_group, inserted), then by inserted within a group, and
-- never splits a group between two runs. A single event leaves log_group
-- null. The sequencer's index follows that order.

-- +goose Up
ALTER TABLE events ADD COLUMN log_group bigint;
DROP INDEX events_unpositioned_idx;
CREATE INDEX events_unpositioned_idx ON events ((coalesce(log_group, inserted)), inserted)
    WHERE seq IS NULL AND type <> 'webhook.ping';
