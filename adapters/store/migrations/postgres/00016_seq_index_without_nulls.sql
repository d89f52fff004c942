-- events_seq_idx held an entry for every event not yet positioned (seq is
-- null), and kept it, pointing at the dead row version, after the sequencer
-- positioned the event, until the table was next vacuumed. The planner
-- read the sequencer's "seq IS NULL" from it, by bitmap scan, which never
-- marks such entries dead: under make load, 90,957 entries after a minute of
-- creates, a run read 10,530 heap pages for its 66 events (49 ms), growing
-- with every create until autovacuum. Positions are unique where they are
-- set; what is still to position is read from events_unpositioned_idx,
-- where the probe that runs before every sequencer run is an index scan,
-- which marks the positioned events' old entries dead as it passes them.
-- An event's insert also writes one index entry fewer.

-- +goose Up
DROP INDEX events_seq_idx;
CREATE UNIQUE INDEX events_seq_idx ON events (seq) WHERE seq IS NOT NULL;
