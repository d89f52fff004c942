package ratelimit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/ratelimit"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, func(*testing.T) subject {
		return subject{
			limiter:     ratelimit.NewMemory(),
			clock:       newFakeClock(),
			shortWindow: 300 * time.Millisecond,
		}
	})
}

func TestMemorySweepsEndedWindows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := ratelimit.NewMemory()
	clock := newFakeClock()
	const keys = 10_000
	for i := range keys {
		if _, err := m.Take(ctx, fmt.Sprintf("key-%d", i), 10, time.Second, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if n := ratelimit.KeysHeld(m); n != keys {
		t.Fatalf("holding %d keys while all their windows are open, want %d", n, keys)
	}

	// Once every window has ended, calls on one key must sweep the others
	// away within a bounded number of calls (at most about one per key held).
	clock.Advance(2 * time.Second)
	for range 2 * keys {
		if _, err := m.Take(ctx, "busy", 1_000_000, time.Minute, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if n := ratelimit.KeysHeld(m); n > 1 {
		t.Fatalf("holding %d keys after every other window ended, want only the busy one", n)
	}
}

func BenchmarkMemoryTake(b *testing.B) {
	ctx := context.Background()
	m := ratelimit.NewMemory()
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := m.Take(ctx, keys[i%len(keys)], 600, time.Minute, now); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}
