package store

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// taskColumns are the columns of taskRow, in the order FindTaskPages selects
// them.
const taskColumns = "id, workspace_id, project_id, title, status, assignee_id, due_at, created_at, updated_at"

// slottedTaskRow is a task row tagged with the filter it answers. (GORM skips
// unexported embedded fields, hence the named one.)
type slottedTaskRow struct {
	Slot int     `gorm:"column:slot"`
	Row  taskRow `gorm:"embedded"`
}

// FindTaskPages is FindTasks for several filters in one statement: a UNION
// ALL of one branch per filter, each the same keyset range scan with its own
// LIMIT that FindTasks runs, so every page costs what it costs alone (never
// the whole project, as a window function over the projects' tasks would).
// A literal slot column says which filter a row answers. Both dialects run
// the same SQL. The i-th result answers fs[i], in (created_at, id) order.
func (s *TaskStore) FindTaskPages(ctx context.Context, fs []ports.TaskFilter) ([][]domain.Task, error) {
	out := make([][]domain.Task, len(fs))
	if len(fs) == 0 {
		return out, nil
	}
	var q strings.Builder
	args := make([]any, 0, 6*len(fs))
	for i, f := range fs {
		if i > 0 {
			q.WriteString(" UNION ALL ")
		}
		// i is an int of ours, not client input: formatting it is safe.
		fmt.Fprintf(&q, "SELECT * FROM (SELECT %d AS slot, %s FROM tasks WHERE project_id = ? AND workspace_id = ?", i, taskColumns)
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
		fmt.Fprintf(&q, ") AS page%d", i)
	}
	var rows []slottedTaskRow
	if err := s.db.conn(ctx).Raw(q.String(), args...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list task pages: %w", err)
	}
	for _, r := range rows {
		if r.Slot < 0 || r.Slot >= len(out) {
			return nil, fmt.Errorf("store: list task pages: row for unknown slot %d", r.Slot)
		}
		out[r.Slot] = append(out[r.Slot], taskFromRow(r.Row))
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
