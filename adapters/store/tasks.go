package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"
	"gorm.io/gorm"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

type taskRow struct {
	ID          string         `gorm:"column:id;primaryKey"`
	WorkspaceID string         `gorm:"column:workspace_id"`
	ProjectID   string         `gorm:"column:project_id"`
	Title       string         `gorm:"column:title"`
	Status      string         `gorm:"column:status"`
	AssigneeID  sql.NullString `gorm:"column:assignee_id"`
	DueAt       NullTime       `gorm:"column:due_at"`
	CreatedAt   Time           `gorm:"column:created_at"`
	UpdatedAt   Time           `gorm:"column:updated_at"`
}

func (taskRow) TableName() string { return "tasks" }

func taskToRow(t domain.Task) taskRow {
	r := taskRow{
		ID: t.ID, WorkspaceID: t.WorkspaceID, ProjectID: t.ProjectID, Title: t.Title, Status: string(t.Status),
		DueAt: NullTimeOf(t.DueAt), CreatedAt: Time(t.CreatedAt), UpdatedAt: Time(t.UpdatedAt),
	}
	if t.AssigneeID != nil {
		r.AssigneeID = sql.NullString{String: *t.AssigneeID, Valid: true}
	}
	return r
}

func taskFromRow(r taskRow) (domain.Task, error) {
	t := domain.Task{
		ID: r.ID, WorkspaceID: r.WorkspaceID, ProjectID: r.ProjectID, Title: r.Title, Status: domain.Status(r.Status),
		DueAt: r.DueAt.Ptr(), CreatedAt: timeOf(r.CreatedAt), UpdatedAt: timeOf(r.UpdatedAt),
	}
	if r.AssigneeID.Valid {
		a := r.AssigneeID.String
		t.AssigneeID = &a
	}
	return domain.RestoreTask(t)
}

// searchOf is the search column's value for a title: the prefixes of its
// words (domain.SearchPrefixes, migration 00014), written as a tsvector
// made by the database from a text[]. SQLite's full-text index is kept by
// triggers of its own.
func searchOf(title string) []string { return domain.SearchPrefixes(title) }

// TaskStore persists tasks.
type TaskStore struct{ db *DB }

var _ ports.TaskStore = (*TaskStore)(nil)

// Tasks is the task repository of db.
func (db *DB) Tasks() *TaskStore { return &TaskStore{db: db} }

// CreateTasks inserts ts, insertRows a statement, in the order given.
// The tasks' composite foreign keys refuse a project or an assignee that
// is not the workspace's: resource_not_found, for the project (the core
// reads which, on that path only). The statement is written out rather
// than built by GORM's Create from the row struct, whose reflection was
// most of the server's work for an insert under load; on PostgreSQL it
// also writes the search column (searchOf).
func (s *TaskStore) CreateTasks(ctx context.Context, ts []domain.Task) error {
	pg := s.db.dialect == DialectPostgres
	per := s.db.insertRows(9)
	for start := 0; start < len(ts); start += per {
		chunk := ts[start:min(start+per, len(ts))]
		q := sqlBuilder{dialect: s.db.dialect, args: make([]any, 0, 10*len(chunk))}
		if pg {
			q.write("INSERT INTO tasks (" + taskColumns + ", search) VALUES ")
			q.values(len(chunk), "(?, ?, ?, ?, ?, ?, ?, ?, ?, array_to_tsvector(?::text[]))", func(i int) []any {
				return append(taskArgs(chunk[i]), pgTextArray(searchOf(chunk[i].Title)))
			})
		} else {
			q.write("INSERT INTO tasks (" + taskColumns + ") VALUES ")
			q.values(len(chunk), "(?, ?, ?, ?, ?, ?, ?, ?, ?)", func(i int) []any { return taskArgs(chunk[i]) })
		}
		if err := s.db.conn(ctx).Exec(q.sql.String(), q.args...).Error; err != nil {
			if errors.Is(err, gorm.ErrForeignKeyViolated) {
				return domain.NotFound("project", ts[0].ProjectID)
			}
			return fmt.Errorf("store: create tasks: %w", err)
		}
	}
	return nil
}

// taskArgs are a task's values in the order of taskColumns.
func taskArgs(t domain.Task) []any {
	r := taskToRow(t)
	return []any{r.ID, r.WorkspaceID, r.ProjectID, r.Title, r.Status, r.AssigneeID, r.DueAt, r.CreatedAt, r.UpdatedAt}
}

// FindTaskByID returns resource_not_found when absent or in another workspace.
func (s *TaskStore) FindTaskByID(ctx context.Context, workspaceID, id string) (domain.Task, error) {
	return s.find(ctx, workspaceID, id, false)
}

// FindTaskByIDForUpdate also locks the row until the transaction ends
// (PostgreSQL; SQLite transactions already hold the write lock).
func (s *TaskStore) FindTaskByIDForUpdate(ctx context.Context, workspaceID, id string) (domain.Task, error) {
	return s.find(ctx, workspaceID, id, true)
}

// findTaskSQL reads one task; the FOR UPDATE variant is PostgreSQL's.
const (
	findTaskSQL          = "SELECT " + taskColumns + " FROM tasks WHERE workspace_id = ? AND id = ? LIMIT 1"
	findTaskForUpdateSQL = "SELECT " + taskColumns + " FROM tasks WHERE workspace_id = ? AND id = ? LIMIT 1 FOR UPDATE"
)

// find is the hottest read (GET /v1/tasks/{id}, GraphQL task(id)): a raw
// statement scanned field by field, rather than GORM's query builder and
// reflective Scan.
func (s *TaskStore) find(ctx context.Context, workspaceID, id string, lock bool) (domain.Task, error) {
	query := findTaskSQL
	if lock && s.db.dialect == DialectPostgres {
		query = findTaskForUpdateSQL
	}
	var (
		t     domain.Task
		found bool
	)
	err := s.db.read(ctx, query, []any{workspaceID, id}, scanTasks(false, func(_ int, got domain.Task) error {
		t, found = got, true
		return nil
	}))
	switch {
	case err != nil:
		return domain.Task{}, fmt.Errorf("store: find task: %w", err)
	case !found:
		return domain.Task{}, domain.NotFound("task", id)
	}
	return t, nil
}

// FindTasksByIDs returns the tasks of the workspace among ids, in no order.
func (s *TaskStore) FindTasksByIDs(ctx context.Context, workspaceID string, ids []string) ([]domain.Task, error) {
	if len(ids) == 0 {
		return []domain.Task{}, nil
	}
	return inBatches(ids, func(ids []string) ([]domain.Task, error) {
		var rows []taskRow
		// The columns of taskRow only: not the search column's prefixes.
		if err := s.db.conn(ctx).Select(taskColumns).Where("workspace_id = ? AND id IN ?", workspaceID, ids).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("store: find tasks: %w", err)
		}
		return restoreRows(rows, taskFromRow)
	})
}

// FindTasks lists the tasks f selects in f.Order after f.After. Each
// order has an index ending in its key and id, so a page is a range scan
// whatever its depth (docs/finding-tasks.md). A page by due_at reads the
// dated tasks first and the undated ones only when the dated run short:
// one statement for every page but the one where they meet.
func (s *TaskStore) FindTasks(ctx context.Context, f ports.TaskFilter) ([]domain.Task, error) {
	tasks := make([]domain.Task, 0, min(max(f.Limit, 0), 256))
	ctx = weighed(ctx, domain.ListWeight(f.Limit, len(f.Words) > 0))
	for _, r := range pageRanges(f) {
		g := f
		if f.Limit > 0 {
			if g.Limit = f.Limit - len(tasks); g.Limit == 0 {
				break
			}
		}
		q := taskQuery{sqlBuilder: sqlBuilder{dialect: s.db.dialect, args: make([]any, 0, 8)}}
		q.scan(g, -1, r)
		err := s.db.read(ctx, q.sql.String(), q.readArgs(), scanTasks(false, func(_ int, t domain.Task) error {
			tasks = append(tasks, t)
			return nil
		}))
		if err != nil {
			return nil, fmt.Errorf("store: list tasks: %w", err)
		}
	}
	return tasks, nil
}

// UpdateTask writes the mutable fields of t; resource_not_found when absent.
func (s *TaskStore) UpdateTask(ctx context.Context, t domain.Task) error {
	row := taskToRow(t)
	fields := map[string]any{
		"title": row.Title, "status": row.Status, "assignee_id": row.AssigneeID,
		"due_at": row.DueAt, "updated_at": row.UpdatedAt,
	}
	if s.db.dialect == DialectPostgres {
		fields["search"] = gorm.Expr("array_to_tsvector(?::text[])", pgTextArray(searchOf(t.Title)))
	}
	res := s.db.conn(ctx).Model(&taskRow{}).
		Where("workspace_id = ? AND id = ?", t.WorkspaceID, t.ID).
		Updates(fields)
	if res.Error != nil {
		return fmt.Errorf("store: update task: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("task", t.ID)
	}
	return nil
}

// DeleteTask deletes the task; resource_not_found when no row was deleted,
// so that two concurrent deletions decrement task_count once.
func (s *TaskStore) DeleteTask(ctx context.Context, workspaceID, id string) error {
	res := s.db.conn(ctx).Where("workspace_id = ? AND id = ?", workspaceID, id).Delete(&taskRow{})
	if res.Error != nil {
		return fmt.Errorf("store: delete task: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("task", id)
	}
	return nil
}

// arrayElementEscaper escapes a quoted element of an array literal. (Built
// once: building a Replacer per element was 40 % of a bulk creation's CPU.)
var arrayElementEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// pgTextArray is a text[] parameter, written as PostgreSQL's array literal
// (GORM would spread a []string into a list of parameters). To pgx it is an
// array (pgtype.ArrayGetter), encoded in binary rather than parsed back from
// the literal.
type pgTextArray []string

// Dimensions implements pgtype.ArrayGetter: one dimension, or none when
// empty.
func (a pgTextArray) Dimensions() []pgtype.ArrayDimension {
	if a == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}} //nolint:gosec // a title's words, far below 2^31
}

// Index implements pgtype.ArrayGetter.
func (a pgTextArray) Index(i int) any { return a[i] }

// IndexType implements pgtype.ArrayGetter.
func (a pgTextArray) IndexType() any { return "" }

// Value writes the array literal, every element quoted.
func (a pgTextArray) Value() (driver.Value, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(arrayElementEscaper.Replace(s))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String(), nil
}
