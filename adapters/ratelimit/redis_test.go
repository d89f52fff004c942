package ratelimit_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/worktrack/worktrack/adapters/ratelimit"
)

// realRedis opens the server named by TEST_REDIS_URL, or skips: the Redis
// limiter is only proven against a real server (CI always sets it).
func realRedis(tb testing.TB) *redis.Client {
	tb.Helper()
	url := os.Getenv("TEST_REDIS_URL")
	if url == "" {
		tb.Skip("TEST_REDIS_URL is not set. To run these tests: set TEST_REDIS_URL=redis://127.0.0.1:6379/0 (a Redis server's). Skipping.")
	}
	client, err := ratelimit.OpenRedis(url)
	if err != nil {
		tb.Fatalf("TEST_REDIS_URL: %v", err)
	}
	tb.Cleanup(func() { _ = client.Close() })
	return client
}

// uniquePrefix returns a key prefix no other test (or package, or earlier
// run) uses, and removes its keys when the test ends.
func uniquePrefix(tb testing.TB, client redis.UniversalClient) string {
	tb.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "worktrack-test:ratelimit:" + hex.EncodeToString(b[:]) + ":"
	tb.Cleanup(func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
	})
	return prefix
}

func TestRedisConformance(t *testing.T) {
	t.Parallel()
	// The production client waits at most 100 ms for a pooled connection
	// (OpenRedis: fail fast on the request path). The suite's 200
	// concurrent takes on a busy two-core machine can wait longer than
	// that for one of the 20 connections, which is the pool's policy, not
	// the limiter's atomicity under test: here every take has a connection.
	opts := *realRedis(t).Options()
	opts.PoolSize = 256
	client := redis.NewClient(&opts)
	t.Cleanup(func() { _ = client.Close() })
	runConformance(t, func(t *testing.T) subject {
		return subject{
			limiter: ratelimit.NewRedis(client, uniquePrefix(t, client)),
			clock:   realClock{},
			// The server's clock runs between taking now and reading the
			// time-to-live; under -race on a busy machine that can take a while.
			tolerance:   250 * time.Millisecond,
			shortWindow: 300 * time.Millisecond,
		}
	})
}

// TestRedisConformanceMiniredis runs the same suite on an in-process fake
// server whose clock the test drives, so the Redis code path is exercised
// exactly (window boundaries to the millisecond) even without a server. It
// does not replace TestRedisConformance.
func TestRedisConformanceMiniredis(t *testing.T) {
	t.Parallel()
	runConformance(t, func(t *testing.T) subject {
		mr := miniredis.RunT(t)
		client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = client.Close() })
		clock := newFakeClock()
		clock.onAdvance = mr.FastForward
		return subject{
			limiter:     ratelimit.NewRedis(client, "rl:"),
			clock:       clock,
			tolerance:   0, // TTLs are whole milliseconds and so are all the steps
			shortWindow: 300 * time.Millisecond,
		}
	})
}

func TestRedisKeysArePrefixedAndExpire(t *testing.T) {
	t.Parallel()
	client := realRedis(t)
	ctx := context.Background()
	prefix := uniquePrefix(t, client)
	r := ratelimit.NewRedis(client, prefix)
	if _, err := r.Take(ctx, "key_abc", 10, time.Minute, time.Now()); err != nil {
		t.Fatal(err)
	}
	ttl, err := client.PTTL(ctx, prefix+"key_abc").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 || ttl > time.Minute {
		t.Fatalf("key %q has time-to-live %v, want in (0, 1m]", prefix+"key_abc", ttl)
	}
	if n, _ := client.Exists(ctx, "key_abc").Result(); n != 0 {
		t.Fatal("counter stored without its prefix")
	}
}

func TestRedisRepairsKeyWithoutExpiry(t *testing.T) {
	t.Parallel()
	client := realRedis(t)
	ctx := context.Background()
	prefix := uniquePrefix(t, client)
	// A counter left without expiry (by hand, or an old bug) must not block
	// its key forever.
	if err := client.Set(ctx, prefix+"k", 5, 0).Err(); err != nil {
		t.Fatal(err)
	}
	r := ratelimit.NewRedis(client, prefix)
	d, err := r.Take(ctx, "k", 10, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if d.Remaining != 4 {
		t.Fatalf("remaining %d, want 4", d.Remaining)
	}
	if ttl := client.PTTL(ctx, prefix+"k").Val(); ttl <= 0 {
		t.Fatalf("time-to-live %v after Take, want an expiry set", ttl)
	}
}

func TestRedisReportsServerErrors(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	client := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	r := ratelimit.NewRedis(client, "rl:")
	ctx := context.Background()
	mr.Close()
	if _, err := r.Take(ctx, "k", 1, time.Minute, time.Now()); err == nil {
		t.Fatal("Take with the server gone: want an error")
	}
	if _, err := r.Peek(ctx, "k", 1, time.Minute, time.Now()); err == nil {
		t.Fatal("Peek with the server gone: want an error")
	}
}

func TestOpenRedis(t *testing.T) {
	t.Parallel()

	t.Run("bad URL, password not repeated", func(t *testing.T) {
		t.Parallel()
		_, err := ratelimit.OpenRedis("redis://user:s3cret@127.0.0.1:notaport/0")
		if err == nil {
			t.Fatal("want an error")
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("error repeats the password: %v", err)
		}
	})

	t.Run("wrong scheme", func(t *testing.T) {
		t.Parallel()
		if _, err := ratelimit.OpenRedis("http://127.0.0.1:6379"); err == nil {
			t.Fatal("want an error")
		}
	})

	t.Run("nobody listening", func(t *testing.T) {
		t.Parallel()
		// Take a free port, then close it so connections are refused.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		_, err = ratelimit.OpenRedis("redis://" + addr + "/0")
		if err == nil || !strings.Contains(err.Error(), addr) {
			t.Fatalf("got %v, want an error naming %s", err, addr)
		}
	})

	t.Run("server answers", func(t *testing.T) {
		t.Parallel()
		mr := miniredis.RunT(t)
		client, err := ratelimit.OpenRedis(fmt.Sprintf("redis://%s/0", mr.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		_ = client.Close()
	})
}

func BenchmarkRedisTake(b *testing.B) {
	client := realRedis(b)
	r := ratelimit.NewRedis(client, uniquePrefix(b, client))
	ctx := context.Background()
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := r.Take(ctx, fmt.Sprintf("key-%d", i%1024), 1_000_000, time.Minute, now); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}
