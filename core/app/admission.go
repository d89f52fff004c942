package app

import (
	"container/heap"
	"slices"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// admission is the dispatcher's bookkeeping of its attempts in flight: how
// many in all and per webhook, which deliveries, and what the last claim
// left due. It answers the claim loop's questions: how much room the next
// claim has (room), which claimed deliveries may start (admit), and whether
// a claim made only because workers came free is worth its statement
// (worthClaiming). It is not safe for concurrent use: the dispatcher holds
// its mutex around every call.
type admission struct {
	workers      int // attempts in flight at most
	perWebhook   int // attempts in flight to one webhook at most
	perWorkspace int // attempts in flight of one workspace at most

	inFlight int
	perHook  map[string]int
	perWS    map[string]int
	attempts map[string]struct{} // the deliveries of the attempts in flight

	// backlog: the last claim took all it asked for, so more may be due;
	// poolFull, it took every free worker; backlogHooks and backlogWS are
	// the webhooks and workspaces it took all their room of.
	backlog      bool
	poolFull     bool
	backlogHooks map[string]bool
	backlogWS    map[string]bool
}

func newAdmission(workers, perWebhook, perWorkspace int) *admission {
	return &admission{
		workers: workers, perWebhook: perWebhook, perWorkspace: perWorkspace,
		perHook: map[string]int{}, perWS: map[string]int{}, attempts: map[string]struct{}{},
		backlogHooks: map[string]bool{}, backlogWS: map[string]bool{},
	}
}

// claimRoom is what one claim may take: free workers in all, no delivery of
// the webhooks in skip (at their cap), at most room[id] of the webhooks
// with attempts in flight (perWebhook of any other), and the same for
// workspaces (skipWS, wsRoom, perWorkspace).
type claimRoom struct {
	free   int
	skip   []string
	room   map[string]int
	skipWS []string
	wsRoom map[string]int
}

// room is the room of the next claim.
func (a *admission) room() claimRoom {
	r := claimRoom{free: a.workers - a.inFlight, room: map[string]int{}, wsRoom: map[string]int{}}
	r.skip = rooms(a.perHook, a.perWebhook, r.room)
	r.skipWS = rooms(a.perWS, a.perWorkspace, r.wsRoom)
	return r
}

// rooms fills room with what is left under limit of each count of inFlight,
// and returns the keys with none left.
func rooms(inFlight map[string]int, limit int, room map[string]int) (full []string) {
	for id, n := range inFlight {
		if n >= limit {
			full = append(full, id)
		} else {
			room[id] = limit - n
		}
	}
	return full
}

// request is the store's claim request for r.
func (a *admission) request(r claimRoom, owner string, now, leaseUntil time.Time) ports.ClaimRequest {
	return ports.ClaimRequest{
		Owner: owner, Now: now, LeaseUntil: leaseUntil, Limit: r.free,
		SkipWebhooks: r.skip, PerWebhook: a.perWebhook, Room: r.room,
		SkipWorkspaces: r.skipWS, PerWorkspace: a.perWorkspace, WorkspaceRoom: r.wsRoom,
	}
}

// admit starts the bookkeeping of the claimed deliveries that fit, and
// returns them; over are the ids of those whose webhook or workspace is at
// its cap, to give back. It then notes what the claim, made with room r,
// left due.
func (a *admission) admit(claimed []ports.Dispatch, r claimRoom) (admitted []ports.Dispatch, over []string) {
	got, gotWS := map[string]int{}, map[string]int{}
	for _, c := range claimed {
		wh, ws := c.Delivery.WebhookID, c.Delivery.WorkspaceID
		got[wh]++
		gotWS[ws]++
		if a.perHook[wh] >= a.perWebhook || a.perWS[ws] >= a.perWorkspace {
			over = append(over, c.Delivery.ID)
			continue
		}
		a.perHook[wh]++
		a.perWS[ws]++
		a.inFlight++
		a.attempts[c.Delivery.ID] = struct{}{}
		admitted = append(admitted, c)
	}
	// A webhook or workspace that got all the room it was offered may have
	// more due: the claim loop claims again for it once a batch's worth of
	// its room is free, rather than one statement per finished attempt.
	// One the claim skipped, at its cap, keeps the backlog it had.
	noteBacklog(a.backlogHooks, got, r.skip, r.room, a.perWebhook)
	noteBacklog(a.backlogWS, gotWS, r.skipWS, r.wsRoom, a.perWorkspace)
	a.poolFull = len(claimed) == r.free
	a.backlog = a.poolFull || len(a.backlogHooks) > 0 || len(a.backlogWS) > 0
	return admitted, over
}

// noteBacklog sets backlog to the keys of got that got all their room
// (room's, else limit), and those of the old backlog in skipped.
func noteBacklog(backlog map[string]bool, got map[string]int, skipped []string, room map[string]int, limit int) {
	for id := range backlog {
		if !slices.Contains(skipped, id) {
			delete(backlog, id)
		}
	}
	for id, n := range got {
		r, ok := room[id]
		if !ok {
			r = limit
		}
		if n >= r {
			backlog[id] = true
		}
	}
}

// release ends the bookkeeping of an attempt.
func (a *admission) release(d domain.Delivery) {
	a.inFlight--
	delete(a.attempts, d.ID)
	if a.perHook[d.WebhookID]--; a.perHook[d.WebhookID] <= 0 {
		delete(a.perHook, d.WebhookID)
	}
	if a.perWS[d.WorkspaceID]--; a.perWS[d.WorkspaceID] <= 0 {
		delete(a.perWS, d.WorkspaceID)
	}
}

// worthClaiming reports whether a claim made only because workers came free
// is worth its statement: there was no backlog at the last claim, or enough
// workers are free to take a batch (a quarter of them, in all or for a
// webhook or workspace with a backlog).
func (a *admission) worthClaiming() bool {
	if !a.backlog || a.workers-a.inFlight >= max(1, a.workers/4) {
		return true
	}
	return a.backlogRoomFree()
}

// backlogRoomFree reports whether a quarter of the room of a webhook or a
// workspace with a backlog is free.
func (a *admission) backlogRoomFree() bool {
	for id := range a.backlogHooks {
		if a.perWebhook-a.perHook[id] >= max(1, a.perWebhook/4) {
			return true
		}
	}
	for id := range a.backlogWS {
		if a.perWorkspace-a.perWS[id] >= max(1, a.perWorkspace/4) {
			return true
		}
	}
	return false
}

// backlogBatchFree reports whether the last claim left a backlog and a
// batch of it could start now: a quarter of the pool free when the claim
// filled the pool, or a quarter of the room of a webhook or workspace whose
// room it filled. Unlike worthClaiming it says nothing when there is no
// backlog, and a pool with room to spare does not count for a webhook or
// workspace at its cap.
func (a *admission) backlogBatchFree() bool {
	if a.poolFull && a.workers-a.inFlight >= max(1, a.workers/4) {
		return true
	}
	return a.backlogRoomFree()
}

// inFlightIDs are the deliveries of the attempts in flight.
func (a *admission) inFlightIDs() []string {
	ids := make([]string, 0, len(a.attempts))
	for id := range a.attempts {
		ids = append(ids, id)
	}
	return ids
}

// retryTimes are the retries a dispatcher scheduled, earliest first: it
// wakes when the earliest falls due.
type retryTimes struct{ h timeHeap }

func (r *retryTimes) add(t time.Time) { heap.Push(&r.h, t) }

// dropDue forgets the retries due by now: the claim about to run picks them
// all up.
func (r *retryTimes) dropDue(now time.Time) {
	for len(r.h) > 0 && !r.h[0].After(now) {
		heap.Pop(&r.h)
	}
}

// next is the earliest retry, if any.
func (r *retryTimes) next() (time.Time, bool) {
	if len(r.h) == 0 {
		return time.Time{}, false
	}
	return r.h[0], true
}

// timeHeap is a min-heap of instants (container/heap).
type timeHeap []time.Time

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(v any)        { *h = append(*h, v.(time.Time)) }
func (h *timeHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}
