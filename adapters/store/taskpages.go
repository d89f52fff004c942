package store

import (
	"context"
	"fmt"
	"sort"
	"strings"

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
// the same SQL. The i-th result answers fs[i], in (created_at, id) order.
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
	var q strings.Builder
	args := make([]any, 0, 6*len(fs))
	for i, f := range fs {
		if i > 0 {
			q.WriteString(" UNION ALL ")
		}
		// i is an int of ours, not client input: formatting it is safe.
		fmt.Fprintf(&q, "SELECT * FROM (SELECT %d AS slot, %s FROM tasks WHERE ", i, taskColumns)
		args = taskPageWhere(&q, f, args)
		fmt.Fprintf(&q, ") AS page%d", i)
	}
	err := s.db.read(ctx, q.String(), args, scanTasks(true, func(slot int, t domain.Task) error {
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
		// Each branch is ordered, but UNION ALL does not promise to keep
		// the order of a branch's rows.
		page := out[i]
		sort.Slice(page, func(a, b int) bool {
			if !page[a].CreatedAt.Equal(page[b].CreatedAt) {
				return page[a].CreatedAt.Before(page[b].CreatedAt)
			}
			return page[a].ID < page[b].ID
		})
	}
	return out, nil
}

// taskPageWhere writes the WHERE conditions, order and limit of one page
// of f (a keyset range scan of the index for f's filters) to q, and returns
// args with their arguments appended.
func taskPageWhere(q *strings.Builder, f ports.TaskFilter, args []any) []any {
	q.WriteString("project_id = ? AND workspace_id = ?")
	args = append(args, f.ProjectID, f.WorkspaceID)
	if f.Status != nil {
		q.WriteString(" AND status = ?")
		args = append(args, string(*f.Status))
	}
	if f.AssigneeID != nil {
		q.WriteString(" AND assignee_id = ?")
		args = append(args, *f.AssigneeID)
	}
	if f.After != nil {
		q.WriteString(" AND (created_at, id) > (?, ?)")
		args = append(args, Time(f.After.CreatedAt), f.After.ID)
	}
	q.WriteString(" ORDER BY created_at, id")
	if f.Limit > 0 {
		q.WriteString(" LIMIT ?")
		args = append(args, f.Limit)
	}
	return args
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
