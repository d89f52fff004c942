package app

import (
	"context"
	"errors"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// record hands an outcome over to be written. The common outcome goes to
// finishLoop, which writes many per statement; a 410 (disable the webhook,
// fail its other pending deliveries, tell the workspace) is written here,
// in a transaction of its own.
func (x *Dispatcher) record(ctx context.Context, out domain.Outcome) {
	if !out.DeactivateWebhook {
		x.finishes <- out
		return
	}
	d := out.Delivery
	err := x.retryWrite(ctx, func(ctx context.Context) error {
		return x.d.Tx.InTx(ctx, func(ctx context.Context) error {
			ok, err := x.d.Deliveries.FinishDelivery(ctx, d, x.opts.Owner)
			if err != nil || !ok {
				return err
			}
			if err := x.disable(ctx, d.WorkspaceID, d.WebhookID, domain.DisabledGone, nil); !errors.Is(err, errStillEnabled) {
				return err
			}
			return nil // turned off meanwhile by someone else: its deliveries fail all the same
		})
	})
	if err != nil {
		x.log.Error("webhook dispatcher: recording an attempt failed; it will be retried when its lease lapses",
			"delivery_id", d.ID, "error", err.Error())
	}
}

// finishLoop writes attempt outcomes until finishes is closed: whatever
// has queued up while the previous statement ran, or for the rest of the
// pace after it started, goes into the next one, so that the statements
// per second stay few however many attempts end. Once stopping is closed
// (the dispatcher is shutting down) it no longer waits out the pace.
func (x *Dispatcher) finishLoop(ctx context.Context, stopping <-chan struct{}) {
	var wrote time.Time // when the last write started
	for o := range x.finishes {
		if wait := x.opts.Pace - time.Since(wrote); wait > 0 {
			select {
			case <-x.d.After(wait):
			case <-stopping:
			}
		}
		wrote = time.Now()
		batch := []domain.Outcome{o}
	more:
		for len(batch) < maxFinishBatch {
			select {
			case o, ok := <-x.finishes:
				if !ok {
					break more
				}
				batch = append(batch, o)
			default:
				break more
			}
		}
		x.finish(ctx, batch)
	}
}

// finish writes a batch of outcomes, schedules the retries among them, and
// disables the webhooks whose failure span the batch carried past the
// limit. A failed write (a broken connection, a database restarting) is
// retried: left to the lease, the attempt would be sent again although it
// was made.
func (x *Dispatcher) finish(ctx context.Context, batch []domain.Outcome) {
	var spans []domain.FailureSpan
	err := x.retryWrite(ctx, func(ctx context.Context) error {
		var err error
		_, spans, err = x.d.Deliveries.FinishDeliveries(ctx, x.opts.Owner, batch)
		return err
	})
	if err != nil {
		x.log.Error("webhook dispatcher: recording attempts failed; they will be retried when their leases lapse",
			"deliveries", len(batch), "error", err.Error())
		return
	}
	retries := false
	x.mu.Lock()
	for _, o := range batch {
		if d := o.Delivery; d.Status == domain.DeliveryPending && d.NextAttemptAt != nil {
			x.retries.add(*d.NextAttemptAt)
			retries = true
		}
	}
	x.mu.Unlock()
	if retries {
		// The claim loop may be asleep until the poll: let it see them.
		x.nudge()
	}
	now := x.d.Clock.Now()
	for _, span := range spans {
		if span.Disables(now, x.opts.DisableAfter) {
			x.disableFailing(ctx, span)
		}
	}
}

// disableFailing disables a webhook whose attempts have all failed for
// DisableAfter, once: the row is read again under its lock, so that of two
// processes deciding at once, one disables it and emits the event.
func (x *Dispatcher) disableFailing(ctx context.Context, span domain.FailureSpan) {
	err := x.retryWrite(ctx, func(ctx context.Context) error {
		err := x.d.Tx.InTx(ctx, func(ctx context.Context) error {
			return x.disable(ctx, span.WorkspaceID, span.WebhookID, domain.DisabledFailing, func(w domain.Webhook) bool {
				locked := domain.FailureSpan{Active: w.Active, FailingSince: w.FailingSince, FailedAttempts: w.FailedAttempts}
				return locked.Disables(x.d.Clock.Now(), x.opts.DisableAfter)
			})
		})
		if errors.Is(err, errStillEnabled) {
			return nil // another process disabled it, or an attempt succeeded meanwhile
		}
		return err
	})
	if err != nil {
		x.log.Error("webhook dispatcher: disabling a failing webhook failed; the next failed attempt tries again",
			"webhook_id", span.WebhookID, "error", err.Error())
	}
}

// errStillEnabled rolls back a disable whose webhook, read again under its
// lock, no longer qualifies.
var errStillEnabled = errors.New("webhook dispatcher: the webhook no longer qualifies for disabling")

// disable turns a webhook off for reason, inside the caller's transaction,
// when it is active (and qualifies by check, when given): its pending
// deliveries fail, and a webhook.disabled event goes to the event log, the
// subscriptions and the workspace's other webhooks that take it.
//
// Recording attempts locks deliveries and then their webhook (its failure
// span); so does this, or the two could wait for each other: it fails the
// pending deliveries first, then locks the webhook and checks again. When
// that check fails, it returns errStillEnabled, and the caller's
// transaction rolls the deliveries back.
func (x *Dispatcher) disable(ctx context.Context, workspaceID, webhookID string, reason domain.DisabledReason, check func(domain.Webhook) bool) error {
	qualifies := func(w domain.Webhook) bool { return w.Active && (check == nil || check(w)) }
	w, err := x.d.Webhooks.FindWebhookByID(ctx, workspaceID, webhookID)
	if domain.IsCode(err, domain.CodeNotFound) || (err == nil && !qualifies(w)) {
		return nil // deleted meanwhile, or nothing to do
	}
	if err != nil {
		return err
	}
	why := "The receiver answered 410 Gone; the webhook was disabled."
	if reason == domain.DisabledFailing {
		why = "Every attempt failed for " + x.opts.DisableAfter.String() + "; the webhook was disabled."
	}
	if _, err := x.d.Deliveries.FailPendingDeliveries(ctx, workspaceID, webhookID, why); err != nil {
		return err
	}
	if w, err = x.d.Webhooks.FindWebhookByIDForUpdate(ctx, workspaceID, webhookID); err != nil {
		return err
	}
	if !qualifies(w) {
		return errStillEnabled
	}
	next, _ := w.Disable(reason, x.d.Clock.Now())
	if err := x.d.Webhooks.UpdateWebhook(ctx, next); err != nil {
		return err
	}
	afterCommit(ctx, func() {
		x.log.Warn("webhook disabled", "webhook_id", webhookID, "workspace_id", workspaceID, "reason", string(reason))
	})
	if err := x.events.RecordEvent(ctx, newEvent(x.d.IDs, x.d.Clock, workspaceID, domain.EventWebhookDisabled, asEventData(next), nil)); err != nil {
		return err
	}
	return recordWebhookUpdate(ctx, x.audit, systemActor, w, next)
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

// done frees the worker and the webhook's slot, and wakes the claim loop.
func (x *Dispatcher) done(d domain.Delivery) {
	x.mu.Lock()
	x.adm.release(d)
	x.mu.Unlock()
	x.nudge()
	x.wg.Done()
}
