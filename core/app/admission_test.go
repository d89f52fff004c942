package app

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// claimedOf makes n claimed deliveries of webhook, numbered from first.
func claimedOf(webhook string, first, n int) []ports.Dispatch {
	return claimedIn("", webhook, first, n)
}

// claimedIn makes n claimed deliveries of a webhook of workspace.
func claimedIn(workspace, webhook string, first, n int) []ports.Dispatch {
	out := make([]ports.Dispatch, n)
	for i := range out {
		out[i] = ports.Dispatch{Delivery: domain.Delivery{
			ID: fmt.Sprintf("whd_%s_%d", webhook, first+i), WebhookID: webhook, WorkspaceID: workspace,
		}}
	}
	return out
}

func TestAdmissionRoomLeavesOutWebhooksAtTheirCap(t *testing.T) {
	a := newAdmission(8, 3, 1000)
	r := a.room()
	if r.free != 8 || len(r.skip) != 0 || len(r.room) != 0 {
		t.Fatalf("an idle dispatcher: %+v", r)
	}
	admitted, over := a.admit(append(claimedOf("A", 0, 3), claimedOf("B", 0, 1)...), r)
	if len(admitted) != 4 || len(over) != 0 {
		t.Fatalf("admitted %d, over %v", len(admitted), over)
	}
	r = a.room()
	if r.free != 4 || !slices.Equal(r.skip, []string{"A"}) || r.room["B"] != 2 || len(r.room) != 1 {
		t.Fatalf("A at its cap, B with one in flight: %+v", r)
	}
	req := a.request(r, "dsp_1", time.Unix(10, 0), time.Unix(20, 0))
	if req.Limit != 4 || req.PerWebhook != 3 || req.Room["B"] != 2 || !slices.Equal(req.SkipWebhooks, []string{"A"}) || req.Owner != "dsp_1" {
		t.Fatalf("the store's request: %+v", req)
	}
}

func TestAdmissionGivesBackWhatIsOverAWebhooksCap(t *testing.T) {
	a := newAdmission(8, 2, 1000)
	admitted, over := a.admit(claimedOf("A", 0, 5), a.room())
	if len(admitted) != 2 || !slices.Equal(over, []string{"whd_A_2", "whd_A_3", "whd_A_4"}) {
		t.Fatalf("admitted %d, over %v", len(admitted), over)
	}
	if got := a.inFlightIDs(); len(got) != 2 || a.inFlight != 2 {
		t.Fatalf("in flight: %v (%d)", got, a.inFlight)
	}
	a.release(domain.Delivery{ID: "whd_A_0", WebhookID: "A"})
	a.release(domain.Delivery{ID: "whd_A_1", WebhookID: "A"})
	if a.inFlight != 0 || len(a.perHook) != 0 || len(a.inFlightIDs()) != 0 {
		t.Fatalf("after release: %d in flight, per webhook %v", a.inFlight, a.perHook)
	}
	if r := a.room(); r.free != 8 || len(r.skip) != 0 {
		t.Fatalf("room after release: %+v", r)
	}
}

// A claim that took all it asked for leaves a backlog: freed workers do not
// claim again one by one, only once a quarter of the pool is free.
func TestAdmissionClaimsABacklogInBatches(t *testing.T) {
	a := newAdmission(8, 8, 1000)
	if !a.worthClaiming() {
		t.Fatal("with no backlog, any free worker is worth a claim")
	}
	var claimed []ports.Dispatch
	for w := range 8 {
		claimed = append(claimed, claimedOf(fmt.Sprintf("W%d", w), 0, 1)...)
	}
	a.admit(claimed, a.room())
	if !a.backlog {
		t.Fatal("a claim that filled every free worker must note a backlog")
	}
	a.release(domain.Delivery{ID: claimed[0].Delivery.ID, WebhookID: "W0"})
	if a.worthClaiming() {
		t.Fatal("one free worker of eight is not worth a claim during a backlog")
	}
	a.release(domain.Delivery{ID: claimed[1].Delivery.ID, WebhookID: "W1"})
	if !a.worthClaiming() {
		t.Fatal("a quarter of the pool free is worth a claim")
	}
}

// A webhook that got all the room it was offered is a backlog of its own:
// once a quarter of its room is free, a claim is worth it, even though the
// pool as a whole is not short of free workers.
func TestAdmissionNotesAWebhooksBacklog(t *testing.T) {
	a := newAdmission(100, 8, 1000)
	a.admit(claimedOf("A", 0, 8), a.room())
	if !a.backlog || !a.backlogHooks["A"] {
		t.Fatalf("A took all its room: backlog %v, hooks %v", a.backlog, a.backlogHooks)
	}
	// The pool is mostly free, so any claim is worth it.
	if !a.worthClaiming() {
		t.Fatal("92 free workers of 100 are worth a claim")
	}
	b := newAdmission(8, 8, 1000)
	b.admit(claimedOf("A", 0, 8), b.room())
	b.release(domain.Delivery{ID: "whd_A_0", WebhookID: "A"})
	if b.worthClaiming() {
		t.Fatal("one free slot of A's eight is not worth a claim")
	}
	b.release(domain.Delivery{ID: "whd_A_1", WebhookID: "A"})
	if !b.worthClaiming() {
		t.Fatal("a quarter of A's room free is worth a claim")
	}
	// A claim that took less than it was offered leaves no backlog.
	c := newAdmission(8, 8, 1000)
	c.admit(claimedOf("A", 0, 3), c.room())
	if c.backlog || len(c.backlogHooks) != 0 {
		t.Fatalf("a short claim: backlog %v, hooks %v", c.backlog, c.backlogHooks)
	}
}

// While claims are paced, only a backlog's batch ends the wait: a
// quarter of the room of a webhook at its cap, however free the pool, or a
// quarter of the pool when the pool was the limit; nothing without a
// backlog.
func TestAdmissionBacklogBatchFree(t *testing.T) {
	a := newAdmission(100, 8, 1000)
	a.admit(claimedOf("A", 0, 3), a.room())
	if a.backlogBatchFree() {
		t.Fatal("a short claim left no backlog, yet a batch of it is free")
	}
	b := newAdmission(100, 8, 1000)
	b.admit(claimedOf("A", 0, 8), b.room())
	b.release(domain.Delivery{ID: "whd_A_0", WebhookID: "A"})
	if b.backlogBatchFree() {
		t.Fatal("one free slot of A's eight is no batch, though 93 workers of 100 are free")
	}
	b.release(domain.Delivery{ID: "whd_A_1", WebhookID: "A"})
	if !b.backlogBatchFree() {
		t.Fatal("a quarter of A's room free is a batch of its backlog")
	}
	// A claim made while A was at its cap skipped it: A keeps its backlog.
	d := newAdmission(100, 8, 1000)
	d.admit(claimedOf("A", 0, 8), d.room())
	r := d.room()
	if !slices.Contains(r.skip, "A") {
		t.Fatalf("A at its cap is not skipped: %+v", r)
	}
	d.admit(nil, r)
	d.release(domain.Delivery{ID: "whd_A_0", WebhookID: "A"})
	d.release(domain.Delivery{ID: "whd_A_1", WebhookID: "A"})
	if !d.backlogBatchFree() {
		t.Fatal("a claim that skipped A at its cap forgot A's backlog")
	}
	// Held back by its workspace's cap, B got less than its own room: the
	// workspace's backlog is B's.
	w := newAdmission(100, 6, 8)
	w.admit(append(claimedIn("W", "A", 0, 6), claimedIn("W", "B", 0, 2)...), w.room())
	w.release(domain.Delivery{ID: "whd_B_0", WebhookID: "B", WorkspaceID: "W"})
	if w.backlogBatchFree() {
		t.Fatal("one free slot of W's eight is no batch of its backlog")
	}
	w.release(domain.Delivery{ID: "whd_B_1", WebhookID: "B", WorkspaceID: "W"})
	if !w.backlogBatchFree() {
		t.Fatal("a quarter of W's room free, W having taken all its room, is a batch of its backlog")
	}
	c := newAdmission(8, 8, 1000)
	var claimed []ports.Dispatch
	for w := range 8 {
		claimed = append(claimed, claimedOf(fmt.Sprintf("W%d", w), 0, 1)...)
	}
	c.admit(claimed, c.room())
	c.release(domain.Delivery{ID: claimed[0].Delivery.ID, WebhookID: "W0"})
	if c.backlogBatchFree() {
		t.Fatal("one free worker of eight is no batch of the pool's backlog")
	}
	c.release(domain.Delivery{ID: claimed[1].Delivery.ID, WebhookID: "W1"})
	if !c.backlogBatchFree() {
		t.Fatal("a quarter of the pool free is a batch of its backlog")
	}
}

func TestRetryTimesWakeAtTheEarliest(t *testing.T) {
	var r retryTimes
	if _, ok := r.next(); ok {
		t.Fatal("no retries scheduled")
	}
	base := time.Unix(1000, 0)
	for _, s := range []int{30, 10, 20} {
		r.add(base.Add(time.Duration(s) * time.Second))
	}
	if next, _ := r.next(); !next.Equal(base.Add(10 * time.Second)) {
		t.Fatalf("next %v", next)
	}
	r.dropDue(base.Add(20 * time.Second))
	if next, _ := r.next(); !next.Equal(base.Add(30 * time.Second)) {
		t.Fatalf("after dropping the due ones, next %v", next)
	}
	r.dropDue(base.Add(time.Hour))
	if _, ok := r.next(); ok {
		t.Fatal("every retry was due")
	}
}

// One workspace's deliveries hold at most its share of the workers,
// however many webhooks it has: beyond it they are given back, and the next
// claim skips the workspace, while another workspace's deliveries start.
func TestAdmissionCapsAWorkspacesShare(t *testing.T) {
	a := newAdmission(16, 4, 6)
	var claimed []ports.Dispatch
	for h := range 4 {
		claimed = append(claimed, claimedIn("wsp_A", fmt.Sprintf("A%d", h), 0, 2)...)
	}
	claimed = append(claimed, claimedIn("wsp_B", "B0", 0, 2)...)
	admitted, over := a.admit(claimed, a.room())
	perWS := map[string]int{}
	for _, c := range admitted {
		perWS[c.Delivery.WorkspaceID]++
	}
	if perWS["wsp_A"] != 6 || perWS["wsp_B"] != 2 || len(over) != 2 {
		t.Fatalf("admitted per workspace %v, %d given back; want A 6 (its share), B 2, 2 back", perWS, len(over))
	}
	r := a.room()
	if !slices.Equal(r.skipWS, []string{"wsp_A"}) || r.wsRoom["wsp_B"] != 4 {
		t.Fatalf("room after: skip %v, room %v", r.skipWS, r.wsRoom)
	}
	req := a.request(r, "dsp", time.Unix(1, 0), time.Unix(2, 0))
	if req.PerWorkspace != 6 || !slices.Equal(req.SkipWorkspaces, []string{"wsp_A"}) || req.WorkspaceRoom["wsp_B"] != 4 {
		t.Fatalf("the store's request: %+v", req)
	}
	for _, c := range admitted {
		a.release(c.Delivery)
	}
	if len(a.perWS) != 0 || a.inFlight != 0 {
		t.Fatalf("after release: %v, %d in flight", a.perWS, a.inFlight)
	}
}
