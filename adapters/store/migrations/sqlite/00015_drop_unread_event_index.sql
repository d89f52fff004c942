-- events_workspace_created_idx is read by no query: the event log is listed
-- by position (the seq indexes, migration 00006) and purged by age
-- (events_created_idx), and workspaces are never deleted. Every event's
-- insertion paid for it.

-- +goose Up
DROP INDEX events_workspace_created_idx;
