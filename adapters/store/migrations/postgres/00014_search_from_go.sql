-- The search column's prefixes are computed by the server (domain.SearchPrefixes,
-- the rule that cuts a search's words too) and written with the task, instead of
-- by a generated column: computing them in SQL was half of a task insertion's
-- database time (0.21 of 0.40 ms a row, measured with 5,000 single-row inserts),
-- where the server computes them in microseconds (docs/performance.md#creates).
-- A writer that leaves search null on insertion (a bulk load with COPY, say), or
-- changes a title without it, still gets it computed here, by the SQL rule of
-- migration 00010.

-- +goose Up
ALTER TABLE tasks ALTER COLUMN search DROP EXPRESSION;

-- +goose StatementBegin
CREATE FUNCTION worktrack_fill_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search := worktrack_title_prefixes(NEW.title);
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER tasks_fill_search_insert BEFORE INSERT ON tasks
    FOR EACH ROW WHEN (NEW.search IS NULL) EXECUTE FUNCTION worktrack_fill_search();
CREATE TRIGGER tasks_fill_search_update BEFORE UPDATE OF title ON tasks
    FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title AND OLD.search IS NOT DISTINCT FROM NEW.search)
    EXECUTE FUNCTION worktrack_fill_search();
