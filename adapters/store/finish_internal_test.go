package store

import (
	"slices"
	"testing"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// What a batch of written attempts says of each webhook's failure span: a
// success outweighs the failures beside it, failures count from the first,
// unattempted or unwritten outcomes count for nothing, and a delivery
// whose outcome appears twice counts once (one row was written).
func TestSpanMoves(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	out := func(id, hook string, at time.Duration, status domain.DeliveryStatus, attempted bool) domain.Outcome {
		when := t0.Add(at)
		return domain.Outcome{Attempted: attempted, Delivery: domain.Delivery{ID: id, WebhookID: hook, Status: status, LastAttemptAt: &when}}
	}
	outs := []domain.Outcome{
		out("d1", "whA", 2*time.Second, domain.DeliveryPending, true),
		out("d2", "whB", time.Second, domain.DeliveryPending, true),
		out("d3", "whA", time.Second, domain.DeliveryFailed, true),
		out("d4", "whB", 0, domain.DeliverySucceeded, true),
		out("d5", "whC", 0, domain.DeliveryFailed, false),               // given up unsent
		out("d6", "whD", 0, domain.DeliveryPending, true),               // lease lost: not written
		out("d1", "whA", 3*time.Second, domain.DeliverySucceeded, true), // d1 again, after its lease lapsed
	}
	written := map[string]bool{"d1": true, "d2": true, "d3": true, "d4": true, "d5": true}
	got := spanMoves(outs, written)
	want := []spanMove{
		{webhookID: "whA", ok: false, first: t0.Add(time.Second), n: 2},
		{webhookID: "whB", ok: true, first: t0, n: 2},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("moves %+v, want %+v", got, want)
	}
}
