// Package seats is fair queuing of work by cost: a process has a number of
// seats, each piece of work takes as many as it costs for as long as it
// runs, and the work that waits for seats waits in a queue of its flow (a
// workspace), the flows served in turn.
//
// When seats free, the flow holding the fewest seats among those waiting
// goes first (ties: the one served longest ago), so that a
// workspace with one request waiting goes before the tenth of another, and
// a flood fills only the seats nobody else asks for: work-conserving, a
// flow alone may hold every seat its share allows. No one passes the flow
// whose turn it is: a costly piece of work waits for its seats to free, and
// is not starved by cheaper ones arriving after it.
//
// The ideas are Kubernetes' API Priority and Fairness (seats that grow
// with a request's cost, queues per flow) and max-min fairness; the
// mechanism is a mutex, a map of flows and a list of turns, small enough
// that the uncontended path costs a lock and a map lookup.
package seats

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"time"
)

// Limits size the seats.
type Limits struct {
	// Capacity is how many seats the process has.
	Capacity int
	// Share is how many seats one flow holds at once at most (at most
	// Capacity); a flow's work beyond it waits in the flow's queue even
	// when seats are free.
	Share int
	// Queue is how many pieces of work one flow has waiting at most; one
	// more is refused with ErrQueueFull.
	Queue int
}

// ErrQueueFull is Acquire's answer when the flow's queue is full.
var ErrQueueFull = errors.New("seats: the flow's queue is full")

// Seats is the process's seats. The zero value is not usable: New.
type Seats struct {
	mu      sync.Mutex
	lim     Limits
	inUse   int
	waiting int
	flows   map[string]*flow
	turns   []*flow           // flows with work waiting
	served  uint64            // grants so far: each flow's last grant's number
	idle    map[string]uint64 // flows gone idle: their last grant's number
	onGrant func(wait time.Duration)
}

type flow struct {
	id      string
	held    int
	served  uint64    // the number of the flow's last grant (0: none yet)
	waiters []*waiter // first come, first served within the flow
	inTurns bool
}

type waiter struct {
	n       int
	since   time.Time
	granted bool
	ready   chan struct{} // closed when granted
}

// New is seats of lim; a Share or Capacity under 1 counts as 1, a Share
// over Capacity as Capacity.
func New(lim Limits) *Seats {
	lim.Capacity = max(lim.Capacity, 1)
	lim.Share = min(max(lim.Share, 1), lim.Capacity)
	lim.Queue = max(lim.Queue, 0)
	return &Seats{lim: lim, flows: map[string]*flow{}}
}

// Limits is what s was sized with (after New's corrections).
func (s *Seats) Limits() Limits { return s.lim }

// OnGrant has fn called with how long each grant waited (zero for one
// that did not), outside s's lock: a histogram of the waits. Set it before
// s is used.
func (s *Seats) OnGrant(fn func(wait time.Duration)) { s.onGrant = fn }

// Stats is a reading of the seats.
type Stats struct {
	Capacity int // seats in all
	InUse    int // seats held now
	Waiting  int // pieces of work waiting for seats
	Flows    int // flows holding or waiting for seats
}

// Stats reads the seats now.
func (s *Seats) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Capacity: s.lim.Capacity, InUse: s.inUse, Waiting: s.waiting, Flows: len(s.flows)}
}

// Held is how many seats flowID holds now, and Queued how many of its
// pieces of work wait (tests wait on them to know work is queued).
func (s *Seats) Held(flowID string) (held, queued int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.flows[flowID]; f != nil {
		return f.held, len(f.waiters)
	}
	return 0, 0
}

// Seated is seats taken: Release returns them, once.
type Seated struct {
	s    *Seats
	f    *flow
	n    int
	once sync.Once
}

// Release returns the seats; later calls do nothing.
func (h *Seated) Release() {
	if h == nil {
		return
	}
	h.once.Do(func() {
		h.s.mu.Lock()
		h.s.give(h.f, h.n)
		h.s.mu.Unlock()
	})
}

// Cost is how many seats n asks for, as Acquire counts it: at least 1, at
// most the share.
func (s *Seats) Cost(n int) int { return min(max(n, 1), s.lim.Share) }

// TryAcquire takes n seats (Cost) for flowID if they are free and nobody
// waits for seats, else returns nil and takes nothing.
func (s *Seats) TryAcquire(flowID string, n int) *Seated {
	n = s.Cost(n)
	s.mu.Lock()
	if len(s.turns) > 0 || s.inUse+n > s.lim.Capacity {
		s.mu.Unlock()
		return nil
	}
	f := s.flows[flowID]
	if f == nil {
		f = s.newFlow(flowID)
	} else if f.held+n > s.lim.Share {
		s.mu.Unlock()
		return nil
	}
	f.held += n
	s.inUse += n
	s.served++
	f.served = s.served
	s.mu.Unlock()
	s.granted(0)
	return &Seated{s: s, f: f, n: n}
}

// Acquire takes n seats (Cost) for flowID, waiting in the flow's queue
// until they are granted or ctx ends (its cause is the error). A full
// queue is ErrQueueFull at once.
func (s *Seats) Acquire(ctx context.Context, flowID string, n int) (*Seated, error) {
	if h := s.TryAcquire(flowID, n); h != nil {
		return h, nil
	}
	n = s.Cost(n)
	s.mu.Lock()
	f := s.flows[flowID]
	if f == nil {
		f = s.newFlow(flowID)
	}
	if len(f.waiters) >= s.lim.Queue {
		s.forget(f)
		s.mu.Unlock()
		return nil, ErrQueueFull
	}
	w := &waiter{n: n, since: time.Now(), ready: make(chan struct{})}
	f.waiters = append(f.waiters, w)
	s.waiting++
	if !f.inTurns {
		f.inTurns = true
		s.turns = append(s.turns, f)
	}
	s.dispatch()
	s.mu.Unlock()

	select {
	case <-w.ready:
		s.granted(time.Since(w.since))
		return &Seated{s: s, f: f, n: n}, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if w.granted {
		// Granted as ctx ended: the seats go back.
		s.give(f, n)
		s.mu.Unlock()
		return nil, context.Cause(ctx)
	}
	for i, x := range f.waiters {
		if x == w {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			break
		}
	}
	s.waiting--
	if len(f.waiters) == 0 {
		s.leaveTurns(f)
	}
	// The work leaving may have been the one whose turn it was.
	s.dispatch()
	s.forget(f)
	s.mu.Unlock()
	return nil, context.Cause(ctx)
}

// newFlow is a flow for flowID, served when it was last: a flow that
// comes and goes keeps its place in the turns, and does not, each time it
// comes back, pass the flows that have waited since (were it counted as
// never served, a costly piece of work of another flow could wait for ever
// behind flows that take one seat and leave). s.mu is held.
func (s *Seats) newFlow(flowID string) *flow {
	f := &flow{id: flowID, served: s.idle[flowID]}
	delete(s.idle, flowID)
	s.flows[flowID] = f
	return f
}

// idleKept is how many idle flows' last grants are kept at most.
const idleKept = 1024

// rememberIdle keeps when f, which leaves, was last served. A grant older
// than that of every flow waiting ranks the same as none: once more than
// idleKept are kept, those are dropped (all of them when nobody waits),
// and if more than half of idleKept are still kept (many flows came and
// went while one waited), the ones served longest ago. s.mu is held.
func (s *Seats) rememberIdle(f *flow) {
	if s.idle == nil {
		s.idle = map[string]uint64{}
	}
	s.idle[f.id] = f.served
	if len(s.idle) <= idleKept {
		return
	}
	oldest := uint64(math.MaxUint64)
	for _, w := range s.turns {
		oldest = min(oldest, w.served)
	}
	grants := make([]uint64, 0, len(s.idle))
	for id, served := range s.idle {
		if served < oldest {
			delete(s.idle, id)
		} else {
			grants = append(grants, served)
		}
	}
	if len(grants) <= idleKept/2 {
		return
	}
	slices.Sort(grants)
	cut := grants[len(grants)-idleKept/2]
	for id, served := range s.idle {
		if served < cut {
			delete(s.idle, id)
		}
	}
}

func (s *Seats) granted(wait time.Duration) {
	if s.onGrant != nil {
		s.onGrant(wait)
	}
}

// give returns n of f's seats and grants what then fits; s.mu is held.
func (s *Seats) give(f *flow, n int) {
	f.held -= n
	s.inUse -= n
	s.dispatch()
	s.forget(f)
}

// forget drops f once it holds nothing and nothing of it waits; s.mu is
// held.
func (s *Seats) forget(f *flow) {
	if f.held == 0 && len(f.waiters) == 0 && s.flows[f.id] == f {
		delete(s.flows, f.id)
		s.rememberIdle(f)
	}
}

func (s *Seats) leaveTurns(f *flow) {
	for i, x := range s.turns {
		if x == f {
			s.turns = append(s.turns[:i], s.turns[i+1:]...)
			break
		}
	}
	f.inTurns = false
}

// dispatch grants waiting work while it fits: each time to the first
// waiter of the flow that holds the fewest seats among the flows whose
// next piece of work is within their share, among equals the one served
// longest ago (round robin). It stops when that piece of work needs more
// seats than are free. s.mu is held.
func (s *Seats) dispatch() {
	for s.inUse < s.lim.Capacity {
		best := -1
		for i, f := range s.turns {
			if f.held+f.waiters[0].n > s.lim.Share {
				continue // at its share: it waits for its own seats
			}
			if best < 0 || f.held < s.turns[best].held ||
				(f.held == s.turns[best].held && f.served < s.turns[best].served) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		f := s.turns[best]
		w := f.waiters[0]
		if s.inUse+w.n > s.lim.Capacity {
			return
		}
		f.waiters[0] = nil
		f.waiters = f.waiters[1:]
		f.held += w.n
		s.inUse += w.n
		s.waiting--
		s.served++
		f.served = s.served
		w.granted = true
		close(w.ready)
		if len(f.waiters) == 0 {
			s.turns = append(s.turns[:best], s.turns[best+1:]...)
			f.inTurns = false
		}
	}
}
