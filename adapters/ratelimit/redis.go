package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worktrack/worktrack/adapters/edgeport"
)

// pingTimeout bounds OpenRedis's reachability check, so a wrong address
// fails start-up quickly instead of hanging it.
const pingTimeout = 3 * time.Second

var _ edgeport.RateLimiter = (*Redis)(nil)

// takeScript counts a hit and starts the window's clock on the first one, in
// one atomic step so concurrent replicas cannot both open a window or lose an
// expiry. A key found without an expiry (which this script never leaves, but
// a manual SET or PERSIST could) is given one, so it cannot block forever.
// It returns {count, milliseconds until the window ends}.
var takeScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
`)

// Redis is a edgeport.RateLimiter whose counters live in Redis, shared by every
// process using the same server and prefix. A window's end is kept by Redis
// as the key's expiry; the now given to Take and Peek only turns the
// remaining time-to-live into an instant.
type Redis struct {
	client redis.UniversalClient
	prefix string
}

// NewRedis returns a limiter storing the counter of key under prefix+key.
// The client is the caller's to close.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix}
}

// Take counts one hit on key; see edgeport.RateLimiter.
func (r *Redis) Take(ctx context.Context, key string, limit int, window time.Duration, now time.Time) (edgeport.RateDecision, error) {
	if window <= 0 {
		return edgeport.RateDecision{}, errBadWindow
	}
	res, err := takeScript.Run(ctx, r.client, []string{r.prefix + key}, windowMillis(window)).Int64Slice()
	if err != nil {
		return edgeport.RateDecision{}, fmt.Errorf("ratelimit: redis take: %w", err)
	}
	if len(res) != 2 {
		return edgeport.RateDecision{}, fmt.Errorf("ratelimit: redis take: unexpected reply %v", res)
	}
	count := int(res[0])
	reset := now.Add(time.Duration(res[1]) * time.Millisecond)
	return decision(count <= limit, limit, count, reset), nil
}

// Peek reports key's window without counting; see edgeport.RateLimiter. The
// count and the time-to-live are read in one MULTI so they describe the same
// window.
func (r *Redis) Peek(ctx context.Context, key string, limit int, window time.Duration, now time.Time) (edgeport.RateDecision, error) {
	if window <= 0 {
		return edgeport.RateDecision{}, errBadWindow
	}
	k := r.prefix + key
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, k)
		pttl = p.PTTL(ctx, k)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return edgeport.RateDecision{}, fmt.Errorf("ratelimit: redis peek: %w", err)
	}

	fresh := decision(limit > 0, limit, 0, now.Add(window))
	raw, err := get.Result()
	if errors.Is(err, redis.Nil) {
		return fresh, nil
	}
	if err != nil {
		return edgeport.RateDecision{}, fmt.Errorf("ratelimit: redis peek: %w", err)
	}
	count, err := strconv.Atoi(raw)
	if err != nil {
		return edgeport.RateDecision{}, fmt.Errorf("ratelimit: redis peek: key %q holds %q, not a counter", k, raw)
	}
	ttl, err := pttl.Result()
	if err != nil {
		return edgeport.RateDecision{}, fmt.Errorf("ratelimit: redis peek: %w", err)
	}
	if ttl <= 0 {
		// No expiry (negative) or expiring this instant: the next Take
		// (re)starts the window, so report one that starts now.
		return decision(count < limit, limit, count, now.Add(window)), nil
	}
	return decision(count < limit, limit, count, now.Add(ttl)), nil
}

// windowMillis is window in whole milliseconds for PEXPIRE, rounded up so a
// sub-millisecond window does not become 0 (which would delete the key).
func windowMillis(window time.Duration) int64 {
	return int64((window + time.Millisecond - 1) / time.Millisecond)
}

// OpenRedis connects to the server at a redis:// or rediss:// URL and checks
// that it answers. The error never repeats the URL, which may hold a
// password.
func OpenRedis(rawURL string) (*redis.Client, error) {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // url.Error repeats the URL, password included
		}
		return nil, fmt.Errorf("ratelimit: invalid redis URL (want redis://[user:password@]host:port/db): %w", err)
	}
	// A rate limit check is on every request's path: fail fast rather than
	// retry or wait, and let the caller's deadline (Guard's) bound each
	// command. A dead or hung server then costs milliseconds.
	opts.MaxRetries = -1
	opts.ContextTimeoutEnabled = true
	if opts.DialTimeout <= 0 || opts.DialTimeout > time.Second {
		opts.DialTimeout = time.Second
	}
	opts.PoolTimeout = 100 * time.Millisecond
	client := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("ratelimit: redis at %s does not answer: %w", opts.Addr, err)
	}
	return client, nil
}

// driverLog sends go-redis's own log lines to a slog.Logger at debug.
type driverLog struct{ log *slog.Logger }

func (d driverLog) Printf(ctx context.Context, format string, v ...any) {
	d.log.DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}

// LogDriverAt makes go-redis log through log, at debug level, instead of
// writing its own lines to stderr: during an outage it writes one per
// failed dial, and Guard already reports the outage once. go-redis's logger
// is process-wide; serve sets it once.
func LogDriverAt(log *slog.Logger) { redis.SetLogger(driverLog{log}) }
