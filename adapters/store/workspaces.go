package store

import (
	"context"
	"fmt"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

type workspaceRow struct {
	ID        string `gorm:"column:id;primaryKey"`
	Name      string `gorm:"column:name"`
	CreatedAt Time   `gorm:"column:created_at"`
}

func (workspaceRow) TableName() string { return "workspaces" }

func workspaceToRow(w domain.Workspace) workspaceRow {
	return workspaceRow{ID: w.ID, Name: w.Name, CreatedAt: Time(w.CreatedAt)}
}

func workspaceFromRow(r workspaceRow) (domain.Workspace, error) {
	return domain.RestoreWorkspace(domain.Workspace{ID: r.ID, Name: r.Name, CreatedAt: timeOf(r.CreatedAt)})
}

// WorkspaceStore persists workspaces.
type WorkspaceStore struct{ db *DB }

var _ ports.WorkspaceStore = (*WorkspaceStore)(nil)

// Workspaces is the workspace repository of db.
func (db *DB) Workspaces() *WorkspaceStore { return &WorkspaceStore{db: db} }

// CreateWorkspace inserts w.
func (s *WorkspaceStore) CreateWorkspace(ctx context.Context, w domain.Workspace) error {
	row := workspaceToRow(w)
	if err := s.db.conn(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("store: create workspace: %w", err)
	}
	return nil
}

// FindWorkspaceByID returns resource_not_found when absent.
func (s *WorkspaceStore) FindWorkspaceByID(ctx context.Context, id string) (domain.Workspace, error) {
	var row workspaceRow
	if err := s.db.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.Workspace{}, notFoundOr(err, "workspace", id)
	}
	return workspaceFromRow(row)
}

// ListWorkspaces lists every workspace, oldest first.
func (s *WorkspaceStore) ListWorkspaces(ctx context.Context) ([]domain.Workspace, error) {
	var rows []workspaceRow
	if err := s.db.conn(ctx).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list workspaces: %w", err)
	}
	return restoreRows(rows, workspaceFromRow)
}

// CountWorkspaces counts every workspace.
func (s *WorkspaceStore) CountWorkspaces(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.conn(ctx).Model(&workspaceRow{}).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("store: count workspaces: %w", err)
	}
	return n, nil
}

// LockWorkspaces takes PostgreSQL's EXCLUSIVE table lock on workspaces (reads
// go on, writes wait) until the transaction ends. SQLite needs nothing: its
// transactions begin IMMEDIATE and so already exclude other writers.
func (s *WorkspaceStore) LockWorkspaces(ctx context.Context) error {
	if s.db.dialect != DialectPostgres {
		return nil
	}
	if err := s.db.conn(ctx).Exec("LOCK TABLE workspaces IN EXCLUSIVE MODE").Error; err != nil {
		return fmt.Errorf("store: lock workspaces: %w", err)
	}
	return nil
}
