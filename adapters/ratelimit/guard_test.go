package ratelimit_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/edgeport"
	"github.com/worktrack/worktrack/adapters/ratelimit"
	"github.com/worktrack/worktrack/adapters/ratelimit/redistest"
)

// counting counts the calls that reach the limiter it wraps.
type counting struct {
	next  edgeport.RateLimiter
	calls atomic.Int64
}

func (c *counting) Take(ctx context.Context, key string, limit int, window time.Duration, now time.Time) (edgeport.RateDecision, error) {
	c.calls.Add(1)
	return c.next.Take(ctx, key, limit, window, now)
}

func (c *counting) Peek(ctx context.Context, key string, limit int, window time.Duration, now time.Time) (edgeport.RateDecision, error) {
	c.calls.Add(1)
	return c.next.Peek(ctx, key, limit, window, now)
}

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// guarded is a Guard over a Redis limiter on a server of the test's own.
func guarded(t *testing.T, cooldown time.Duration) (*redistest.Server, *counting, *ratelimit.Guard, *syncBuffer) {
	t.Helper()
	srv := redistest.Start(t)
	client, err := ratelimit.OpenRedis(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	inner := &counting{next: ratelimit.NewRedis(client, "guard-test:")}
	logs := &syncBuffer{}
	// The timeout is the production default's five times: under -race on
	// two busy cores a healthy Redis call took more than 50ms now and then,
	// and a hung one is refused after 250ms just the same.
	g := ratelimit.NewGuard(inner, ratelimit.GuardOptions{
		Timeout: 250 * time.Millisecond, Failures: 3, Cooldown: cooldown,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	return srv, inner, g, logs
}

// takeAll makes n calls from 8 goroutines and returns how many failed.
func takeAll(g *ratelimit.Guard, n int) (failed int64) {
	var wg sync.WaitGroup
	var errs atomic.Int64
	next := atomic.Int64{}
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := g.Take(context.Background(), "k", 1000000, time.Minute, time.Now()); err != nil {
					errs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return errs.Load()
}

func TestGuardStopsCallingADeadOrHungRedis(t *testing.T) {
	for _, fault := range []string{"dead", "hung"} {
		t.Run(fault, func(t *testing.T) {
			// A cooldown longer than the test: no probe may reach the store.
			srv, inner, g, logs := guarded(t, time.Hour)
			if failed := takeAll(g, 50); failed != 0 {
				t.Fatalf("with Redis up, %d of 50 calls failed", failed)
			}
			before := inner.calls.Load()
			if fault == "dead" {
				srv.Kill()
			} else {
				srv.Freeze()
				defer srv.Thaw()
			}
			if failed := takeAll(g, 500); failed != 500 {
				t.Fatalf("with Redis %s, %d of 500 calls failed; want all (the edge then fails open)", fault, failed)
			}
			// Three failures in a row open the breaker; concurrent calls
			// already under way when it opened may add a few.
			if reached := inner.calls.Load() - before; reached < 3 || reached > 3+8 {
				t.Fatalf("with Redis %s, %d of 500 calls reached it; want 3 to 11: the rest must be answered without it", fault, reached)
			}
			if n := strings.Count(logs.String(), "rate limiter unavailable"); n != 1 {
				t.Fatalf("the outage was logged %d times, want once:\n%s", n, logs)
			}
		})
	}
}

func TestGuardResumesLimitingWhenRedisReturns(t *testing.T) {
	for _, fault := range []string{"dead", "hung"} {
		t.Run(fault, func(t *testing.T) {
			srv, _, g, logs := guarded(t, 100*time.Millisecond)
			if fault == "dead" {
				srv.Kill()
			} else {
				srv.Freeze()
			}
			if failed := takeAll(g, 20); failed != 20 {
				t.Fatalf("with Redis %s, only %d of 20 calls failed", fault, failed)
			}
			if fault == "dead" {
				srv.Restart()
			} else {
				srv.Thaw()
			}
			// Liveness, not speed: the breaker probes every 100ms, so the
			// store is back in use long before this deadline.
			deadline := time.Now().Add(30 * time.Second)
			for {
				d, err := g.Take(context.Background(), "back", 2, time.Minute, time.Now())
				if err == nil {
					if !d.Allowed || d.Remaining != 1 {
						t.Fatalf("first hit after recovery: %+v", d)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("Redis %s came back but the guard still fails: %v", fault, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			// Limits apply again.
			_, _ = g.Take(context.Background(), "back", 2, time.Minute, time.Now())
			if d, err := g.Take(context.Background(), "back", 2, time.Minute, time.Now()); err != nil || d.Allowed {
				t.Fatalf("third hit of a limit of 2 after recovery: %+v, %v; want refused", d, err)
			}
			out := logs.String()
			if strings.Count(out, "rate limiter unavailable") != 1 || strings.Count(out, "rate limiter available again") != 1 {
				t.Fatalf("want one outage line and one recovery line:\n%s", out)
			}
		})
	}
}

// hanging never answers: each call waits for its context to end.
type hanging struct{}

func (hanging) Take(ctx context.Context, _ string, _ int, _ time.Duration, _ time.Time) (edgeport.RateDecision, error) {
	<-ctx.Done()
	return edgeport.RateDecision{}, ctx.Err()
}

func (hanging) Peek(ctx context.Context, _ string, _ int, _ time.Duration, _ time.Time) (edgeport.RateDecision, error) {
	<-ctx.Done()
	return edgeport.RateDecision{}, ctx.Err()
}

// A request whose client went away while the store answered is not the
// store's failure: many of them must not open the breaker, while calls the
// guard's own deadline cuts do.
func TestGuardIgnoresCallersThatLeave(t *testing.T) {
	inner := &counting{next: hanging{}}
	logs := &syncBuffer{}
	g := ratelimit.NewGuard(inner, ratelimit.GuardOptions{
		Timeout: 50 * time.Millisecond, Failures: 3, Cooldown: time.Hour,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	for range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		_, err := g.Take(ctx, "k", 10, time.Minute, time.Now())
		cancel()
		if err == nil {
			t.Fatal("a call to a limiter that never answers succeeded")
		}
	}
	if got := inner.calls.Load(); got != 10 {
		t.Fatalf("%d of 10 calls reached the limiter: leaving callers opened the breaker", got)
	}
	if strings.Contains(logs.String(), "unavailable") {
		t.Fatalf("leaving callers were logged as an outage:\n%s", logs)
	}
	// The guard's own deadline is the store's failure: three open it.
	for range 5 {
		if _, err := g.Take(context.Background(), "k", 10, time.Minute, time.Now()); err == nil {
			t.Fatal("a call to a limiter that never answers succeeded")
		}
	}
	if got := inner.calls.Load(); got != 13 {
		t.Fatalf("%d calls reached the limiter; want 10 + 3 before the breaker opened", got)
	}
}
