-- The search column's prefixes are computed by the server (domain.SearchPrefixes,
-- the rule that cuts a search's words too) and written with the task, instead of
-- by a generated column: computing them in SQL was half of a task insertion's
-- database time (0.21 of 0.40 ms a row, measured with 5,000 single-row inserts),
-- where the server computes them in microseconds (docs/performance.md#creates).
-- A writer that leaves search null on insertion (a bulk load with COPY, say)
-- still gets it computed here, by the SQL rule of migration 00010; one that
-- changes a title by hand must set search too. (A trigger on title changes could
-- not tell a hand-made change from the server's own, whose prefixes may equal
-- the old ones, and would overwrite the server's rule with the SQL one.) Rows
-- written before this migration keep the SQL rule's prefixes, the same for
-- titles of letters and digits.

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
