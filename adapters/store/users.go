package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

type userRow struct {
	ID          string `gorm:"column:id;primaryKey"`
	WorkspaceID string `gorm:"column:workspace_id"`
	Email       string `gorm:"column:email"`
	Name        string `gorm:"column:name"`
	Role        string `gorm:"column:role"`
	CreatedAt   Time   `gorm:"column:created_at"`
}

func (userRow) TableName() string { return "users" }

func userToRow(u domain.User) userRow {
	return userRow{
		ID: u.ID, WorkspaceID: u.WorkspaceID, Email: u.Email, Name: u.Name,
		Role: string(u.Role), CreatedAt: Time(u.CreatedAt),
	}
}

func userFromRow(r userRow) (domain.User, error) {
	return domain.RestoreUser(domain.User{
		ID: r.ID, WorkspaceID: r.WorkspaceID, Email: r.Email, Name: r.Name,
		Role: domain.Role(r.Role), CreatedAt: timeOf(r.CreatedAt),
	})
}

// UserStore persists users.
type UserStore struct{ db *DB }

var _ ports.UserStore = (*UserStore)(nil)

// Users is the user repository of db.
func (db *DB) Users() *UserStore { return &UserStore{db: db} }

// CreateUser inserts u; resource_already_exists (param email) when the email
// is taken in the workspace.
func (s *UserStore) CreateUser(ctx context.Context, u domain.User) error {
	row := userToRow(u)
	if err := s.db.conn(ctx).Create(&row).Error; err != nil {
		if isDuplicate(err) {
			return alreadyExists("email", "A user with email '%s' already exists in this workspace.", u.Email)
		}
		return fmt.Errorf("store: create user: %w", err)
	}
	return nil
}

// FindUserByID returns resource_not_found when absent or in another workspace.
func (s *UserStore) FindUserByID(ctx context.Context, workspaceID, id string) (domain.User, error) {
	var row userRow
	err := s.db.conn(ctx).Where("workspace_id = ? AND id = ?", workspaceID, id).Take(&row).Error
	if err != nil {
		return domain.User{}, notFoundOr(err, "user", id)
	}
	return userFromRow(row)
}

// FindUserByIDAnyWorkspace finds a user in any workspace; operator tools only.
func (s *UserStore) FindUserByIDAnyWorkspace(ctx context.Context, id string) (domain.User, error) {
	var row userRow
	if err := s.db.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.User{}, notFoundOr(err, "user", id)
	}
	return userFromRow(row)
}

// FindUsersByEmailAnyWorkspace finds the users with that email (any case)
// in every workspace, oldest first; operator tools only.
func (s *UserStore) FindUsersByEmailAnyWorkspace(ctx context.Context, email string) ([]domain.User, error) {
	var rows []userRow
	err := s.db.conn(ctx).Where("LOWER(email) = LOWER(?)", strings.TrimSpace(email)).Order("created_at, id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("store: find users by email: %w", err)
	}
	return restoreRows(rows, userFromRow)
}

// FindUsersByIDs returns the users of the workspace among ids, in no order;
// absent ids are left out.
func (s *UserStore) FindUsersByIDs(ctx context.Context, workspaceID string, ids []string) ([]domain.User, error) {
	if len(ids) == 0 {
		return []domain.User{}, nil
	}
	return inBatches(ids, func(ids []string) ([]domain.User, error) {
		var rows []userRow
		err := s.db.conn(ctx).Where("workspace_id = ? AND id IN ?", workspaceID, ids).Find(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("store: find users: %w", err)
		}
		return restoreRows(rows, userFromRow)
	})
}

// FindUsers lists users ordered by (created_at, id) after f.After.
func (s *UserStore) FindUsers(ctx context.Context, f ports.UserFilter) ([]domain.User, error) {
	var rows []userRow
	q := s.db.conn(ctx).Where("workspace_id = ?", f.WorkspaceID)
	if err := page(q, f.After, f.Limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list users: %w", err)
	}
	return restoreRows(rows, userFromRow)
}

// SetUserRole writes a user's role; resource_not_found when absent.
func (s *UserStore) SetUserRole(ctx context.Context, workspaceID, id string, role domain.Role) error {
	res := s.db.conn(ctx).Model(&userRow{}).Where("workspace_id = ? AND id = ?", workspaceID, id).Update("role", string(role))
	if res.Error != nil {
		return fmt.Errorf("store: set user role: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("user", id)
	}
	return nil
}
