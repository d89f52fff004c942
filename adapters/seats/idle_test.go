package seats

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The grants of flows gone idle are kept while they can matter, and no
// more: many workspaces coming and going do not grow the seats' memory.
func TestIdleFlowsAreForgottenOnceTheyNoLongerMatter(t *testing.T) {
	for _, waiting := range []bool{false, true} {
		t.Run(fmt.Sprintf("a flow waiting: %v", waiting), func(t *testing.T) {
			s := New(Limits{Capacity: 3, Share: 2, Queue: 10})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if waiting {
				// A holds its share, and its third piece of work waits.
				for range 2 {
					if _, err := s.Acquire(ctx, "A", 1); err != nil {
						t.Fatal(err)
					}
				}
				go func() { _, _ = s.Acquire(ctx, "A", 1) }()
				for {
					s.mu.Lock()
					n := s.waiting
					s.mu.Unlock()
					if n == 1 {
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
			for i := range 5 * idleKept {
				h, err := s.Acquire(ctx, fmt.Sprintf("flow-%d", i), 1)
				if err != nil {
					t.Fatal(err)
				}
				h.Release()
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if n := len(s.idle); n > idleKept {
				t.Fatalf("%d idle flows kept, want at most %d", n, idleKept)
			}
			// While A waits, the last flow to leave is remembered: it
			// comes back behind A.
			last := fmt.Sprintf("flow-%d", 5*idleKept-1)
			if _, ok := s.idle[last]; waiting && !ok {
				t.Fatalf("%s, the last to leave while A waits, is not remembered", last)
			}
		})
	}
}
