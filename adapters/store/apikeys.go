package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

type apiKeyRow struct {
	ID          string         `gorm:"column:id;primaryKey"`
	WorkspaceID string         `gorm:"column:workspace_id"`
	UserID      string         `gorm:"column:user_id"`
	Name        string         `gorm:"column:name"`
	Prefix      string         `gorm:"column:prefix"`
	SecretHash  string         `gorm:"column:secret_hash"`
	Scopes      string         `gorm:"column:scopes"`      // a JSON array
	ProjectIDs  sql.NullString `gorm:"column:project_ids"` // a JSON array; NULL for every project
	CreatedAt   Time           `gorm:"column:created_at"`
	ExpiresAt   NullTime       `gorm:"column:expires_at"`
	RevokedAt   NullTime       `gorm:"column:revoked_at"`
	LastUsedAt  NullTime       `gorm:"column:last_used_at"`
}

func (apiKeyRow) TableName() string { return "api_keys" }

// apiKeyColumns are apiKeyRow's columns, for the raw authentication join.
const apiKeyColumns = "k.id, k.workspace_id, k.user_id, k.name, k.prefix, k.secret_hash, k.scopes, k.project_ids, " +
	"k.created_at, k.expires_at, k.revoked_at, k.last_used_at"

func apiKeyToRow(k domain.APIKey) (apiKeyRow, error) {
	scopes, err := json.Marshal(k.Scopes)
	if err != nil {
		return apiKeyRow{}, err
	}
	r := apiKeyRow{
		ID: k.ID, WorkspaceID: k.WorkspaceID, UserID: k.UserID, Name: k.Name, Prefix: k.Prefix, SecretHash: k.SecretHash,
		Scopes: string(scopes), CreatedAt: Time(k.CreatedAt), ExpiresAt: NullTimeOf(k.ExpiresAt),
		RevokedAt: NullTimeOf(k.RevokedAt), LastUsedAt: NullTimeOf(k.LastUsedAt),
	}
	if k.ProjectIDs != nil {
		ids, err := json.Marshal(k.ProjectIDs)
		if err != nil {
			return apiKeyRow{}, err
		}
		r.ProjectIDs = sql.NullString{String: string(ids), Valid: true}
	}
	return r, nil
}

func apiKeyFromRow(r apiKeyRow) (domain.APIKey, error) {
	k := domain.APIKey{
		ID: r.ID, WorkspaceID: r.WorkspaceID, UserID: r.UserID, Name: r.Name, Prefix: r.Prefix, SecretHash: r.SecretHash,
		CreatedAt: timeOf(r.CreatedAt), ExpiresAt: r.ExpiresAt.Ptr(),
		RevokedAt: r.RevokedAt.Ptr(), LastUsedAt: r.LastUsedAt.Ptr(),
	}
	if err := json.Unmarshal([]byte(r.Scopes), &k.Scopes); err != nil {
		return domain.APIKey{}, fmt.Errorf("store: api key %s: scopes %q: %w", r.ID, r.Scopes, err)
	}
	if r.ProjectIDs.Valid {
		if err := json.Unmarshal([]byte(r.ProjectIDs.String), &k.ProjectIDs); err != nil {
			return domain.APIKey{}, fmt.Errorf("store: api key %s: project_ids: %w", r.ID, err)
		}
	}
	return domain.RestoreAPIKey(k)
}

// keyWithUserRow is one row of the authentication join.
type keyWithUserRow struct {
	Key  apiKeyRow `gorm:"embedded"`
	User userRow   `gorm:"embedded;embeddedPrefix:u_"`
}

// touchInterval is how stale last_used_at may get: a key used all the time is
// written at most once per interval, whatever the number of processes.
const touchInterval = time.Minute

// APIKeyStore persists API keys.
type APIKeyStore struct{ db *DB }

var _ ports.APIKeyStore = (*APIKeyStore)(nil)

// APIKeys is the API key repository of db.
func (db *DB) APIKeys() *APIKeyStore { return &APIKeyStore{db: db} }

// CreateAPIKey inserts k.
func (s *APIKeyStore) CreateAPIKey(ctx context.Context, k domain.APIKey) error {
	row, err := apiKeyToRow(k)
	if err != nil {
		return err
	}
	if err := s.db.conn(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("store: create api key: %w", err)
	}
	return nil
}

// FindAPIKeyByHash returns the key with that secret hash and its user, or
// resource_not_found, in one statement: it runs on every authenticated
// request. Revoked and expired keys are returned too; the caller decides.
func (s *APIKeyStore) FindAPIKeyByHash(ctx context.Context, hash string) (domain.APIKey, domain.User, error) {
	var row keyWithUserRow
	res := s.db.conn(ctx).Raw(`SELECT `+apiKeyColumns+`,
		       u.id AS u_id, u.workspace_id AS u_workspace_id, u.email AS u_email,
		       u.name AS u_name, u.role AS u_role, u.created_at AS u_created_at
		FROM api_keys k
		JOIN users u ON u.workspace_id = k.workspace_id AND u.id = k.user_id
		WHERE k.secret_hash = ?`, hash).Find(&row) // Find, not Scan: a Query statement, under the budget (budget.go)
	if res.Error != nil {
		return domain.APIKey{}, domain.User{}, fmt.Errorf("store: find api key: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		// The hash is a credential: it does not belong in the message.
		return domain.APIKey{}, domain.User{}, &domain.Error{Code: domain.CodeNotFound, Message: "No such api_key"}
	}
	k, err := apiKeyFromRow(row.Key)
	if err != nil {
		return domain.APIKey{}, domain.User{}, err
	}
	u, err := userFromRow(row.User)
	if err != nil {
		return domain.APIKey{}, domain.User{}, err
	}
	return k, u, nil
}

// FindAPIKeyByPrefix returns a key whose secret begins with prefix, or
// resource_not_found.
func (s *APIKeyStore) FindAPIKeyByPrefix(ctx context.Context, prefix string) (domain.APIKey, error) {
	var rows []apiKeyRow
	if err := s.db.conn(ctx).Where("prefix = ?", prefix).Order("created_at, id").Limit(1).Find(&rows).Error; err != nil {
		return domain.APIKey{}, fmt.Errorf("store: find api key by prefix: %w", err)
	}
	if len(rows) == 0 {
		return domain.APIKey{}, &domain.Error{Code: domain.CodeNotFound, Message: "No such api_key"}
	}
	return apiKeyFromRow(rows[0])
}

// FindAPIKeyByID returns resource_not_found when absent.
func (s *APIKeyStore) FindAPIKeyByID(ctx context.Context, id string) (domain.APIKey, error) {
	var row apiKeyRow
	if err := s.db.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.APIKey{}, notFoundOr(err, "api_key", id)
	}
	return apiKeyFromRow(row)
}

// FindAPIKeys lists the keys of f's workspace (and user, when set) after
// f.After, by (created_at, id).
func (s *APIKeyStore) FindAPIKeys(ctx context.Context, f ports.APIKeyFilter) ([]domain.APIKey, error) {
	q := s.db.conn(ctx).Where("workspace_id = ?", f.WorkspaceID)
	if f.UserID != nil {
		q = q.Where("user_id = ?", *f.UserID)
	}
	var rows []apiKeyRow
	if err := page(q, f.After, f.Limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list api keys: %w", err)
	}
	return restoreRows(rows, apiKeyFromRow)
}

// CountUnrevokedAPIKeys counts the user's keys not revoked; in a
// transaction, after the user's lock (lockScope), so that a cap checked by
// counting holds under concurrent creates.
func (s *APIKeyStore) CountUnrevokedAPIKeys(ctx context.Context, userID string) (int, error) {
	if err := s.db.lockScope(ctx, "api_keys:"+userID); err != nil {
		return 0, err
	}
	var n int64
	if err := s.db.conn(ctx).Model(&apiKeyRow{}).Where("user_id = ? AND revoked_at IS NULL", userID).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("store: count api keys: %w", err)
	}
	return int(n), nil
}

// RenameAPIKey writes a key's name; resource_not_found when absent.
func (s *APIKeyStore) RenameAPIKey(ctx context.Context, id, name string) error {
	res := s.db.conn(ctx).Model(&apiKeyRow{}).Where("id = ?", id).Update("name", name)
	if res.Error != nil {
		return fmt.Errorf("store: rename api key: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("api_key", id)
	}
	return nil
}

// FindAPIKeysByUser lists a user's keys, oldest first.
func (s *APIKeyStore) FindAPIKeysByUser(ctx context.Context, userID string) ([]domain.APIKey, error) {
	var rows []apiKeyRow
	if err := s.db.conn(ctx).Where("user_id = ?", userID).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list api keys: %w", err)
	}
	return restoreRows(rows, apiKeyFromRow)
}

// RevokeAPIKey sets revoked_at unless already set, and returns the key;
// resource_not_found when absent. Revoking twice keeps the first time.
func (s *APIKeyStore) RevokeAPIKey(ctx context.Context, id string, at time.Time) (domain.APIKey, error) {
	var k domain.APIKey
	err := s.db.InTx(ctx, func(ctx context.Context) error {
		err := s.db.conn(ctx).Model(&apiKeyRow{}).
			Where("id = ? AND revoked_at IS NULL", id).
			Update("revoked_at", Time(at)).Error
		if err != nil {
			return fmt.Errorf("store: revoke api key: %w", err)
		}
		k, err = s.FindAPIKeyByID(ctx, id)
		return err
	})
	return k, err
}

// TouchAPIKey records that the key was used at at. The write is conditional,
// so last_used_at moves at most once per minute per key even when many
// processes authenticate with it; an absent key is not an error.
func (s *APIKeyStore) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	err := s.db.conn(ctx).Model(&apiKeyRow{}).
		Where("id = ? AND (last_used_at IS NULL OR last_used_at <= ?)", id, Time(at.Add(-touchInterval))).
		Update("last_used_at", Time(at)).Error
	if err != nil {
		return fmt.Errorf("store: touch api key: %w", err)
	}
	return nil
}
