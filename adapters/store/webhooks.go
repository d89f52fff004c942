package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"gorm.io/gorm/clause"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

type webhookRow struct {
	ID                      string         `gorm:"column:id;primaryKey"`
	WorkspaceID             string         `gorm:"column:workspace_id"`
	URL                     string         `gorm:"column:url"`
	Events                  string         `gorm:"column:events"`
	Active                  bool           `gorm:"column:active"`
	Secret                  string         `gorm:"column:secret"`
	PreviousSecret          sql.NullString `gorm:"column:previous_secret"`
	PreviousSecretExpiresAt NullTime       `gorm:"column:previous_secret_expires_at"`
	Headers                 string         `gorm:"column:headers"`
	DisabledReason          sql.NullString `gorm:"column:disabled_reason"`
	DisabledAt              NullTime       `gorm:"column:disabled_at"`
	FailingSince            NullTime       `gorm:"column:failing_since"`
	FailedAttempts          int            `gorm:"column:failed_attempts"`
	CreatedAt               Time           `gorm:"column:created_at"`
	UpdatedAt               Time           `gorm:"column:updated_at"`
}

func (webhookRow) TableName() string { return "webhooks" }

// webhookToRow is w as stored: its secrets sealed under the keyring, bound
// to the webhook's id.
func (db *DB) webhookToRow(w domain.Webhook) (webhookRow, error) {
	evs, err := json.Marshal(w.Events)
	if err != nil {
		return webhookRow{}, fmt.Errorf("store: encode webhook events: %w", err)
	}
	hs, err := db.sealHeaders(w.ID, w.Headers)
	if err != nil {
		return webhookRow{}, err
	}
	return webhookRow{
		ID: w.ID, WorkspaceID: w.WorkspaceID, URL: w.URL, Events: string(evs), Active: w.Active,
		Headers: hs, DisabledReason: sql.NullString{String: string(w.DisabledReason), Valid: w.DisabledReason != ""},
		DisabledAt: NullTimeOf(w.DisabledAt), FailingSince: NullTimeOf(w.FailingSince), FailedAttempts: w.FailedAttempts,
		Secret:                  db.secrets.SealString(w.Secret, w.ID),
		PreviousSecret:          sql.NullString{String: db.secrets.SealString(w.PreviousSecret, w.ID), Valid: w.PreviousSecret != ""},
		PreviousSecretExpiresAt: NullTimeOf(w.PreviousSecretExpiresAt),
		CreatedAt:               Time(w.CreatedAt), UpdatedAt: Time(w.UpdatedAt),
	}, nil
}

// webhookFromRow rebuilds a webhook, its secrets opened; its event list
// passes the domain's parser, so a stored list the domain would refuse is
// an error, not a value.
func (db *DB) webhookFromRow(r webhookRow) (domain.Webhook, error) {
	var names []string
	if err := json.Unmarshal([]byte(r.Events), &names); err != nil {
		return domain.Webhook{}, fmt.Errorf("store: webhook %s: bad events %q: %w", r.ID, r.Events, err)
	}
	evs, err := domain.ParseEventTypes("events", names)
	if err != nil {
		return domain.Webhook{}, fmt.Errorf("store: webhook %s: bad events %q: %w", r.ID, r.Events, err)
	}
	headers, err := db.openHeaders(r.ID, r.Headers)
	if err != nil {
		return domain.Webhook{}, err
	}
	secret, previous, err := db.openSecrets(r.ID, r.Secret, r.PreviousSecret.String)
	if err != nil {
		return domain.Webhook{}, err
	}
	return domain.RestoreWebhook(domain.Webhook{
		ID: r.ID, WorkspaceID: r.WorkspaceID, URL: r.URL, Events: evs, Active: r.Active, Headers: headers,
		DisabledReason: domain.DisabledReason(r.DisabledReason.String), DisabledAt: r.DisabledAt.Ptr(),
		FailingSince: r.FailingSince.Ptr(), FailedAttempts: r.FailedAttempts,
		Secret: secret, PreviousSecret: previous, PreviousSecretExpiresAt: r.PreviousSecretExpiresAt.Ptr(),
		CreatedAt: timeOf(r.CreatedAt), UpdatedAt: timeOf(r.UpdatedAt),
	})
}

// noHeaders is how a webhook without custom headers stores them: as they
// are, there being nothing to seal.
const noHeaders = "{}"

// headersContext binds a webhook's sealed headers to the webhook and to
// their column, so that they open nowhere else.
func headersContext(webhookID string) string { return webhookID + "/headers" }

// sealHeaders is a webhook's custom headers as stored: a JSON object,
// sealed under the keyring (the values may be a gateway's credentials).
func (db *DB) sealHeaders(webhookID string, h map[string]string) (string, error) {
	if len(h) == 0 {
		return noHeaders, nil
	}
	b, err := json.Marshal(h)
	if err != nil {
		return "", fmt.Errorf("store: encode webhook headers: %w", err)
	}
	return db.secrets.SealString(string(b), headersContext(webhookID)), nil
}

// openHeaders reads a webhook's stored headers, sealed or not.
func (db *DB) openHeaders(webhookID, stored string) (map[string]string, error) {
	plain, err := db.secrets.OpenString(stored, headersContext(webhookID))
	if err != nil {
		return nil, fmt.Errorf("store: webhook %s: headers: %w", webhookID, err)
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(plain), &h); err != nil {
		return nil, fmt.Errorf("store: webhook %s: bad headers: %w", webhookID, err)
	}
	return h, nil
}

// openSecrets opens a webhook's stored secrets.
func (db *DB) openSecrets(id, secret, previous string) (string, string, error) {
	s, err := db.secrets.OpenString(secret, id)
	if err != nil {
		return "", "", fmt.Errorf("store: webhook %s: signing secret: %w", id, err)
	}
	p, err := db.secrets.OpenString(previous, id)
	if err != nil {
		return "", "", fmt.Errorf("store: webhook %s: previous signing secret: %w", id, err)
	}
	return s, p, nil
}

func (db *DB) webhooksFromRows(rows []webhookRow) ([]domain.Webhook, error) {
	out := make([]domain.Webhook, 0, len(rows))
	for _, r := range rows {
		w, err := db.webhookFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// WebhookStore persists webhooks.
type WebhookStore struct{ db *DB }

var _ ports.WebhookStore = (*WebhookStore)(nil)

// Webhooks is the webhook repository of db.
func (db *DB) Webhooks() *WebhookStore { return &WebhookStore{db: db} }

// CreateWebhook inserts w, secret included.
func (s *WebhookStore) CreateWebhook(ctx context.Context, w domain.Webhook) error {
	row, err := s.db.webhookToRow(w)
	if err != nil {
		return err
	}
	if err := s.db.conn(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("store: create webhook: %w", err)
	}
	return nil
}

// CountWebhooks counts the workspace's webhooks; in a transaction, after
// the workspace's lock (lockScope).
func (s *WebhookStore) CountWebhooks(ctx context.Context, workspaceID string) (int, error) {
	if err := s.db.lockScope(ctx, "webhooks:"+workspaceID); err != nil {
		return 0, err
	}
	var n int64
	if err := s.db.conn(ctx).Model(&webhookRow{}).Where("workspace_id = ?", workspaceID).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("store: count webhooks: %w", err)
	}
	return int(n), nil
}

// FindWebhookByID returns resource_not_found when absent or in another
// workspace.
func (s *WebhookStore) FindWebhookByID(ctx context.Context, workspaceID, id string) (domain.Webhook, error) {
	return s.find(ctx, workspaceID, id, false)
}

// FindWebhookByIDForUpdate also locks the row until the transaction ends
// (PostgreSQL; SQLite transactions hold the write lock already).
func (s *WebhookStore) FindWebhookByIDForUpdate(ctx context.Context, workspaceID, id string) (domain.Webhook, error) {
	return s.find(ctx, workspaceID, id, true)
}

func (s *WebhookStore) find(ctx context.Context, workspaceID, id string, lock bool) (domain.Webhook, error) {
	var row webhookRow
	q := s.db.conn(ctx)
	if lock && s.db.dialect == DialectPostgres {
		q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	if err := q.Where("workspace_id = ? AND id = ?", workspaceID, id).Take(&row).Error; err != nil {
		return domain.Webhook{}, notFoundOr(err, "webhook", id)
	}
	return s.db.webhookFromRow(row)
}

// FindWebhooks lists webhooks ordered by (created_at, id) after f.After.
func (s *WebhookStore) FindWebhooks(ctx context.Context, f ports.WebhookFilter) ([]domain.Webhook, error) {
	var rows []webhookRow
	q := s.db.conn(ctx).Where("workspace_id = ?", f.WorkspaceID)
	if err := page(q, f.After, f.Limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list webhooks: %w", err)
	}
	return s.db.webhooksFromRows(rows)
}

// UpdateWebhook writes the mutable fields of w; resource_not_found when
// absent from its workspace.
func (s *WebhookStore) UpdateWebhook(ctx context.Context, w domain.Webhook) error {
	row, err := s.db.webhookToRow(w)
	if err != nil {
		return err
	}
	res := s.db.conn(ctx).Model(&webhookRow{}).
		Where("workspace_id = ? AND id = ?", w.WorkspaceID, w.ID).
		Updates(map[string]any{
			"url": row.URL, "events": row.Events, "active": row.Active, "secret": row.Secret,
			"previous_secret": row.PreviousSecret, "previous_secret_expires_at": row.PreviousSecretExpiresAt,
			"headers": row.Headers, "disabled_reason": row.DisabledReason, "disabled_at": row.DisabledAt,
			"failing_since": row.FailingSince, "failed_attempts": row.FailedAttempts,
			"updated_at": row.UpdatedAt,
		})
	if res.Error != nil {
		return fmt.Errorf("store: update webhook: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("webhook", w.ID)
	}
	return nil
}

// DeleteWebhook deletes the webhook; its deliveries go with it (ON DELETE
// CASCADE). resource_not_found when no row was deleted.
func (s *WebhookStore) DeleteWebhook(ctx context.Context, workspaceID, id string) error {
	return s.db.InTx(ctx, func(ctx context.Context) error { return s.deleteWebhook(ctx, workspaceID, id) })
}

// deleteWebhook deletes the row, whose deliveries cascade. On PostgreSQL
// the webhook's pending deliveries are locked first: recording attempts
// locks deliveries, then their webhook (its failure span), and taking the
// webhook first here would let the two wait for each other.
func (s *WebhookStore) deleteWebhook(ctx context.Context, workspaceID, id string) error {
	if s.db.dialect == DialectPostgres {
		var ids []string
		err := s.db.conn(ctx).Raw(`SELECT id FROM webhook_deliveries WHERE workspace_id = ? AND webhook_id = ? AND status = 'pending' FOR UPDATE`,
			workspaceID, id).Find(&ids).Error // a Query statement, under the budget (budget.go)
		if err != nil {
			return fmt.Errorf("store: delete webhook: %w", err)
		}
	}
	res := s.db.conn(ctx).Where("workspace_id = ? AND id = ?", workspaceID, id).Delete(&webhookRow{})
	if res.Error != nil {
		return fmt.Errorf("store: delete webhook: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("webhook", id)
	}
	return nil
}
