package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/edgeport"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// idempotencyRow is a keyed request's committed answer. Rows are written
// only with the change they answer (CommitAnswer), so done is always true
// for them; a row with done false was left by an older version, which
// claimed the key before the request ran, and counts as absent.
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

// IdempotencyStore keeps the answers of keyed REST POSTs: the edge reads
// them (edgeport.IdempotencyStore), the core's use cases commit them with
// their changes (ports.AnswerStore).
type IdempotencyStore struct{ db *DB }

var (
	_ edgeport.IdempotencyStore = (*IdempotencyStore)(nil)
	_ ports.AnswerStore         = (*IdempotencyStore)(nil)
)

// Idempotency is the idempotency-key repository of db.
func (db *DB) Idempotency() *IdempotencyStore { return &IdempotencyStore{db: db} }

// FindIdempotent returns the committed answer of (apiKeyID, key), or nil
// when there is none, or only one created before staleBefore.
func (s *IdempotencyStore) FindIdempotent(ctx context.Context, apiKeyID, key string, staleBefore time.Time) (*edgeport.IdempotencyRecord, error) {
	var held idempotencyRow
	err := s.db.conn(ctx).Where("api_key_id = ? AND idempotency_key = ? AND done = ? AND created_at >= ?",
		apiKeyID, key, true, Time(staleBefore)).Take(&held).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("store: find idempotency key: %w", err)
	}
	body, err := s.db.secrets.Open(held.ResponseBody, replayContext(held.APIKeyID, held.IdempotencyKey))
	if err != nil {
		return nil, fmt.Errorf("store: idempotency key %q: replay: %w", key, err)
	}
	out := &edgeport.IdempotencyRecord{
		APIKeyID: held.APIKeyID, Key: held.IdempotencyKey, Method: held.Method, Path: held.Path,
		BodyHash: held.BodyHash, Role: held.Role, Body: body, CreatedAt: timeOf(held.CreatedAt),
	}
	if held.ResponseStatus != nil {
		out.Status = *held.ResponseStatus
	}
	return out, nil
}

// claimKeySQL holds a key for a transaction: a row without an answer yet,
// which takes the place of an expired answer or of a claim an older
// version left running, and of nothing else: a live answer of the same key
// means another request committed first. On PostgreSQL a claim of the same
// key that another transaction holds uncommitted makes it wait for that
// transaction's end (then it inserts, or finds the answer); on SQLite the
// write lock serialises them.
const claimKeySQL = `INSERT INTO idempotency_keys
    (api_key_id, idempotency_key, method, path, body_hash, role, done, response_status, response_body, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?)
ON CONFLICT (api_key_id, idempotency_key) DO UPDATE SET
    method = excluded.method, path = excluded.path, body_hash = excluded.body_hash, role = excluded.role,
    done = excluded.done, response_status = NULL, response_body = NULL, created_at = excluded.created_at
WHERE idempotency_keys.created_at < ? OR idempotency_keys.done = ?`

// inTx refuses a keyed write outside a transaction: the key's record must
// commit with the change or not at all.
func (s *IdempotencyStore) inTx(ctx context.Context) error {
	if _, ok := ctx.Value(txKey{s.db}).(*gorm.DB); !ok {
		return errors.New("store: a keyed request's key is written only inside its change's transaction")
	}
	return nil
}

// ClaimKey holds k's key for ctx's transaction (ports.AnswerStore).
func (s *IdempotencyStore) ClaimKey(ctx context.Context, k *ports.KeyedRequest) error {
	if err := s.inTx(ctx); err != nil {
		return err
	}
	res := s.db.conn(ctx).Exec(claimKeySQL, k.APIKeyID, k.Key, k.Method, k.Path, k.BodyHash, k.Role, false, Time(k.At),
		Time(k.At.Add(-edgeport.IdempotencyWindow)), false)
	if res.Error != nil {
		return fmt.Errorf("store: claim idempotency key: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		k.MarkTaken()
		return domain.Errorf(domain.CodeIdempotencyKeyInUse,
			"A request with this Idempotency-Key committed while this one ran; retry to get its answer.")
	}
	return nil
}

// CommitAnswer records the answer of the key ctx's transaction claimed
// (ports.AnswerStore). The body is sealed under the keyring: the answers
// to creating or rotating a webhook show its signing secret.
func (s *IdempotencyStore) CommitAnswer(ctx context.Context, k *ports.KeyedRequest, a ports.Answer) error {
	if err := s.inTx(ctx); err != nil {
		return err
	}
	res := s.db.conn(ctx).Model(&idempotencyRow{}).
		Where("api_key_id = ? AND idempotency_key = ? AND done = ?", k.APIKeyID, k.Key, false).
		Updates(map[string]any{"done": true, "response_status": a.Status, "response_body": s.db.secrets.Seal(a.Body, replayContext(k.APIKeyID, k.Key))})
	if res.Error != nil {
		return fmt.Errorf("store: commit idempotent answer: %w", res.Error)
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("store: commit idempotent answer: the transaction did not claim key %q", k.Key)
	}
	return nil
}

// replayContext binds a sealed replay to its record: the responses to
// creating or rotating a webhook show its signing secret, so every replay
// is sealed when the keyring seals.
func replayContext(apiKeyID, key string) string { return "idempotency:" + apiKeyID + ":" + key }

// PurgeIdempotent deletes records created before before.
func (s *IdempotencyStore) PurgeIdempotent(ctx context.Context, before time.Time) (int64, error) {
	res := s.db.conn(ctx).Where("created_at < ?", Time(before)).Delete(&idempotencyRow{})
	if res.Error != nil {
		return 0, fmt.Errorf("store: purge idempotency keys: %w", res.Error)
	}
	return res.RowsAffected, nil
}
