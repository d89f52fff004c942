package seats_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/seats"
)

// result is what a queued Acquire returned.
type result struct {
	h   *seats.Seated
	err error
}

// queue starts Acquire(flow, n) in a goroutine and waits until the work
// is in flow's queue or seated (so that a test asserting it waits fails,
// rather than hangs, when it was seated); the returned channel gives its
// result.
func queue(ctx context.Context, t *testing.T, s *seats.Seats, flow string, n int) chan result {
	t.Helper()
	held, queued := s.Held(flow)
	out := make(chan result, 1)
	go func() {
		h, err := s.Acquire(ctx, flow, n)
		out <- result{h, err}
	}()
	waitUntil(t, func() bool { h, q := s.Held(flow); return q == queued+1 || h > held })
	return out
}

// waitUntil polls cond; it has no deadline of its own (the test's is it).
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(time.Millisecond)
	}
}

func take(t *testing.T, s *seats.Seats, flow string, n int) *seats.Seated {
	t.Helper()
	h, err := s.Acquire(context.Background(), flow, n)
	if err != nil {
		t.Fatalf("Acquire(%s, %d): %v", flow, n, err)
	}
	return h
}

func granted(t *testing.T, c chan result) *seats.Seated {
	t.Helper()
	r := <-c
	if r.err != nil {
		t.Fatalf("queued work: %v", r.err)
	}
	return r.h
}

// pending reports whether c's work still waits (a result read is put
// back for whoever reads next).
func pending(c chan result) bool {
	select {
	case r := <-c:
		c <- r
		return false
	default:
		return true
	}
}

func TestALightFlowGoesBeforeAHeavyFlowsQueueDrains(t *testing.T) {
	s := seats.New(seats.Limits{Capacity: 2, Share: 2, Queue: 10})
	ctx := context.Background()
	a1, a2 := take(t, s, "A", 1), take(t, s, "A", 1)
	var aQueue []chan result
	for range 3 {
		aQueue = append(aQueue, queue(ctx, t, s, "A", 1))
	}
	b := queue(ctx, t, s, "B", 1)

	a1.Release()
	hb := granted(t, b)
	if held, _ := s.Held("B"); held != 1 {
		t.Fatalf("B holds %d seats, want 1", held)
	}
	if _, q := s.Held("A"); q != 3 {
		t.Fatalf("A has %d queued after B was seated, want all 3 still queued", q)
	}
	for _, c := range aQueue {
		if !pending(c) {
			t.Fatal("one of A's queued pieces of work went before B's")
		}
	}
	// Seats then go to A's queue in order, as they free.
	hb.Release()
	h := granted(t, aQueue[0])
	a2.Release()
	h2 := granted(t, aQueue[1])
	h.Release()
	h3 := granted(t, aQueue[2])
	h2.Release()
	h3.Release()
	if st := s.Stats(); st.InUse != 0 || st.Waiting != 0 || st.Flows != 0 {
		t.Fatalf("after every release: %+v, want nothing held, waiting or kept", st)
	}
}

func TestFlowsWithWorkWaitingAreServedInTurn(t *testing.T) {
	s := seats.New(seats.Limits{Capacity: 1, Share: 1, Queue: 10})
	ctx := context.Background()
	first := take(t, s, "X", 1)
	type w struct {
		flow string
		c    chan result
		done bool
	}
	var ws []*w
	for _, f := range []string{"A", "A", "A", "B", "B", "C"} {
		ws = append(ws, &w{flow: f, c: queue(ctx, t, s, f, 1)})
	}
	first.Release()
	// One seat: one piece of work at a time is granted; it releases, and
	// the next is granted.
	var order []string
	for len(order) < len(ws) {
		for _, x := range ws {
			if x.done {
				continue
			}
			select {
			case r := <-x.c:
				x.done = true
				order = append(order, x.flow)
				r.h.Release()
			default:
			}
		}
		time.Sleep(time.Millisecond)
	}
	want := []string{"A", "B", "C", "A", "B", "A"}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("served %v, want %v (each flow's turn in order)", order, want)
		}
	}
}

func TestCostlyWorkIsNotPassedByCheaperWorkBehindIt(t *testing.T) {
	s := seats.New(seats.Limits{Capacity: 3, Share: 3, Queue: 10})
	ctx := context.Background()
	x := take(t, s, "X", 2)
	heavy := queue(ctx, t, s, "A", 2) // one seat is free; it needs two
	light := queue(ctx, t, s, "B", 1)
	if !pending(light) {
		t.Fatal("B's one-seat work passed A's two-seat work, whose turn it was")
	}
	x.Release()
	ha := granted(t, heavy)
	hb := granted(t, light)
	ha.Release()
	hb.Release()
	if st := s.Stats(); st.InUse != 0 || st.Flows != 0 {
		t.Fatalf("after every release: %+v", st)
	}
}

// A flow that takes a seat and leaves, again and again, is new each time
// it comes back; it does not pass the costly work of a flow that has
// waited: that work is seated when enough seats are free.
func TestCostlyWorkIsNotStarvedByFlowsThatComeAndGo(t *testing.T) {
	s := seats.New(seats.Limits{Capacity: 4, Share: 4, Queue: 10})
	ctx := context.Background()
	a := take(t, s, "A", 1)
	others := map[string]*seats.Seated{"B": take(t, s, "B", 1), "C": take(t, s, "C", 1), "D": take(t, s, "D", 1)}
	heavy := queue(ctx, t, s, "A", 3)
	a.Release()
	var back []chan result
	for _, f := range []string{"B", "C"} {
		others[f].Release()
		back = append(back, queue(ctx, t, s, f, 1))
	}
	// Three seats are free once B and C have released theirs: they are
	// A's, whose turn it is, and B and C wait behind it.
	if held, queued := s.Held("A"); held != 3 || queued != 0 {
		t.Fatalf("A holds %d and has %d waiting, want its 3 seats: B and C came back before it", held, queued)
	}
	granted(t, heavy).Release()
	for _, c := range back {
		granted(t, c).Release()
	}
	others["D"].Release()
	if st := s.Stats(); st.InUse != 0 || st.Flows != 0 {
		t.Fatalf("after every release: %+v", st)
	}
}

func TestAFlowAloneHoldsItsWholeShare(t *testing.T) {
	s := seats.New(seats.Limits{Capacity: 8, Share: 5, Queue: 10})
	var hs []*seats.Seated
	for range 5 {
		hs = append(hs, take(t, s, "A", 1))
	}
	over := queue(context.Background(), t, s, "A", 1)
	b := take(t, s, "B", 3) // the rest of the capacity is others'
	if st := s.Stats(); st.InUse != 8 || st.Waiting != 1 {
		t.Fatalf("stats %+v, want 8 in use and A's sixth waiting", st)
	}
	hs[0].Release()
	granted(t, over).Release()
	b.Release()
	for _, h := range hs[1:] {
		h.Release()
	}
	if st := s.Stats(); st.InUse != 0 || st.Flows != 0 {
		t.Fatalf("after every release: %+v", st)
	}
}

func TestSeatsComeBackOnEveryPath(t *testing.T) {
	s := seats.New(seats.Limits{Capacity: 2, Share: 2, Queue: 2})
	h := take(t, s, "A", 2)

	// A cancelled wait leaves nothing queued.
	ctx, cancel := context.WithCancelCause(context.Background())
	c := queue(ctx, t, s, "A", 1)
	stop := errors.New("client went away")
	cancel(stop)
	if r := <-c; !errors.Is(r.err, stop) || r.h != nil {
		t.Fatalf("cancelled wait: %v, %v; want the context's cause and no seats", r.h, r.err)
	}
	if st := s.Stats(); st.Waiting != 0 || st.InUse != 2 {
		t.Fatalf("after a cancelled wait: %+v", st)
	}

	// A full queue is refused at once and counts nothing.
	q1 := queue(context.Background(), t, s, "A", 1)
	q2 := queue(context.Background(), t, s, "A", 1)
	if _, err := s.Acquire(context.Background(), "A", 1); !errors.Is(err, seats.ErrQueueFull) {
		t.Fatalf("third in a queue of 2: %v, want ErrQueueFull", err)
	}
	if st := s.Stats(); st.Waiting != 2 {
		t.Fatalf("after a refusal: %+v, want the 2 queued", st)
	}

	// Releasing twice returns the seats once.
	h.Release()
	h.Release()
	g1, g2 := granted(t, q1), granted(t, q2)
	if st := s.Stats(); st.InUse != 2 || st.Waiting != 0 {
		t.Fatalf("after a double release: %+v, want the two queued seated and no more", st)
	}
	g1.Release()
	g2.Release()

	// A waiter whose context ends after the seats came is not left holding
	// them: its Acquire either returns them or returns them to the caller.
	for range 100 {
		hold := take(t, s, "A", 2)
		ctx, cancel := context.WithCancel(context.Background())
		c := queue(ctx, t, s, "B", 1)
		go hold.Release()
		cancel()
		if r := <-c; r.err == nil {
			r.h.Release()
		}
		waitUntil(t, func() bool { return s.Stats().InUse == 0 })
	}
	if st := s.Stats(); st.InUse != 0 || st.Waiting != 0 || st.Flows != 0 {
		t.Fatalf("at the end: %+v, want nothing held, waiting or kept", st)
	}
}

func TestCostIsBoundedByTheShare(t *testing.T) {
	s := seats.New(seats.Limits{Capacity: 8, Share: 4, Queue: 1})
	for n, want := range map[int]int{-3: 1, 0: 1, 1: 1, 3: 3, 4: 4, 100: 4} {
		if got := s.Cost(n); got != want {
			t.Errorf("Cost(%d) = %d, want %d", n, got, want)
		}
	}
	// Work costing more than the share still runs, alone in its flow.
	h := take(t, s, "A", 100)
	if held, _ := s.Held("A"); held != 4 {
		t.Fatalf("A holds %d, want its share 4", held)
	}
	h.Release()
}

func TestOnGrantSeesEveryGrantWithItsWait(t *testing.T) {
	s := seats.New(seats.Limits{Capacity: 1, Share: 1, Queue: 1})
	var mu sync.Mutex
	var waits []time.Duration
	s.OnGrant(func(d time.Duration) { mu.Lock(); waits = append(waits, d); mu.Unlock() })
	h := take(t, s, "A", 1)
	c := queue(context.Background(), t, s, "B", 1)
	time.Sleep(2 * time.Millisecond) // so that the queued wait is not zero
	h.Release()
	granted(t, c).Release()
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 2 || waits[0] != 0 || waits[1] <= 0 {
		t.Fatalf("waits %v, want [0, >0]", waits)
	}
}
