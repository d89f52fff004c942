package ratelimit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/edgeport"
)

// subject is one implementation under the conformance suite, with the clock its
// windows run on.
type subject struct {
	limiter edgeport.RateLimiter
	clock   testClock
	// tolerance is how far a reported Reset may be from the ideal window end:
	// 0 on a fake clock, a little on a real server whose clock keeps running.
	tolerance time.Duration
	// shortWindow is the window of the expiry tests; the clock is advanced
	// past it, so on a real clock it must be short.
	shortWindow time.Duration
}

// testClock is the time the suite passes as now. Advance moves it on: a fake
// clock jumps, a real one sleeps.
type testClock interface {
	Now() time.Time
	Advance(d time.Duration)
	// Virtual reports whether the clock is fake, so window boundaries can be
	// probed to the millisecond.
	Virtual() bool
}

// fakeClock is driven by the test only. onAdvance, when set, moves another
// clock (a fake Redis server's) in step.
type fakeClock struct {
	mu        sync.Mutex
	now       time.Time
	onAdvance func(time.Duration)
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	if c.onAdvance != nil {
		c.onAdvance(d)
	}
}

func (c *fakeClock) Virtual() bool { return true }

// realClock is the wall clock; Advance sleeps.
type realClock struct{}

func (realClock) Now() time.Time          { return time.Now() }
func (realClock) Advance(d time.Duration) { time.Sleep(d) }
func (realClock) Virtual() bool           { return false }

// runConformance runs the edgeport.RateLimiter conformance suite against the subjects that
// newSubject makes, a fresh one (fresh limiter or fresh key prefix) for every
// test so the tests can run in parallel.
func runConformance(t *testing.T, newSubject func(t *testing.T) subject) {
	t.Helper()
	ctx := context.Background()
	const long = time.Minute

	t.Run("limit reached then refused", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t)
		for i := 1; i <= 3; i++ {
			d := take(t, s, "k", 3, long)
			if !d.Allowed || d.Limit != 3 || d.Remaining != 3-i {
				t.Fatalf("hit %d: got %+v, want allowed, limit 3, remaining %d", i, d, 3-i)
			}
		}
		for i := 4; i <= 6; i++ {
			d := take(t, s, "k", 3, long)
			if d.Allowed || d.Limit != 3 || d.Remaining != 0 {
				t.Fatalf("hit %d: got %+v, want refused, limit 3, remaining 0", i, d)
			}
		}
	})

	t.Run("zero limit refuses every hit", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t)
		if d := peek(t, s, "k", 0, long); d.Allowed || d.Remaining != 0 {
			t.Fatalf("peek: got %+v, want refused, remaining 0", d)
		}
		if d := take(t, s, "k", 0, long); d.Allowed || d.Remaining != 0 {
			t.Fatalf("take: got %+v, want refused, remaining 0", d)
		}
	})

	t.Run("reset is the end of the window opened by the first hit", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t)
		start := s.clock.Now()
		d := take(t, s, "k", 5, long)
		wantReset := start.Add(long)
		assertReset(t, s, d, wantReset)
		s.clock.Advance(100 * time.Millisecond)
		d = take(t, s, "k", 5, long)
		assertReset(t, s, d, wantReset)
		d = peek(t, s, "k", 5, long)
		assertReset(t, s, d, wantReset)
		if d.Remaining != 3 {
			t.Fatalf("peek after two hits: remaining %d, want 3", d.Remaining)
		}
	})

	t.Run("a new window opens after the old one ends", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t)
		w := s.shortWindow
		start := s.clock.Now()
		take(t, s, "k", 2, w)
		take(t, s, "k", 2, w)
		if d := take(t, s, "k", 2, w); d.Allowed {
			t.Fatalf("third hit in a window of 2: got %+v, want refused", d)
		}
		if s.clock.Virtual() {
			// Probe the boundary: one millisecond before the end the window
			// still holds; at the end a new one opens.
			s.clock.Advance(w - time.Millisecond)
			if d := take(t, s, "k", 2, w); d.Allowed {
				t.Fatalf("1ms before the window ends: got %+v, want refused", d)
			}
			s.clock.Advance(time.Millisecond)
		} else {
			s.clock.Advance(w + w/2)
		}
		if d := peek(t, s, "k", 2, w); !d.Allowed || d.Remaining != 2 {
			t.Fatalf("peek after the window ended: got %+v, want allowed, remaining 2", d)
		}
		now := s.clock.Now()
		d := take(t, s, "k", 2, w)
		if !d.Allowed || d.Remaining != 1 {
			t.Fatalf("first hit of the new window: got %+v, want allowed, remaining 1", d)
		}
		assertReset(t, s, d, now.Add(w))
		if !d.Reset.After(start.Add(w)) {
			t.Fatalf("new window's reset %v is not after the old window's end %v", d.Reset, start.Add(w))
		}
	})

	t.Run("peek does not count", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t)
		now := s.clock.Now()
		for range 5 {
			d := peek(t, s, "k", 2, long)
			if !d.Allowed || d.Limit != 2 || d.Remaining != 2 {
				t.Fatalf("peek on an unused key: got %+v, want allowed, limit 2, remaining 2", d)
			}
			assertReset(t, s, d, now.Add(long))
		}
		if d := take(t, s, "k", 2, long); !d.Allowed || d.Remaining != 1 {
			t.Fatalf("first hit after peeks: got %+v, want allowed, remaining 1", d)
		}
		if d := peek(t, s, "k", 2, long); !d.Allowed || d.Remaining != 1 {
			t.Fatalf("peek with room for one: got %+v, want allowed, remaining 1", d)
		}
		// The hit that reaches the limit is allowed, and leaves no room.
		if d := take(t, s, "k", 2, long); !d.Allowed || d.Remaining != 0 {
			t.Fatalf("hit reaching the limit: got %+v, want allowed, remaining 0", d)
		}
		if d := peek(t, s, "k", 2, long); d.Allowed || d.Remaining != 0 {
			t.Fatalf("peek at the limit: got %+v, want refused, remaining 0", d)
		}
		if d := take(t, s, "k", 2, long); d.Allowed {
			t.Fatalf("hit past the limit: got %+v, want refused", d)
		}
	})

	t.Run("keys are independent", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t)
		for range 3 {
			take(t, s, "a", 2, long)
		}
		if d := peek(t, s, "a", 2, long); d.Allowed {
			t.Fatalf("key a: got %+v, want exhausted", d)
		}
		if d := take(t, s, "b", 2, long); !d.Allowed || d.Remaining != 1 {
			t.Fatalf("key b: got %+v, want allowed, remaining 1", d)
		}
	})

	t.Run("concurrent takes allow exactly the limit", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t)
		const goroutines, limit = 200, 100
		now := s.clock.Now()
		results := make(chan edgeport.RateDecision, goroutines)
		errs := make(chan error, goroutines)
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				d, err := s.limiter.Take(ctx, "k", limit, long, now)
				if err != nil {
					errs <- err
					return
				}
				results <- d
			})
		}
		wg.Wait()
		close(results)
		close(errs)
		for err := range errs {
			t.Fatalf("take: %v", err)
		}
		allowed := 0
		seen := make(map[int]bool)
		for d := range results {
			if !d.Allowed {
				continue
			}
			allowed++
			if seen[d.Remaining] {
				t.Fatalf("remaining %d reported to two allowed hits", d.Remaining)
			}
			seen[d.Remaining] = true
		}
		if allowed != limit {
			t.Fatalf("allowed %d of %d concurrent hits, want exactly %d", allowed, goroutines, limit)
		}
		if d := peek(t, s, "k", limit, long); d.Allowed || d.Remaining != 0 {
			t.Fatalf("peek afterwards: got %+v, want refused, remaining 0", d)
		}
	})

	t.Run("non-positive window is an error", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t)
		if _, err := s.limiter.Take(ctx, "k", 1, 0, s.clock.Now()); err == nil {
			t.Fatal("Take with a zero window: want an error")
		}
		if _, err := s.limiter.Peek(ctx, "k", 1, -time.Second, s.clock.Now()); err == nil {
			t.Fatal("Peek with a negative window: want an error")
		}
	})
}

func take(t *testing.T, s subject, key string, limit int, window time.Duration) edgeport.RateDecision {
	t.Helper()
	d, err := s.limiter.Take(context.Background(), key, limit, window, s.clock.Now())
	if err != nil {
		t.Fatalf("Take(%q): %v", key, err)
	}
	return d
}

func peek(t *testing.T, s subject, key string, limit int, window time.Duration) edgeport.RateDecision {
	t.Helper()
	d, err := s.limiter.Peek(context.Background(), key, limit, window, s.clock.Now())
	if err != nil {
		t.Fatalf("Peek(%q): %v", key, err)
	}
	return d
}

func assertReset(t *testing.T, s subject, d edgeport.RateDecision, want time.Time) {
	t.Helper()
	if diff := d.Reset.Sub(want).Abs(); diff > s.tolerance {
		t.Fatalf("reset %v, want %v (off by %v, tolerance %v)", d.Reset, want, diff, s.tolerance)
	}
}
