package store

import (
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// taskQuery writes the statements of the task lists and counts
// (docs/finding-tasks.md). Every value a client sends is an argument; what
// is formatted into the text is ours (column names of domain.TaskOrder,
// slot numbers).
type taskQuery struct {
	sqlBuilder
	// customPlan: PostgreSQL plans this statement for its own values
	// (readArgs).
	customPlan bool
}

// readArgs are the arguments to read q with. A search on PostgreSQL runs
// as an unnamed statement (pgx's QueryExecModeExec, one round trip), which
// the server plans for the words it is given rather than once for any:
// for a frequent word, a walk of the list's index in order that stops at
// the page's end; for a rare one, the full-text index's matches, sorted.
// A prepared statement's generic plan, the same for every word, took the
// full-text index's every match for each page of a frequent word: the
// 40th page of "wri ann" read 1,800 rows for its 20.
func (q *taskQuery) readArgs() []any {
	if q.customPlan && q.dialect == DialectPostgres {
		return append([]any{pgx.QueryExecModeExec}, q.args...)
	}
	return q.args
}

// where writes f's conditions (not its keyset position), ANDed.
func (q *taskQuery) where(f ports.TaskFilter) {
	q.write("workspace_id = ?", f.WorkspaceID)
	if q.dialect == DialectSQLite {
		// SQLite does not stop a statement when its context ends once
		// it reads rows; this does, row by row (budget.go).
		q.write(" AND worktrack_live(?)", sqliteLiveArg{})
	}
	if f.ProjectIDs != nil {
		q.write(" AND ")
		writeIn(&q.sqlBuilder, "project_id", f.ProjectIDs)
	}
	if f.Statuses != nil {
		q.write(" AND ")
		writeIn(&q.sqlBuilder, "status", f.Statuses)
	}
	switch {
	case f.AssigneeIDs != nil && f.Unassigned:
		q.write(" AND (")
		writeIn(&q.sqlBuilder, "assignee_id", f.AssigneeIDs)
		q.write(" OR assignee_id IS NULL)")
	case f.AssigneeIDs != nil:
		q.write(" AND ")
		writeIn(&q.sqlBuilder, "assignee_id", f.AssigneeIDs)
	case f.Unassigned:
		q.write(" AND assignee_id IS NULL")
	}
	if f.DueAfter != nil {
		q.write(" AND due_at >= ?", Time(*f.DueAfter))
	}
	if f.DueBefore != nil {
		q.write(" AND due_at < ?", Time(*f.DueBefore))
	}
	if f.UpdatedAfter != nil {
		q.write(" AND updated_at > ?", Time(*f.UpdatedAfter))
	}
	if len(f.Words) > 0 {
		q.search(f.Words)
	}
}

// search writes the full-text condition: every word the start of a title
// word. On PostgreSQL the tasks.search column holds every prefix of every
// title word (domain.SearchPrefixes, under a GIN index), so each word is
// an exact lexeme; SQLite asks its FTS5 index for the rowids of titles with
// a word starting with each. Words are lowercase letters and digits only
// (domain.SearchWords), so quoting them needs no escaping.
func (q *taskQuery) search(words []string) {
	terms := make([]string, len(words))
	if q.dialect == DialectPostgres {
		for i, w := range words {
			terms[i] = "'" + w + "'"
		}
		q.write(" AND search @@ ?::tsquery", strings.Join(terms, " & "))
		q.customPlan = true
		return
	}
	for i, w := range words {
		terms[i] = `"` + w + `"*`
	}
	q.write(" AND rowid IN (SELECT rowid FROM tasks_fts WHERE tasks_fts MATCH ?)", strings.Join(terms, " AND "))
}

// A keyRange is the part of an order's list one range scan reads: the
// whole list, or for an order by due_at its dated tasks or its undated
// ones (last in either direction).
type keyRange int

const (
	rangeAll keyRange = iota
	rangeDated
	rangeUndated
)

// pageRanges are the ranges a page of f reads, in its order: the whole
// list, or for an order by due_at the dated tasks and then the undated
// ones (last in either direction), the dated ones only while f.After is
// still among them. FindTasks reads them one after another, the next only
// when the page is not full; FindTaskPages reads them in one statement and
// merges them (sortTasks).
func pageRanges(f ports.TaskFilter) []keyRange {
	switch {
	case !f.Order.Nullable():
		return []keyRange{rangeAll}
	case f.After != nil && f.After.Null:
		return []keyRange{rangeUndated}
	default:
		return []keyRange{rangeDated, rangeUndated}
	}
}

// page writes the statement of one page of f: a keyset range scan in f's
// order after f.After, f.Limit rows, for each of its pageRanges. slot >= 0
// adds a leading slot column (FindTaskPages).
func (q *taskQuery) page(f ports.TaskFilter, slot int) {
	ranges := pageRanges(f)
	if len(ranges) == 1 {
		q.scan(f, slot, ranges[0])
		return
	}
	for i, r := range ranges {
		if i > 0 {
			q.write(" UNION ALL ")
		}
		q.write("SELECT * FROM (")
		q.scan(f, slot, r)
		q.write(") AS range" + strconv.Itoa(i))
	}
}

// scan writes one range scan of f's page: the rows of range r after
// f.After (an undated range reads from its start unless f.After is
// undated too), in f's order, at most f.Limit of them.
func (q *taskQuery) scan(f ports.TaskFilter, slot int, r keyRange) {
	col, cmp, dir := f.Order.Column(), ">", ""
	if f.Order.Desc {
		cmp, dir = "<", " DESC"
	}
	if slot >= 0 {
		q.write("SELECT " + strconv.Itoa(slot) + " AS slot, " + taskColumns + " FROM tasks WHERE ")
	} else {
		q.write("SELECT " + taskColumns + " FROM tasks WHERE ")
	}
	q.where(f)
	switch r {
	case rangeDated:
		q.write(" AND " + col + " IS NOT NULL")
	case rangeUndated:
		q.write(" AND " + col + " IS NULL")
	}
	switch {
	case f.After == nil:
	case r == rangeUndated && f.After.Null:
		q.write(" AND id "+cmp+" ?", f.After.ID)
	case r != rangeUndated:
		q.write(" AND ("+col+", id) "+cmp+" (?, ?)", Time(f.After.At), f.After.ID)
	}
	// An undated range is ordered by its (null) key too, so that the key's
	// index, whose rows with a null key are in id order, gives the order on
	// PostgreSQL.
	q.write(" ORDER BY " + col + dir + ", id" + dir)
	if f.Limit > 0 {
		q.write(" LIMIT ?", f.Limit)
	}
}

// sortTasks puts a page's rows in order and keeps at most limit of them
// (limit <= 0: all): the ranges of a page by due_at, and the branches of a
// UNION ALL, come back in no promised order.
func sortTasks(tasks []domain.Task, o domain.TaskOrder, limit int) []domain.Task {
	slices.SortFunc(tasks, o.Compare)
	if limit > 0 && len(tasks) > limit {
		tasks = tasks[:limit]
	}
	return tasks
}

// count writes the statement counting f's tasks by group, in ascending key
// order, unassigned (NULL) first. Empty groups have no row.
func (q *taskQuery) count(f ports.TaskFilter, by domain.TaskCountGroup) {
	col := string(by) // a constant of domain, validated by the caller
	q.write("SELECT " + col + ", count(*) FROM tasks WHERE ")
	q.where(f)
	q.write(" GROUP BY " + col + " ORDER BY " + col)
	if q.dialect == DialectPostgres {
		q.write(" NULLS FIRST")
	}
}
