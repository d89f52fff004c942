package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/worktrack/worktrack/adapters/secretbox"
)

// secretsBatch is how many rows one statement of CheckSecrets or
// ReencryptSecrets reads.
const secretsBatch = 500

// SecretsReport counts the stored secrets CheckSecrets read or
// ReencryptSecrets rewrote.
type SecretsReport struct {
	Webhooks  int `json:"webhooks"`  // webhooks read
	Replays   int `json:"replays"`   // idempotency replays read
	Rewritten int `json:"rewritten"` // values rewritten under the first key
}

// CheckSecrets proves the keyring opens every stored secret: it opens each
// webhook's secrets, and checks that every idempotency replay was sealed
// under a key of the ring (or not sealed). serve runs it at start, so that a
// wrong WORKTRACK_SECRETS_KEY stops the server rather than its deliveries.
func (db *DB) CheckSecrets(ctx context.Context) (SecretsReport, error) {
	var rep SecretsReport
	err := db.eachWebhookSecret(ctx, func(r secretRow) error {
		rep.Webhooks++
		if _, _, err := db.openSecrets(r.ID, r.Secret, r.Previous.String); err != nil {
			return err
		}
		_, err := db.openHeaders(r.ID, r.Headers)
		return err
	})
	if err != nil {
		return rep, err
	}
	// Replays are checked by the key that sealed them: reading every body
	// at each start would cost what 24 hours of POSTs weigh.
	var heads []struct {
		Head  []byte `gorm:"column:head"`
		Count int    `gorm:"column:n"`
	}
	err = db.conn(ctx).Raw(`SELECT substr(response_body, 1, ?) AS head, COUNT(*) AS n FROM idempotency_keys
		WHERE done = ? GROUP BY 1`, secretbox.HeadLength, true).Scan(&heads).Error
	if err != nil {
		return rep, fmt.Errorf("store: check idempotency replays: %w", err)
	}
	for _, h := range heads {
		rep.Replays += h.Count
		if !db.secrets.Holds(h.Head) {
			return rep, fmt.Errorf("store: %d idempotency replays: %w", h.Count, secretbox.ErrNoKey)
		}
	}
	return rep, nil
}

// ReencryptSecrets rewrites every stored secret that is not sealed under
// the keyring's first key (plaintext ones from before included): webhook
// secrets and idempotency replays. It is idempotent, and safe while servers
// serve: each row is rewritten only if it still holds what was read.
func (db *DB) ReencryptSecrets(ctx context.Context) (SecretsReport, error) {
	var rep SecretsReport
	err := db.eachWebhookSecret(ctx, func(r secretRow) error {
		rep.Webhooks++
		n, err := db.reencryptWebhook(ctx, r)
		rep.Rewritten += n
		return err
	})
	if err != nil {
		return rep, err
	}
	err = db.eachReplay(ctx, func(r idempotencyRow) error {
		rep.Replays++
		if db.secrets.Current(r.ResponseBody) {
			return nil
		}
		ctxID := replayContext(r.APIKeyID, r.IdempotencyKey)
		plain, err := db.secrets.Open(r.ResponseBody, ctxID)
		if err != nil {
			return fmt.Errorf("store: idempotency replay of key %s: %w", r.APIKeyID, err)
		}
		res := db.conn(ctx).Model(&idempotencyRow{}).
			Where("api_key_id = ? AND idempotency_key = ? AND response_body = ?", r.APIKeyID, r.IdempotencyKey, r.ResponseBody).
			Update("response_body", db.secrets.Seal(plain, ctxID))
		if res.Error != nil {
			return fmt.Errorf("store: reencrypt idempotency replay: %w", res.Error)
		}
		rep.Rewritten += int(res.RowsAffected) // 0: purged or replaced meanwhile
		return nil
	})
	return rep, err
}

type secretRow struct {
	ID       string         `gorm:"column:id"`
	Secret   string         `gorm:"column:secret"`
	Previous sql.NullString `gorm:"column:previous_secret"`
	Headers  string         `gorm:"column:headers"`
}

// headersCurrent reports whether stored headers are as sealHeaders would
// store them now.
func (db *DB) headersCurrent(stored string) bool {
	return stored == noHeaders || db.secrets.Current([]byte(stored))
}

// errChanged: a row changed between its read and its rewrite.
var errChanged = errors.New("changed meanwhile")

// reencryptWebhook rewrites one webhook's secrets under the first key,
// reading the row again when a rotation changed it meanwhile.
func (db *DB) reencryptWebhook(ctx context.Context, r secretRow) (int, error) {
	for attempt := 0; attempt < 3; attempt++ {
		if db.secrets.Current([]byte(r.Secret)) && (!r.Previous.Valid || db.secrets.Current([]byte(r.Previous.String))) &&
			db.headersCurrent(r.Headers) {
			return 0, nil
		}
		secret, previous, err := db.openSecrets(r.ID, r.Secret, r.Previous.String)
		if err != nil {
			return 0, err
		}
		headers, err := db.openHeaders(r.ID, r.Headers)
		if err != nil {
			return 0, err
		}
		sealedHeaders, err := db.sealHeaders(r.ID, headers)
		if err != nil {
			return 0, err
		}
		q := db.conn(ctx).Model(&webhookRow{}).Where("id = ? AND secret = ? AND headers = ?", r.ID, r.Secret, r.Headers)
		if r.Previous.Valid {
			q = q.Where("previous_secret = ?", r.Previous.String)
		} else {
			q = q.Where("previous_secret IS NULL")
		}
		res := q.Updates(map[string]any{
			"secret":          db.secrets.SealString(secret, r.ID),
			"previous_secret": sql.NullString{String: db.secrets.SealString(previous, r.ID), Valid: r.Previous.Valid},
			"headers":         sealedHeaders,
		})
		if res.Error != nil {
			return 0, fmt.Errorf("store: reencrypt webhook %s: %w", r.ID, res.Error)
		}
		if res.RowsAffected == 1 {
			return 1, nil
		}
		err = db.conn(ctx).Model(&webhookRow{}).Select("id, secret, previous_secret, headers").Where("id = ?", r.ID).Take(&r).Error
		if err != nil {
			return 0, nil //nolint:nilerr // deleted meanwhile: nothing left to rewrite
		}
	}
	return 0, fmt.Errorf("store: reencrypt webhook %s: %w three times", r.ID, errChanged)
}

// eachWebhookSecret calls fn for every webhook's stored secrets, every
// workspace's, in id order, a batch per statement.
func (db *DB) eachWebhookSecret(ctx context.Context, fn func(secretRow) error) error {
	after := ""
	for {
		var rows []secretRow
		err := db.conn(ctx).Model(&webhookRow{}).Select("id, secret, previous_secret, headers").
			Where("id > ?", after).Order("id").Limit(secretsBatch).Find(&rows).Error
		if err != nil {
			return fmt.Errorf("store: read webhook secrets: %w", err)
		}
		for _, r := range rows {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(rows) < secretsBatch {
			return nil
		}
		after = rows[len(rows)-1].ID
	}
}

// eachReplay calls fn for every completed idempotency record, a batch per
// statement, in key order.
func (db *DB) eachReplay(ctx context.Context, fn func(idempotencyRow) error) error {
	var afterKey, afterIdem string
	for {
		var rows []idempotencyRow
		err := db.conn(ctx).Where("done = ? AND (api_key_id > ? OR (api_key_id = ? AND idempotency_key > ?))", true, afterKey, afterKey, afterIdem).
			Order("api_key_id, idempotency_key").Limit(secretsBatch).Find(&rows).Error
		if err != nil {
			return fmt.Errorf("store: read idempotency replays: %w", err)
		}
		for _, r := range rows {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(rows) < secretsBatch {
			return nil
		}
		afterKey, afterIdem = rows[len(rows)-1].APIKeyID, rows[len(rows)-1].IdempotencyKey
	}
}
