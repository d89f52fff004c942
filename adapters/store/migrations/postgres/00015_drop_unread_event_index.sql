-- events_workspace_created_idx is read by no query: the event log is listed
-- by position (the seq indexes, migration 00006) and purged by age
-- (events_created_idx), and workspaces are never deleted. Every event paid
-- for it twice, once inserted and again when the sequencer positions it (a
-- new row version, so a new entry in every index).

-- +goose Up
DROP INDEX events_workspace_created_idx;
