package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// taskColumns are the columns of taskRow, in the order scanTasks reads
// them.
const taskColumns = "id, workspace_id, project_id, title, status, assignee_id, due_at, created_at, updated_at"

// FindTaskPages is FindTasks for several filters in one statement: a UNION
// ALL of one branch per filter, each the same keyset range scan with its own
// LIMIT that FindTasks runs, so every page costs what it costs alone (never
// the whole project, as a window function over the projects' tasks would).
// A literal slot column says which filter a row answers. Both dialects run
// the same SQL. The i-th result answers fs[i], in its filter's order.
func (s *TaskStore) FindTaskPages(ctx context.Context, fs []ports.TaskFilter) ([][]domain.Task, error) {
	if len(fs) == 0 {
		return [][]domain.Task{}, nil
	}
	return inBatchesOf(MaxBranches, fs, func(fs []ports.TaskFilter) ([][]domain.Task, error) { return s.findTaskPages(ctx, fs) })
}

// findTaskPages is FindTaskPages for at most MaxBranches filters: one
// statement.
func (s *TaskStore) findTaskPages(ctx context.Context, fs []ports.TaskFilter) ([][]domain.Task, error) {
	out := make([][]domain.Task, len(fs))
	weight := 0
	for _, f := range fs {
		weight += domain.ListWeight(f.Limit, len(f.Words) > 0)
	}
	ctx = weighed(ctx, weight)
	q := taskQuery{sqlBuilder: sqlBuilder{dialect: s.db.dialect, args: make([]any, 0, 6*len(fs))}}
	for i, f := range fs {
		if i > 0 {
			q.write(" UNION ALL ")
		}
		// i is an int of ours, not client input: formatting it is safe.
		q.write("SELECT * FROM (")
		q.page(f, i)
		q.write(") AS page" + strconv.Itoa(i))
	}
	err := s.db.read(ctx, q.sql.String(), q.readArgs(), scanTasks(true, func(slot int, t domain.Task) error {
		if slot < 0 || slot >= len(out) {
			return fmt.Errorf("row for unknown slot %d", slot)
		}
		out[slot] = append(out[slot], t)
		return nil
	}))
	if err != nil {
		return nil, fmt.Errorf("store: list task pages: %w", err)
	}
	for i := range out {
		if out[i] == nil {
			out[i] = []domain.Task{}
			continue
		}
		out[i] = sortTasks(out[i], fs[i].Order, fs[i].Limit)
	}
	return out, nil
}

// scanTasks is a read's scan function for task rows (taskColumns, after a
// leading slot column when slotted): it reads them straight into their
// fields and hands each task to add. The pages of a GraphQL query read a thousand rows at a time:
// GORM's reflective Scan into a row struct cost a sixth of that query's CPU
// time under load, and a field-by-field Scan costs little more than the
// driver's own decoding.
func scanTasks(slotted bool, add func(slot int, t domain.Task) error) func(rowScanner) error {
	return func(rows rowScanner) error {
		var (
			slot int
			r    taskRow
		)
		dest := []any{&r.ID, &r.WorkspaceID, &r.ProjectID, &r.Title, &r.Status, &r.AssigneeID, &r.DueAt, &r.CreatedAt, &r.UpdatedAt}
		if slotted {
			dest = append([]any{&slot}, dest...)
		}
		for rows.Next() {
			r = taskRow{}
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			t, err := taskFromRow(r)
			if err != nil {
				return err
			}
			if err := add(slot, t); err != nil {
				return err
			}
		}
		return nil
	}
}
