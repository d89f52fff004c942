package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

type deliveryRow struct {
	ID             string         `gorm:"column:id;primaryKey"`
	WorkspaceID    string         `gorm:"column:workspace_id"`
	WebhookID      string         `gorm:"column:webhook_id"`
	EventID        string         `gorm:"column:event_id"`
	EventType      string         `gorm:"column:event_type"`
	Status         string         `gorm:"column:status"`
	Attempts       int            `gorm:"column:attempts"`
	LastAttemptAt  NullTime       `gorm:"column:last_attempt_at"`
	LastStatusCode sql.NullInt64  `gorm:"column:last_status_code"`
	LastError      sql.NullString `gorm:"column:last_error"`
	NextAttemptAt  NullTime       `gorm:"column:next_attempt_at"`
	WindowStart    Time           `gorm:"column:window_start"`
	LeaseUntil     NullTime       `gorm:"column:lease_until"`
	LockedBy       sql.NullString `gorm:"column:locked_by"`
	CreatedAt      Time           `gorm:"column:created_at"`
}

func (deliveryRow) TableName() string { return "webhook_deliveries" }

func deliveryToRow(d domain.Delivery) deliveryRow {
	r := deliveryRow{
		ID: d.ID, WorkspaceID: d.WorkspaceID, WebhookID: d.WebhookID, EventID: d.EventID,
		EventType: string(d.EventType), Status: string(d.Status), Attempts: d.Attempts,
		LastAttemptAt: NullTimeOf(d.LastAttemptAt), NextAttemptAt: NullTimeOf(d.NextAttemptAt),
		WindowStart: Time(d.WindowStart), CreatedAt: Time(d.CreatedAt),
	}
	if d.LastStatusCode != nil {
		r.LastStatusCode = sql.NullInt64{Int64: int64(*d.LastStatusCode), Valid: true}
	}
	if d.LastError != nil {
		r.LastError = sql.NullString{String: *d.LastError, Valid: true}
	}
	return r
}

func deliveryFromRow(r deliveryRow) (domain.Delivery, error) {
	d := domain.Delivery{
		ID: r.ID, WorkspaceID: r.WorkspaceID, WebhookID: r.WebhookID, EventID: r.EventID,
		EventType: domain.EventType(r.EventType), Status: domain.DeliveryStatus(r.Status), Attempts: r.Attempts,
		LastAttemptAt: r.LastAttemptAt.Ptr(), NextAttemptAt: r.NextAttemptAt.Ptr(),
		WindowStart: timeOf(r.WindowStart), CreatedAt: timeOf(r.CreatedAt),
	}
	if r.LastStatusCode.Valid {
		c := int(r.LastStatusCode.Int64)
		d.LastStatusCode = &c
	}
	if r.LastError.Valid {
		e := r.LastError.String
		d.LastError = &e
	}
	return domain.RestoreDelivery(d)
}

// DeliveryStore persists deliveries and hands them to dispatchers.
type DeliveryStore struct{ db *DB }

var _ ports.DeliveryStore = (*DeliveryStore)(nil)

// Deliveries is the delivery repository of db.
func (db *DB) Deliveries() *DeliveryStore { return &DeliveryStore{db: db} }

// CreateDeliveries inserts ds, insertRows a statement (written out,
// as the task and event inserts are, rather than by GORM's reflective
// Create), and tells other
// processes' dispatchers of them once they commit (announceDeliveries). A
// new delivery holds no lease (lease_until, locked_by are NULL).
func (s *DeliveryStore) CreateDeliveries(ctx context.Context, ds []domain.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	per := s.db.insertRows(13)
	for start := 0; start < len(ds); start += per {
		chunk := ds[start:min(start+per, len(ds))]
		q := sqlBuilder{dialect: s.db.dialect, args: make([]any, 0, 13*len(chunk))}
		q.write(`INSERT INTO webhook_deliveries (id, workspace_id, webhook_id, event_id, event_type, status, attempts,
	last_attempt_at, last_status_code, last_error, next_attempt_at, window_start, created_at) VALUES `)
		q.values(len(chunk), "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", func(i int) []any {
			r := deliveryToRow(chunk[i])
			return []any{r.ID, r.WorkspaceID, r.WebhookID, r.EventID, r.EventType, r.Status, r.Attempts,
				r.LastAttemptAt, r.LastStatusCode, r.LastError, r.NextAttemptAt, r.WindowStart, r.CreatedAt}
		})
		if err := s.db.conn(ctx).Exec(q.sql.String(), q.args...).Error; err != nil {
			return fmt.Errorf("store: create deliveries: %w", err)
		}
	}
	s.db.announceDeliveries(ctx)
	return nil
}

// FindDeliveryByID returns resource_not_found when the delivery is absent or
// not one of the webhook's in the workspace.
func (s *DeliveryStore) FindDeliveryByID(ctx context.Context, workspaceID, webhookID, id string) (domain.Delivery, error) {
	var row deliveryRow
	err := s.db.conn(ctx).Where("workspace_id = ? AND webhook_id = ? AND id = ?", workspaceID, webhookID, id).Take(&row).Error
	if err != nil {
		return domain.Delivery{}, notFoundOr(err, "webhook delivery", id)
	}
	return deliveryFromRow(row)
}

// FindDeliveries lists a webhook's deliveries in (created_at, id) order
// after f.After: a range scan of (webhook_id[, status], created_at, id).
func (s *DeliveryStore) FindDeliveries(ctx context.Context, f ports.DeliveryFilter) ([]domain.Delivery, error) {
	q := s.db.conn(ctx).Where("webhook_id = ? AND workspace_id = ?", f.WebhookID, f.WorkspaceID)
	if f.Status != nil {
		q = q.Where("status = ?", string(*f.Status))
	}
	var rows []deliveryRow
	if err := page(q, f.After, f.Limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list deliveries: %w", err)
	}
	return restoreRows(rows, deliveryFromRow)
}

// RescheduleDelivery writes a redelivery and notifies like CreateDeliveries.
func (s *DeliveryStore) RescheduleDelivery(ctx context.Context, d domain.Delivery) error {
	row := deliveryToRow(d)
	res := s.db.conn(ctx).Model(&deliveryRow{}).
		Where("workspace_id = ? AND webhook_id = ? AND id = ?", d.WorkspaceID, d.WebhookID, d.ID).
		Updates(map[string]any{"status": row.Status, "next_attempt_at": row.NextAttemptAt, "window_start": row.WindowStart})
	if res.Error != nil {
		return fmt.Errorf("store: reschedule delivery: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("webhook delivery", d.ID)
	}
	s.db.announceDeliveries(ctx)
	return nil
}

// FinishDelivery writes an attempt's outcome and ends the lease, only while
// owner holds it.
func (s *DeliveryStore) FinishDelivery(ctx context.Context, d domain.Delivery, owner string) (bool, error) {
	written, err := s.finishOutcomes(ctx, owner, []domain.Outcome{{Delivery: d}})
	if err != nil {
		return false, fmt.Errorf("store: finish delivery: %w", err)
	}
	return written[d.ID], nil
}

// ReleaseDeliveries ends owner's leases on ids.
func (s *DeliveryStore) ReleaseDeliveries(ctx context.Context, owner string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	err := s.db.conn(ctx).Model(&deliveryRow{}).
		Where("id IN ? AND locked_by = ?", ids, owner).
		Updates(map[string]any{"lease_until": nil, "locked_by": nil}).Error
	if err != nil {
		return fmt.Errorf("store: release deliveries: %w", err)
	}
	return nil
}

// FailPendingDeliveries fails a webhook's pending deliveries, those with an
// attempt in flight included: their leases end, so that the attempt's
// outcome, written only while its lease holds, is dropped rather than
// putting a retry back for a webhook that takes none.
func (s *DeliveryStore) FailPendingDeliveries(ctx context.Context, workspaceID, webhookID, reason string) (int64, error) {
	res := s.db.conn(ctx).Model(&deliveryRow{}).
		Where("workspace_id = ? AND webhook_id = ? AND status = 'pending'", workspaceID, webhookID).
		Updates(map[string]any{"status": string(domain.DeliveryFailed), "next_attempt_at": nil, "last_error": reason,
			"lease_until": nil, "locked_by": nil})
	if res.Error != nil {
		return 0, fmt.Errorf("store: fail pending deliveries: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// channelExpr names the NOTIFY channel of the current database and schema,
// so that schemas of one database (one per test, say) do not wake each
// other's dispatchers. Both sides compute it in SQL on their own connection.
var channelExpr = strings.TrimSpace(`
'worktrack_deliveries_' || substr(md5(current_database() || '/' || coalesce(current_schema(), '')), 1, 16)`)

// eventChannelExpr names the channel on which the sequencer announces new
// log positions, per database and schema like channelExpr.
var eventChannelExpr = strings.TrimSpace(`
'worktrack_events_' || substr(md5(current_database() || '/' || coalesce(current_schema(), '')), 1, 16)`)

// Backlog counts the pending deliveries of every workspace and finds when
// the oldest of them was created (ok false when none is pending), for the
// operator's metrics.
func (s *DeliveryStore) Backlog(ctx context.Context) (pending int64, oldest time.Time, ok bool, err error) {
	var row struct {
		N      int64
		Oldest NullTime
	}
	err = s.db.conn(ctx).Raw("SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM webhook_deliveries WHERE status = 'pending'").Scan(&row).Error
	if err != nil {
		return 0, time.Time{}, false, fmt.Errorf("store: delivery backlog: %w", err)
	}
	return row.N, row.Oldest.Time, row.Oldest.Valid, nil
}
