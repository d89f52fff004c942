package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// CountTasks counts the tasks f selects by group, in ascending key order
// (nil, the unassigned, first), leaving out empty groups. Counts by status
// or project under no filter but projects and statuses are read from the
// projects' counters, which every task change keeps exact in its own
// transaction: a sum over the workspace's projects rather than a count of
// its tasks. Any other count is a GROUP BY over the filter's index scan.
func (s *TaskStore) CountTasks(ctx context.Context, f ports.TaskFilter, by domain.TaskCountGroup) ([]domain.TaskCount, error) {
	assignee, dates, words := f.AssigneeIDs != nil || f.Unassigned, f.DueAfter != nil || f.DueBefore != nil || f.UpdatedAfter != nil, len(f.Words) > 0
	ctx = weighed(ctx, domain.CountWeightOf(by, assignee, dates, words))
	if domain.CountReadsCounters(by, assignee, dates, words) {
		return s.countFromProjects(ctx, f, by)
	}
	q := taskQuery{sqlBuilder: sqlBuilder{dialect: s.db.dialect}}
	q.count(f, by)
	out := []domain.TaskCount{}
	err := s.db.read(ctx, q.sql.String(), q.readArgs(), func(rows rowScanner) error {
		for rows.Next() {
			var (
				key sql.NullString
				n   int
			)
			if err := rows.Scan(&key, &n); err != nil {
				return err
			}
			c := domain.TaskCount{Count: n}
			if key.Valid {
				c.Key = &key.String
			}
			out = append(out, c)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: count tasks: %w", err)
	}
	return out, nil
}

// countFromProjects counts by status or project from the projects'
// counters, keeping f's projects and statuses.
func (s *TaskStore) countFromProjects(ctx context.Context, f ports.TaskFilter, by domain.TaskCountGroup) ([]domain.TaskCount, error) {
	q := taskQuery{sqlBuilder: sqlBuilder{dialect: s.db.dialect}}
	q.write("SELECT id, open_count, in_progress_count, done_count, archived_count FROM "+projectsCounted+" WHERE workspace_id = ?", f.WorkspaceID)
	if f.ProjectIDs != nil {
		q.write(" AND ")
		writeIn(&q.sqlBuilder, "id", f.ProjectIDs)
	}
	q.write(" ORDER BY id")
	statuses := f.Statuses
	if statuses == nil {
		statuses = domain.Statuses
	}
	var byStatus domain.StatusCounts
	out := []domain.TaskCount{}
	err := s.db.read(ctx, q.sql.String(), q.readArgs(), func(rows rowScanner) error {
		for rows.Next() {
			var (
				id string
				c  domain.StatusCounts
			)
			if err := rows.Scan(&id, &c.Open, &c.InProgress, &c.Done, &c.Archived); err != nil {
				return err
			}
			n := 0
			for _, st := range statuses {
				n += c.Of(st)
				byStatus = byStatus.Add(st, c.Of(st))
			}
			if by == domain.CountByProject && n > 0 {
				out = append(out, domain.TaskCount{Key: &id, Count: n})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: count tasks by project: %w", err)
	}
	if by == domain.CountByProject {
		return out, nil
	}
	keys := slices.Clone(domain.Statuses)
	slices.SortFunc(keys, func(a, b domain.Status) int { return strings.Compare(string(a), string(b)) })
	for _, st := range keys {
		if n := byStatus.Of(st); n > 0 {
			key := string(st)
			out = append(out, domain.TaskCount{Key: &key, Count: n})
		}
	}
	return out, nil
}
