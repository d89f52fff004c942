package domain

import (
	"math/rand/v2"
	"time"
)

// DeliveryStatus is the state of one event's delivery to one webhook.
type DeliveryStatus string

// Delivery states: pending until a 2xx arrives (succeeded) or retrying is
// over (failed).
const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliverySucceeded DeliveryStatus = "succeeded"
	DeliveryFailed    DeliveryStatus = "failed"
)

// Validate checks that s names a delivery status (the deliveries list's
// status filter).
func (s DeliveryStatus) Validate() error {
	switch s {
	case DeliveryPending, DeliverySucceeded, DeliveryFailed:
		return nil
	}
	return Invalid("status", "Must be one of pending, succeeded, failed.")
}

// Delivery is one event owed to one webhook, with its attempts so far.
// WindowStart opens the retry window: the event's time, or the time of a
// redelivery request.
type Delivery struct {
	ID             string
	WorkspaceID    string
	WebhookID      string
	EventID        string
	EventType      EventType
	Status         DeliveryStatus
	Attempts       int
	LastAttemptAt  *time.Time
	LastStatusCode *int
	LastError      *string
	NextAttemptAt  *time.Time
	WindowStart    time.Time
	CreatedAt      time.Time
}

// NewDelivery is the delivery of event e owed to webhook w: pending, due at
// once, its retry window opening at the event's time.
func NewDelivery(id, webhookID string, e Event) Delivery {
	at := Timestamp(e.CreatedAt)
	return Delivery{
		ID: id, WorkspaceID: e.WorkspaceID, WebhookID: webhookID, EventID: e.ID, EventType: e.Type,
		Status: DeliveryPending, NextAttemptAt: &at, WindowStart: at, CreatedAt: at,
	}
}

// HTTP statuses the retry rules single out. The core does not import
// net/http; these are the numbers of RFC 9110 and RFC 6585.
const (
	statusGone               = 410
	statusTooManyRequests    = 429
	statusServiceUnavailable = 503
)

// RetryPolicy is the retry schedule of docs/api.md#retries.
type RetryPolicy struct {
	Base   time.Duration // first retry delay
	Max    time.Duration // cap on one delay
	Window time.Duration // no attempt starts later than this after WindowStart
	// Jitter maps a delay to the one used; nil means none. Production uses
	// "equal jitter": a random point in [d/2, d].
	Jitter func(time.Duration) time.Duration
}

// Backoff is the delay before retry number n (n = 1 after the first failed
// attempt): Base doubling, capped at Max, then jittered.
func (p RetryPolicy) Backoff(n int) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	if d > p.Max {
		d = p.Max
	}
	if p.Jitter != nil {
		d = p.Jitter(d)
	}
	return d
}

// EqualJitter is the production jitter: a uniformly random delay in
// [d/2, d], so that retries of many deliveries spread out while none comes
// sooner than half the schedule. Randomness need not be unpredictable here,
// only spread, so math/rand/v2 suffices.
func EqualJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1) //nolint:gosec // spreading retries needs no secret randomness
}

// AttemptResult is what one delivery attempt saw. StatusCode is 0 when no
// response came (timeout, refused connection, address refused).
type AttemptResult struct {
	StatusCode int
	Err        string
	// RetryAfter is the wait the receiver asked for with Retry-After on a
	// 429 or 503 (an HTTP-date already turned into a delay); 0 when none.
	// It is a delay rather than an instant so that the state machine adds it
	// to its own clock.
	RetryAfter time.Duration
}

// Succeeded reports a 2xx.
func (r AttemptResult) Succeeded() bool { return r.StatusCode >= 200 && r.StatusCode < 300 }

// Outcome is what the delivery state machine decided after an attempt.
type Outcome struct {
	Delivery Delivery
	// Attempted: an attempt was made (false when the delivery ended without
	// one). Attempts count in their webhook's failure span.
	Attempted bool
	// DeactivateWebhook is set on a 410 Gone: the receiver asked to stop.
	DeactivateWebhook bool
}

// Succeeded reports an attempt that succeeded.
func (o Outcome) Succeeded() bool { return o.Attempted && o.Delivery.Status == DeliverySucceeded }

// RecordAttempt applies one attempt's result to a pending delivery, at now.
func (d Delivery) RecordAttempt(r AttemptResult, now time.Time, p RetryPolicy) Outcome {
	now = Timestamp(now)
	d.Attempts++
	d.LastAttemptAt = &now
	d.LastStatusCode = nil
	if r.StatusCode != 0 {
		code := r.StatusCode
		d.LastStatusCode = &code
	}
	d.LastError = nil
	if r.Err != "" {
		msg := r.Err
		d.LastError = &msg
	}
	switch {
	case r.Succeeded():
		d.Status, d.NextAttemptAt = DeliverySucceeded, nil
		return Outcome{Delivery: d, Attempted: true}
	case r.StatusCode == statusGone:
		d.Status, d.NextAttemptAt = DeliveryFailed, nil
		return Outcome{Delivery: d, Attempted: true, DeactivateWebhook: true}
	}
	next := now.Add(p.Backoff(d.Attempts))
	if r.RetryAfter > 0 && (r.StatusCode == statusTooManyRequests || r.StatusCode == statusServiceUnavailable) {
		if ra := now.Add(r.RetryAfter); ra.After(next) {
			next = ra
		}
	}
	if next.After(d.WindowStart.Add(p.Window)) {
		d.Status, d.NextAttemptAt = DeliveryFailed, nil
		return Outcome{Delivery: d, Attempted: true}
	}
	next = Timestamp(next)
	d.NextAttemptAt = &next
	return Outcome{Delivery: d, Attempted: true}
}

// WindowClosed reports whether no attempt may start at now any more: the
// retry window that opened at WindowStart is over. A delivery can reach that
// point without an attempt deciding it, e.g. while its webhook was inactive.
func (d Delivery) WindowClosed(now time.Time, p RetryPolicy) bool {
	return now.After(d.WindowStart.Add(p.Window))
}

// Redeliver puts a delivery back to pending, due now, with a fresh retry
// window. Attempts keep counting.
func (d Delivery) Redeliver(now time.Time) Delivery {
	now = Timestamp(now)
	d.Status = DeliveryPending
	d.NextAttemptAt = &now
	d.WindowStart = now
	return d
}

// Fail ends a pending delivery without an attempt (its webhook was
// deactivated by a 410 on another delivery).
func (d Delivery) Fail(reason string) Delivery {
	d.Status, d.NextAttemptAt = DeliveryFailed, nil
	d.LastError = &reason
	return d
}
