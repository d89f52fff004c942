package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/worktrack/worktrack/adapters/edgeport"
)

var _ edgeport.RateLimiter = (*Guard)(nil)

// GuardOptions tune a Guard; zero values take the defaults.
type GuardOptions struct {
	// Timeout bounds each call to the guarded limiter (default 50ms): a
	// Redis that is hung, not dead, costs a request at most this long.
	Timeout time.Duration
	// Failures is how many calls in a row must fail before the guard stops
	// calling (default 3).
	Failures uint32
	// Cooldown is how long the guard answers at once without calling,
	// before it lets one call through to see whether the store is back
	// (default 1s).
	Cooldown time.Duration
	// Logger receives one warning when the guard opens and one line when
	// the store answers again. Default: slog.Default().
	Logger *slog.Logger
}

// Guard keeps a rate limiter's outage from becoming the API's. The edge
// fails open on limiter errors, so an outage must only make those errors
// quick: each call gets Timeout, and after Failures failures in a row a
// circuit breaker (sony/gobreaker) answers every call at once with an error
// for Cooldown, then lets one call probe the store. Requests keep being
// served, unlimited, while the store is down, and limiting resumes by itself
// when it returns.
type Guard struct {
	next    edgeport.RateLimiter
	timeout time.Duration
	cb      *gobreaker.CircuitBreaker[edgeport.RateDecision]
}

// errCallerGone marks a call whose own request ended while the store was
// answering: not the store's failure, so it does not count towards opening.
var errCallerGone = errors.New("ratelimit: the request ended before the limiter answered")

// NewGuard guards next.
func NewGuard(next edgeport.RateLimiter, opts GuardOptions) *Guard {
	if opts.Timeout <= 0 {
		opts.Timeout = 50 * time.Millisecond
	}
	if opts.Failures == 0 {
		opts.Failures = 3
	}
	if opts.Cooldown <= 0 {
		opts.Cooldown = time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	failures := opts.Failures
	cb := gobreaker.NewCircuitBreaker[edgeport.RateDecision](gobreaker.Settings{
		Name:        "ratelimit",
		MaxRequests: 1, // one probe at a time while half-open
		Timeout:     opts.Cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful: func(err error) bool {
			return err == nil || errors.Is(err, errCallerGone)
		},
		OnStateChange: func(_ string, from, to gobreaker.State) {
			switch {
			case from == gobreaker.StateClosed && to == gobreaker.StateOpen:
				log.Warn("rate limiter unavailable: serving requests without rate limits until it answers again",
					slog.Int("consecutive_failures", int(failures)), slog.Duration("retry_every", opts.Cooldown))
			case to == gobreaker.StateClosed:
				log.Info("rate limiter available again: rate limits apply")
			}
		},
	})
	return &Guard{next: next, timeout: opts.Timeout, cb: cb}
}

// Take is the guarded limiter's Take, or an error at once while it is out.
func (g *Guard) Take(ctx context.Context, key string, limit int, window time.Duration, now time.Time) (edgeport.RateDecision, error) {
	return g.call(ctx, func(ctx context.Context) (edgeport.RateDecision, error) {
		return g.next.Take(ctx, key, limit, window, now)
	})
}

// Peek is the guarded limiter's Peek, or an error at once while it is out.
func (g *Guard) Peek(ctx context.Context, key string, limit int, window time.Duration, now time.Time) (edgeport.RateDecision, error) {
	return g.call(ctx, func(ctx context.Context) (edgeport.RateDecision, error) {
		return g.next.Peek(ctx, key, limit, window, now)
	})
}

func (g *Guard) call(ctx context.Context, fn func(context.Context) (edgeport.RateDecision, error)) (edgeport.RateDecision, error) {
	d, err := g.cb.Execute(func() (edgeport.RateDecision, error) {
		cctx, cancel := context.WithTimeout(ctx, g.timeout)
		defer cancel()
		d, err := fn(cctx)
		if err != nil && ctx.Err() != nil {
			return d, fmt.Errorf("%w: %w", errCallerGone, err)
		}
		return d, err
	})
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return d, fmt.Errorf("ratelimit: limiter unavailable, not called: %w", err)
	}
	return d, err
}
