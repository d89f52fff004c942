package app

import (
	"context"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// record hands an outcome over to be written. The common outcome goes to
// finishLoop, which writes many per statement; a 410 (deactivate the
// webhook, fail its other pending deliveries) is written here, in a
// transaction of its own.
func (x *Dispatcher) record(ctx context.Context, out domain.Outcome) {
	if !out.DeactivateWebhook {
		x.finishes <- out.Delivery
		return
	}
	d := out.Delivery
	err := x.retryWrite(ctx, func(ctx context.Context) error { return x.deactivate(ctx, d) })
	if err != nil {
		x.log.Error("webhook dispatcher: recording an attempt failed; it will be retried when its lease lapses",
			"delivery_id", d.ID, "error", err.Error())
	}
}

// finishLoop writes attempt outcomes until finishes is closed: whatever
// has queued up while the previous statement ran goes into the next one,
// so that the statements per second stay few however many attempts end.
func (x *Dispatcher) finishLoop(ctx context.Context) {
	for d := range x.finishes {
		batch := []domain.Delivery{d}
	more:
		for len(batch) < maxFinishBatch {
			select {
			case d, ok := <-x.finishes:
				if !ok {
					break more
				}
				batch = append(batch, d)
			default:
				break more
			}
		}
		x.finish(ctx, batch)
	}
}

// finish writes a batch of outcomes and schedules the retries among them.
// A failed write (a broken connection, a database restarting) is retried:
// left to the lease, the attempt would be sent again although it was made.
func (x *Dispatcher) finish(ctx context.Context, batch []domain.Delivery) {
	err := x.retryWrite(ctx, func(ctx context.Context) error {
		_, err := x.d.Deliveries.FinishDeliveries(ctx, x.opts.Owner, batch)
		return err
	})
	if err != nil {
		x.log.Error("webhook dispatcher: recording attempts failed; they will be retried when their leases lapse",
			"deliveries", len(batch), "error", err.Error())
		return
	}
	retries := false
	x.mu.Lock()
	for _, d := range batch {
		if d.Status == domain.DeliveryPending && d.NextAttemptAt != nil {
			x.retries.add(*d.NextAttemptAt)
			retries = true
		}
	}
	x.mu.Unlock()
	if retries {
		// The claim loop may be asleep until the poll: let it see them.
		x.nudge()
	}
}

// retryWrite runs write until it succeeds, for at most half the lease
// (the attempts it records must be written before their leases lapse),
// waiting 50ms doubling to 1s between tries.
func (x *Dispatcher) retryWrite(ctx context.Context, write func(context.Context) error) error {
	deadline := time.Now().Add(x.opts.Lease / 2)
	wait := 50 * time.Millisecond
	for {
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := write(tctx)
		cancel()
		if err == nil || time.Now().Add(wait).After(deadline) {
			return err
		}
		x.log.Warn("webhook dispatcher: recording attempts failed; retrying", "error", err.Error())
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}

// nudge wakes the claim loop.
func (x *Dispatcher) nudge() {
	select {
	case x.freed <- struct{}{}:
	default:
	}
}

// deactivate records a 410: the delivery's outcome, the webhook set
// inactive and its other pending deliveries failed, in one transaction.
func (x *Dispatcher) deactivate(ctx context.Context, d domain.Delivery) error {
	return x.d.Tx.InTx(ctx, func(ctx context.Context) error {
		ok, err := x.d.Deliveries.FinishDelivery(ctx, d, x.opts.Owner)
		if err != nil || !ok {
			return err
		}
		w, err := x.d.Webhooks.FindWebhookByIDForUpdate(ctx, d.WorkspaceID, d.WebhookID)
		if err != nil {
			return err
		}
		next, changed, err := w.Apply(domain.WebhookFields{Active: domain.Set(false)}, x.d.Clock.Now())
		if err != nil || !changed {
			return err
		}
		if err := x.d.Webhooks.UpdateWebhook(ctx, next); err != nil {
			return err
		}
		_, err = x.d.Deliveries.FailPendingDeliveries(ctx, d.WorkspaceID, d.WebhookID,
			"The receiver answered 410 Gone; the webhook was deactivated.")
		return err
	})
}

// done frees the worker and the webhook's slot, and wakes the claim loop.
func (x *Dispatcher) done(d domain.Delivery) {
	x.mu.Lock()
	x.adm.release(d)
	x.mu.Unlock()
	x.nudge()
	x.wg.Done()
}
