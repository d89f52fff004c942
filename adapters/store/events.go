package store

import (
	"context"
	"fmt"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

type eventRow struct {
	ID          string `gorm:"column:id;primaryKey"`
	WorkspaceID string `gorm:"column:workspace_id"`
	Type        string `gorm:"column:type"`
	CreatedAt   Time   `gorm:"column:created_at"`
	Payload     []byte `gorm:"column:payload"`
}

func (eventRow) TableName() string { return "events" }

// EventStore keeps the event log.
type EventStore struct{ db *DB }

var _ ports.EventStore = (*EventStore)(nil)

// Events is the event repository of db.
func (db *DB) Events() *EventStore { return &EventStore{db: db} }

// CreateEvent inserts e with its payload bytes, as they are.
func (s *EventStore) CreateEvent(ctx context.Context, e domain.Event, payload []byte) error {
	row := eventRow{ID: e.ID, WorkspaceID: e.WorkspaceID, Type: string(e.Type), CreatedAt: Time(e.CreatedAt), Payload: payload}
	if err := s.db.conn(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("store: create event: %w", err)
	}
	return nil
}
