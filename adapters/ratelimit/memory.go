// Package ratelimit implements edgeport.RateLimiter twice: Memory counts in the
// process (the single-node default), Redis shares the counters between
// replicas. Both count hits in fixed windows that open at a key's first hit,
// and both take the current time as an argument so tests can drive a clock.
package ratelimit

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/worktrack/worktrack/adapters/edgeport"
)

// minSweepInterval is the fewest calls between two sweeps of expired
// windows. A sweep walks every key, so sweeps are spaced at least as many
// calls apart as there are keys: the cost per call stays constant and the map
// holds at most about twice the keys whose windows are still open.
const minSweepInterval = 1024

// errBadWindow reports a non-positive window: a caller bug, not a limit.
var errBadWindow = errors.New("ratelimit: window must be positive")

var _ edgeport.RateLimiter = (*Memory)(nil)

// Memory is an in-process edgeport.RateLimiter. It is safe for concurrent use;
// counters are lost when the process exits and are not shared between
// processes (use Redis for that).
type Memory struct {
	mu        sync.Mutex
	windows   map[string]*memWindow
	calls     int // calls since the last sweep
	nextSweep int // calls at which the next sweep happens
}

type memWindow struct {
	count int
	end   time.Time
}

// NewMemory returns an empty in-process limiter. It needs no closing: expired
// windows are swept by the calls themselves.
func NewMemory() *Memory {
	return &Memory{
		windows:   make(map[string]*memWindow),
		nextSweep: minSweepInterval,
	}
}

// Take counts one hit on key at now. A window opens at a key's first hit and
// lasts window; a hit at or after its end opens a new one.
func (m *Memory) Take(_ context.Context, key string, limit int, window time.Duration, now time.Time) (edgeport.RateDecision, error) {
	return m.at(key, limit, window, now, true)
}

// Peek reports key's window at now without counting a hit. A key without an
// open window reports a fresh one ending at now+window.
func (m *Memory) Peek(_ context.Context, key string, limit int, window time.Duration, now time.Time) (edgeport.RateDecision, error) {
	return m.at(key, limit, window, now, false)
}

// at is Take when hit, else Peek: both find key's open window, or a fresh
// one (kept only when a hit is counted in it). Take allows while the window
// holds at most limit hits, this one included; Peek while it has room for
// one more, which is the same test on the count after a hit.
func (m *Memory) at(key string, limit int, window time.Duration, now time.Time, hit bool) (edgeport.RateDecision, error) {
	if window <= 0 {
		return edgeport.RateDecision{}, errBadWindow
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maybeSweep(now)

	w, ok := m.windows[key]
	if !ok || !now.Before(w.end) {
		w = &memWindow{end: now.Add(window)}
		if hit {
			m.windows[key] = w
		}
	}
	after := w.count + 1
	if hit {
		w.count = after
	}
	return decision(after <= limit, limit, w.count, w.end), nil
}

// maybeSweep drops the windows that ended by now, every so many calls. The
// caller holds m.mu. Dropping an ended window changes nothing observable: the
// key's next hit would have opened a new window anyway.
func (m *Memory) maybeSweep(now time.Time) {
	m.calls++
	if m.calls < m.nextSweep {
		return
	}
	for key, w := range m.windows {
		if !now.Before(w.end) {
			delete(m.windows, key)
		}
	}
	m.calls = 0
	m.nextSweep = max(minSweepInterval, len(m.windows))
}

// decision builds the port's answer for a window holding count hits.
func decision(allowed bool, limit, count int, reset time.Time) edgeport.RateDecision {
	return edgeport.RateDecision{
		Allowed:   allowed,
		Limit:     limit,
		Remaining: max(0, limit-count),
		Reset:     reset,
	}
}
