package store

import (
	"context"
	"fmt"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

type projectRow struct {
	ID          string `gorm:"column:id;primaryKey"`
	WorkspaceID string `gorm:"column:workspace_id"`
	Name        string `gorm:"column:name"`
	Key         string `gorm:"column:key"`
	// The task counts by status, kept by triggers (migrations 00010 and
	// 00013): written as zeros at creation, read from projectsCounted.
	OpenCount       int  `gorm:"column:open_count"`
	InProgressCount int  `gorm:"column:in_progress_count"`
	DoneCount       int  `gorm:"column:done_count"`
	ArchivedCount   int  `gorm:"column:archived_count"`
	CreatedAt       Time `gorm:"column:created_at"`
	UpdatedAt       Time `gorm:"column:updated_at"`
}

func (projectRow) TableName() string { return "projects" }

// projectsCounted is the view every read of a project goes through: the
// row with its counts exact as of the statement (on PostgreSQL, plus the
// deltas not yet folded into the row; see FoldCounts).
const projectsCounted = "projects_counted"

func projectToRow(p domain.Project) projectRow {
	return projectRow{
		ID: p.ID, WorkspaceID: p.WorkspaceID, Name: p.Name, Key: p.Key,
		OpenCount: p.StatusCounts.Open, InProgressCount: p.StatusCounts.InProgress,
		DoneCount: p.StatusCounts.Done, ArchivedCount: p.StatusCounts.Archived,
		CreatedAt: Time(p.CreatedAt), UpdatedAt: Time(p.UpdatedAt),
	}
}

// projectFromRow restores a project read from projectsCounted; its
// task_count is the sum of its counts by status.
func projectFromRow(r projectRow) (domain.Project, error) {
	return domain.RestoreProject(domain.Project{
		ID: r.ID, WorkspaceID: r.WorkspaceID, Name: r.Name, Key: r.Key,
		TaskCount: r.OpenCount + r.InProgressCount + r.DoneCount + r.ArchivedCount,
		StatusCounts: domain.StatusCounts{
			Open: r.OpenCount, InProgress: r.InProgressCount, Done: r.DoneCount, Archived: r.ArchivedCount,
		},
		CreatedAt: timeOf(r.CreatedAt), UpdatedAt: timeOf(r.UpdatedAt),
	})
}

// ProjectStore persists projects.
type ProjectStore struct{ db *DB }

var _ ports.ProjectStore = (*ProjectStore)(nil)

// Projects is the project repository of db.
func (db *DB) Projects() *ProjectStore { return &ProjectStore{db: db} }

// CreateProject inserts p; resource_already_exists (param key) when the key
// is taken in the workspace.
func (s *ProjectStore) CreateProject(ctx context.Context, p domain.Project) error {
	row := projectToRow(p)
	if err := s.db.conn(ctx).Create(&row).Error; err != nil {
		if isDuplicate(err) {
			return alreadyExists("key", "A project with key '%s' already exists in this workspace.", p.Key)
		}
		return fmt.Errorf("store: create project: %w", err)
	}
	return nil
}

// FindProjectByID returns resource_not_found when absent or in another
// workspace. It is one statement: it is on the path of most task calls.
func (s *ProjectStore) FindProjectByID(ctx context.Context, workspaceID, id string) (domain.Project, error) {
	var row projectRow
	err := s.db.conn(ctx).Table(projectsCounted).Where("workspace_id = ? AND id = ?", workspaceID, id).Take(&row).Error
	if err != nil {
		return domain.Project{}, notFoundOr(err, "project", id)
	}
	return projectFromRow(row)
}

// FindProjectByIDForUpdate is FindProjectByID that also locks the row until
// the transaction ends, so that concurrent updates serialise; call it inside
// InTx. PostgreSQL locks the row FOR NO KEY UPDATE, which task creations'
// key-share locks (the tasks' foreign key) do not wait for, and then reads
// it through the view. SQLite has no row locks and needs none: its
// transactions begin IMMEDIATE, holding the database's write lock from the
// start.
func (s *ProjectStore) FindProjectByIDForUpdate(ctx context.Context, workspaceID, id string) (domain.Project, error) {
	if s.db.dialect == DialectPostgres {
		var locked []string
		if err := s.db.conn(ctx).Raw("SELECT id FROM projects WHERE workspace_id = ? AND id = ? FOR NO KEY UPDATE", workspaceID, id).
			Scan(&locked).Error; err != nil {
			return domain.Project{}, fmt.Errorf("store: lock project: %w", err)
		}
		if len(locked) == 0 {
			return domain.Project{}, domain.NotFound("project", id)
		}
	}
	return s.FindProjectByID(ctx, workspaceID, id)
}

// FindProjectsByIDs returns the projects of the workspace among ids, in no
// order; absent ids are left out.
func (s *ProjectStore) FindProjectsByIDs(ctx context.Context, workspaceID string, ids []string) ([]domain.Project, error) {
	if len(ids) == 0 {
		return []domain.Project{}, nil
	}
	return inBatches(ids, func(ids []string) ([]domain.Project, error) {
		var rows []projectRow
		err := s.db.conn(ctx).Table(projectsCounted).Where("workspace_id = ? AND id IN ?", workspaceID, ids).Find(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("store: find projects: %w", err)
		}
		return restoreRows(rows, projectFromRow)
	})
}

// FindProjects lists projects ordered by (created_at, id) after f.After.
func (s *ProjectStore) FindProjects(ctx context.Context, f ports.ProjectFilter) ([]domain.Project, error) {
	var rows []projectRow
	q := s.db.conn(ctx).Table(projectsCounted).Where("workspace_id = ?", f.WorkspaceID)
	if f.IDs != nil {
		q = q.Where("id IN ?", append([]string{""}, f.IDs...)) // never an empty IN list
	}
	if err := page(q, f.After, f.Limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list projects: %w", err)
	}
	return restoreRows(rows, projectFromRow)
}

// UpdateProject writes the mutable fields of p (name, updated_at);
// resource_not_found when p is absent from its workspace.
func (s *ProjectStore) UpdateProject(ctx context.Context, p domain.Project) error {
	res := s.db.conn(ctx).Model(&projectRow{}).
		Where("workspace_id = ? AND id = ?", p.WorkspaceID, p.ID).
		Updates(map[string]any{"name": p.Name, "updated_at": Time(p.UpdatedAt)})
	if res.Error != nil {
		return fmt.Errorf("store: update project: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("project", p.ID)
	}
	return nil
}
