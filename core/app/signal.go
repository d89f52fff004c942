package app

import "sync"

// Signal wakes every subscribed dispatcher of this process: the outbox and
// redeliveries notify it once their transaction commits. Notifications
// coalesce: a dispatcher that has not yet looked sees one, however many
// were sent.
type Signal struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// NewSignal returns a signal with no subscribers.
func NewSignal() *Signal { return &Signal{subs: map[chan struct{}]struct{}{}} }

// Notify wakes every subscriber.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Subscribe returns a channel that receives a (coalesced) value after each
// Notify, and the function that ends the subscription.
func (s *Signal) Subscribe() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[c] = struct{}{}
	s.mu.Unlock()
	return c, func() {
		s.mu.Lock()
		delete(s.subs, c)
		s.mu.Unlock()
	}
}
