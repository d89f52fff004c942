-- The W3C traceparent of the request whose change wrote the event (NULL
-- when it was not traced): each delivery attempt of the event is a span of
-- that trace, and its POST carries a traceparent continuing it
-- (docs/operations.md#traces).

-- +goose Up
ALTER TABLE events ADD COLUMN trace_parent TEXT;

