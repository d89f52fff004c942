// Package edgeport holds the interfaces the HTTP edge (adapters/httpedge)
// needs from storage: counters for rate limits and a store of idempotency
// keys. It imports only the standard library, so that the adapters that
// implement them (adapters/ratelimit, adapters/store) never depend on an HTTP
// framework.
package edgeport

import (
	"context"
	"time"
)

// RateDecision is the state of one key's window after (or without) a hit.
type RateDecision struct {
	Allowed   bool
	Limit     int
	Remaining int
	Reset     time.Time // end of the current window
}

// RateLimiter counts hits per key in fixed windows: a key's window opens at
// its first hit and lasts the given length; the next hit after it opens a new
// one. The edge counts API keys and failed authentications per client
// address with it. Implementations (adapters/ratelimit): in-process, and
// Redis (shared between replicas). Errors are infrastructure failures; the
// edge fails open on them.
type RateLimiter interface {
	// Take counts one hit on key. Allowed is true while the window holds at
	// most limit hits, this one included.
	Take(ctx context.Context, key string, limit int, window time.Duration, now time.Time) (RateDecision, error)
	// Peek reports key's window without counting. Allowed is true while the
	// window holds fewer than limit hits (room for one more).
	Peek(ctx context.Context, key string, limit int, window time.Duration, now time.Time) (RateDecision, error)
}

// IdempotencyRecord is a request made with an Idempotency-Key and the
// answer it committed with its change (docs/api.md#idempotent-requests).
type IdempotencyRecord struct {
	APIKeyID  string // requests are idempotent per API key
	Key       string // the Idempotency-Key header
	Method    string
	Path      string
	BodyHash  string // hex SHA-256 of the exact body bytes
	Role      string // the role of the key's user when the request ran
	Status    int    // the stored answer
	Body      []byte
	CreatedAt time.Time
}

// IdempotencyStore reads idempotency keys' committed answers for the edge's
// Idempotent middleware; the answers themselves are written by the core's
// use cases, in the transactions of their changes. Implemented by
// adapters/store.
type IdempotencyStore interface {
	// FindIdempotent returns the answer committed for (apiKeyID, key), or
	// nil when there is none or it was created before staleBefore
	// (expired).
	FindIdempotent(ctx context.Context, apiKeyID, key string, staleBefore time.Time) (*IdempotencyRecord, error)
	// PurgeIdempotent deletes records created before before, and returns how
	// many; the server runs it periodically so the table stays small.
	PurgeIdempotent(ctx context.Context, before time.Time) (int64, error)
}

// IdempotencyWindow is how long a key's first response is replayed.
const IdempotencyWindow = 24 * time.Hour
