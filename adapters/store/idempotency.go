package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/clause"

	"github.com/worktrack/worktrack/adapters/edgeport"
)

type idempotencyRow struct {
	APIKeyID       string `gorm:"column:api_key_id;primaryKey"`
	IdempotencyKey string `gorm:"column:idempotency_key;primaryKey"`
	Method         string `gorm:"column:method"`
	Path           string `gorm:"column:path"`
	BodyHash       string `gorm:"column:body_hash"`
	Role           string `gorm:"column:role"`
	Done           bool   `gorm:"column:done"`
	ResponseStatus *int   `gorm:"column:response_status"`
	ResponseBody   []byte `gorm:"column:response_body"`
	CreatedAt      Time   `gorm:"column:created_at"`
}

func (idempotencyRow) TableName() string { return "idempotency_keys" }

// IdempotencyStore keeps the idempotency keys of REST POSTs for the edge.
type IdempotencyStore struct{ db *DB }

var _ edgeport.IdempotencyStore = (*IdempotencyStore)(nil)

// Idempotency is the idempotency-key repository of db.
func (db *DB) Idempotency() *IdempotencyStore { return &IdempotencyStore{db: db} }

// BeginIdempotent claims the key with an INSERT … ON CONFLICT DO NOTHING, so
// that of two concurrent first requests exactly one runs.
func (s *IdempotencyStore) BeginIdempotent(ctx context.Context, r edgeport.IdempotencyRecord, staleBefore, runningStaleBefore time.Time) (*edgeport.IdempotencyRecord, error) {
	row := idempotencyRow{
		APIKeyID: r.APIKeyID, IdempotencyKey: r.Key, Method: r.Method, Path: r.Path,
		BodyHash: r.BodyHash, Role: r.Role, CreatedAt: Time(r.CreatedAt),
	}
	for attempt := 0; attempt < 2; attempt++ {
		res := s.db.conn(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
		if res.Error != nil {
			return nil, fmt.Errorf("store: begin idempotent request: %w", res.Error)
		}
		if res.RowsAffected == 1 {
			return nil, nil
		}
		var held idempotencyRow
		err := s.db.conn(ctx).Where("api_key_id = ? AND idempotency_key = ?", r.APIKeyID, r.Key).Take(&held).Error
		if err != nil {
			// Released between our INSERT and SELECT: try to claim it again.
			continue
		}
		created := timeOf(held.CreatedAt)
		if created.Before(staleBefore) || (!held.Done && created.Before(runningStaleBefore)) {
			// Expired, or left running by a process that died: forget it.
			if err := s.db.conn(ctx).Where("api_key_id = ? AND idempotency_key = ? AND created_at = ?",
				r.APIKeyID, r.Key, held.CreatedAt).Delete(&idempotencyRow{}).Error; err != nil {
				return nil, fmt.Errorf("store: expire idempotency key: %w", err)
			}
			continue
		}
		body, err := s.db.secrets.Open(held.ResponseBody, replayContext(held.APIKeyID, held.IdempotencyKey))
		if err != nil {
			return nil, fmt.Errorf("store: idempotency key %q: replay: %w", r.Key, err)
		}
		out := &edgeport.IdempotencyRecord{
			APIKeyID: held.APIKeyID, Key: held.IdempotencyKey, Method: held.Method, Path: held.Path,
			BodyHash: held.BodyHash, Role: held.Role, Done: held.Done, Body: body, CreatedAt: created,
		}
		if held.ResponseStatus != nil {
			out.Status = *held.ResponseStatus
		}
		return out, nil
	}
	return nil, fmt.Errorf("store: idempotency key %q is contended", r.Key)
}

// CompleteIdempotent stores the response of a running record.
func (s *IdempotencyStore) CompleteIdempotent(ctx context.Context, apiKeyID, key string, status int, body []byte) error {
	err := s.db.conn(ctx).Model(&idempotencyRow{}).
		Where("api_key_id = ? AND idempotency_key = ?", apiKeyID, key).
		Updates(map[string]any{"done": true, "response_status": status, "response_body": s.db.secrets.Seal(body, replayContext(apiKeyID, key))}).Error
	if err != nil {
		return fmt.Errorf("store: complete idempotent request: %w", err)
	}
	return nil
}

// replayContext binds a sealed replay to its record: the responses to
// creating or rotating a webhook show its signing secret, so every replay
// is sealed when the keyring seals.
func replayContext(apiKeyID, key string) string { return "idempotency:" + apiKeyID + ":" + key }

// ReleaseIdempotent forgets a running record.
func (s *IdempotencyStore) ReleaseIdempotent(ctx context.Context, apiKeyID, key string) error {
	err := s.db.conn(ctx).Where("api_key_id = ? AND idempotency_key = ? AND done = ?", apiKeyID, key, false).
		Delete(&idempotencyRow{}).Error
	if err != nil {
		return fmt.Errorf("store: release idempotency key: %w", err)
	}
	return nil
}

// PurgeIdempotent deletes records created before before.
func (s *IdempotencyStore) PurgeIdempotent(ctx context.Context, before time.Time) (int64, error) {
	res := s.db.conn(ctx).Where("created_at < ?", Time(before)).Delete(&idempotencyRow{})
	if res.Error != nil {
		return 0, fmt.Errorf("store: purge idempotency keys: %w", res.Error)
	}
	return res.RowsAffected, nil
}
