package ports

import (
	"context"
	"sync/atomic"
	"time"
)

// KeyedRequest is a request sent with an idempotency key
// (docs/api.md#idempotent-requests). Its answer is committed in the
// transaction of the change it makes, by the use case that makes it
// (AnswerStore): a process that dies before that commit leaves
// neither the change nor the answer, one that dies after it leaves both, so
// a retry with the same key either runs the request once or replays its
// committed answer. The edge that read the key puts it in the request's
// context (WithKeyedRequest) and says how the answer is rendered (Render).
type KeyedRequest struct {
	APIKeyID string // keys are per API key
	Key      string
	Method   string
	Path     string
	BodyHash string // hex SHA-256 of the exact body bytes
	Role     string // the role of the key's user as the request runs
	At       time.Time
	// Render turns what the use case made (a domain value: a task, a
	// []domain.Task, a webhook, …) into the answer to replay. The edge's
	// handler sets it before calling the core; nil means this request's
	// answer is not kept.
	Render func(result any) (Answer, error)

	taken atomic.Bool
}

// Answer is a keyed request's stored answer: the status and body a replay
// sends.
type Answer struct {
	Status int
	Body   []byte
}

// Taken reports that ClaimKey found the key already answered by another
// request that committed first (another process, or a request this process
// no longer tracks): the change was rolled back, and the edge replays the
// other's answer.
func (k *KeyedRequest) Taken() bool { return k.taken.Load() }

// MarkTaken records that the key was found answered; for AnswerStore
// implementations.
func (k *KeyedRequest) MarkTaken() { k.taken.Store(true) }

type keyedKey struct{}

// WithKeyedRequest carries k in ctx for the use cases that commit its answer.
func WithKeyedRequest(ctx context.Context, k *KeyedRequest) context.Context {
	return context.WithValue(ctx, keyedKey{}, k)
}

// KeyedRequestFrom is the keyed request ctx carries, or nil.
func KeyedRequestFrom(ctx context.Context) *KeyedRequest {
	k, _ := ctx.Value(keyedKey{}).(*KeyedRequest)
	return k
}

// AnswerStore keeps keyed requests' answers. Implemented by adapters/store.
// A use case claims the key first in its transaction, then makes its
// change, then records the answer: both writes commit with the change or
// not at all.
type AnswerStore interface {
	// ClaimKey holds k's key for ctx's transaction. When the key holds an
	// answer that has not expired (committed by a request that ran
	// concurrently, on another process), it calls k.MarkTaken and returns
	// idempotency_key_in_use, which rolls the transaction back; while
	// another transaction holds the key uncommitted, it waits for that
	// transaction's end. Call it inside Transactor.InTx, before the change.
	ClaimKey(ctx context.Context, k *KeyedRequest) error
	// CommitAnswer records the answer a of the key ctx's transaction
	// claimed. Call it inside the same Transactor.InTx, after the change.
	CommitAnswer(ctx context.Context, k *KeyedRequest, a Answer) error
}
