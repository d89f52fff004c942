package httpedge

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
