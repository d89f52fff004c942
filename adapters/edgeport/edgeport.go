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

// IdempotencyRecord is the first request made with an Idempotency-Key, and
// its response once it succeeded (docs/api.md#idempotent-requests).
type IdempotencyRecord struct {
	APIKeyID  string // requests are idempotent per API key
	Key       string // the Idempotency-Key header
	Method    string
	Path      string
	BodyHash  string // hex SHA-256 of the exact body bytes
	Role      string // the role of the key's user when the first request ran
	Done      bool   // false while the first request is running
	Status    int    // the stored response, when Done
	Body      []byte
	CreatedAt time.Time
}

// IdempotencyStore keeps idempotency keys for the edge's Idempotent
// middleware. Implemented by adapters/store.
type IdempotencyStore interface {
	// BeginIdempotent claims (r.APIKeyID, r.Key) for r as a running request
	// and returns nil; when the key is already held it returns the holder
	// instead. Records created before staleBefore (expired), or running and
	// created before runningStaleBefore (left by a crashed process), are
	// discarded first.
	BeginIdempotent(ctx context.Context, r IdempotencyRecord, staleBefore, runningStaleBefore time.Time) (*IdempotencyRecord, error)
	// CompleteIdempotent stores the 2xx response of a running record.
	CompleteIdempotent(ctx context.Context, apiKeyID, key string, status int, body []byte) error
	// ReleaseIdempotent forgets a running record whose request did not
	// succeed, so the key can be used again.
	ReleaseIdempotent(ctx context.Context, apiKeyID, key string) error
	// PurgeIdempotent deletes records created before before, and returns how
	// many; the server runs it periodically so the table stays small.
	PurgeIdempotent(ctx context.Context, before time.Time) (int64, error)
}

// IdempotencyWindow is how long a key's first response is replayed.
const IdempotencyWindow = 24 * time.Hour
