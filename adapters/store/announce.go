package store

import (
	"context"
	"sync"
	"time"
)

// announcer sends the NOTIFY that wakes other processes' dispatchers when
// this process has committed new or rescheduled deliveries (PostgreSQL).
//
// It is sent after the commit, in a statement of its own, and never inside
// the transaction that wrote the deliveries: PostgreSQL serialises the
// commits of every transaction that has sent a NOTIFY on one lock, held
// until the commit is on disk, so a NOTIFY per write turned concurrent
// writes into one-at-a-time commits (and cost them group commit). Here the
// notifications of a burst of commits coalesce: while one is being sent,
// the commits that follow ask for one more, and only one, sent gap after
// the last at the soonest: a stream of commits costs at most one NOTIFY
// per gap, each waking the other processes' dispatchers for a claim of
// their own. If the process
// dies between a commit and its notification, the other dispatchers still
// find those deliveries at their next poll; this process's own dispatcher
// is woken in process (core/app's signal) whatever happens here.
type announcer struct {
	send func(ctx context.Context) error
	gap  time.Duration

	mu      sync.Mutex
	running bool // a goroutine is sending
	again   bool // a commit asked while it was
}

// announceTimeout bounds one notification; a lost one costs other
// processes' dispatchers at most their poll interval.
const announceTimeout = 5 * time.Second

// announceGap is the least time between two notifications of one process:
// other processes' dispatchers hear of its deliveries within it.
const announceGap = 20 * time.Millisecond

// announce asks for a notification after a commit; it never blocks.
func (a *announcer) announce() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running {
		a.again = true
		return
	}
	a.running = true
	go a.loop()
}

func (a *announcer) loop() {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), announceTimeout)
		_ = a.send(ctx) // see announceTimeout: a failure delays, never loses, a delivery
		cancel()
		time.Sleep(a.gap)
		a.mu.Lock()
		if !a.again {
			a.running = false
			a.mu.Unlock()
			return
		}
		a.again = false
		a.mu.Unlock()
	}
}
