package app

import (
	"container/heap"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// DispatcherOptions tune the webhook dispatcher. Zero values get the
// defaults named.
type DispatcherOptions struct {
	// Policy is the retry schedule: WORKTRACK_WEBHOOK_BACKOFF_BASE, _MAX,
	// _RETRY_WINDOW, and domain.EqualJitter in production.
	Policy domain.RetryPolicy
	// Timeout is the sender's per-attempt timeout; the lease outlasts it.
	Timeout time.Duration
	// Workers bounds the attempts in flight at once. Default 16.
	Workers int
	// PerWebhook bounds the attempts in flight to one webhook, so that a slow
	// or dead receiver holds at most this share of the workers. Default
	// Workers/4, at least 1.
	PerWebhook int
	// PollInterval is the fallback for wake-ups that cannot be signalled
	// (another process's expired lease, a lost notification). Default 1s.
	PollInterval time.Duration
	// Lease is how long a claimed delivery stays reserved to this
	// dispatcher; a crashed process's claims lapse after it. Default
	// 2×Timeout + 10s.
	Lease time.Duration
	// Owner names this dispatcher in leases. Default a fresh random id.
	Owner string
	// Logger reports failures to reach the database. Default slog.Default().
	Logger *slog.Logger
}

// Dispatcher sends due deliveries: it claims them in batches (with a lease,
// so that dispatchers of several processes on one database share the work
// without sending one attempt twice at once), makes one attempt each through
// the WebhookSender, and records the outcome with the delivery state machine
// of the domain. It is woken after a local commit, by other processes
// through the DeliveryWatcher, when a retry it scheduled falls due, and by a
// slow poll as the fallback.
type Dispatcher struct {
	d    DispatcherDeps
	opts DispatcherOptions
	log  *slog.Logger

	mu       sync.Mutex
	inFlight int
	perHook  map[string]int
	retries  timeHeap // retries this dispatcher scheduled, earliest first
	backlog  bool     // the last claim took all it asked for: more may be due
	freed    chan struct{}
	wg       sync.WaitGroup
}

// DispatcherDeps are the ports the dispatcher uses, all required.
type DispatcherDeps struct {
	// Tx and Webhooks serve a 410: the webhook is deactivated in the
	// transaction that records the outcome.
	Tx         ports.Transactor
	Deliveries ports.DeliveryStore
	Webhooks   ports.WebhookStore
	Sender     ports.WebhookSender
	// Watcher wakes it when other processes commit deliveries; a database
	// without notifications gives a channel that only closes.
	Watcher ports.DeliveryWatcher
	// Wake is this process's signal, notified after a local commit.
	Wake *Signal
	// Clock decides what is due; After waits (time.After in production), so
	// that tests can run the schedule on a fake clock.
	Clock ports.Clock
	After func(time.Duration) <-chan time.Time
}

// NewDispatcher makes a dispatcher over the app's stores and wake signal,
// with the system timers.
func (a *App) NewDispatcher(sender ports.WebhookSender, watcher ports.DeliveryWatcher, o DispatcherOptions) *Dispatcher {
	return NewDispatcher(DispatcherDeps{
		Tx: a.tx, Deliveries: a.deliveries, Webhooks: a.webhooks, Sender: sender, Watcher: watcher,
		Wake: a.wake, Clock: a.clock, After: time.After,
	}, o)
}

// NewDispatcher makes a dispatcher; zero options get their defaults.
func NewDispatcher(d DispatcherDeps, o DispatcherOptions) *Dispatcher {
	mustHave(map[string]any{
		"Tx": d.Tx, "Deliveries": d.Deliveries, "Webhooks": d.Webhooks, "Sender": d.Sender,
		"Watcher": d.Watcher, "Clock": d.Clock,
	})
	if d.Wake == nil || d.After == nil {
		panic("app: the dispatcher needs Wake and After")
	}
	if o.Workers <= 0 {
		o.Workers = 16
	}
	if o.PerWebhook <= 0 {
		o.PerWebhook = max(1, o.Workers/4)
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Lease <= 0 {
		o.Lease = 2*o.Timeout + 10*time.Second
	}
	if o.Owner == "" {
		o.Owner = domain.NewID("dsp")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Dispatcher{d: d, opts: o, log: o.Logger, perHook: map[string]int{}, freed: make(chan struct{}, 1)}
}

// Run dispatches until ctx ends. Then it stops claiming, lets the attempts
// in flight finish (each bounded by the sender's timeout) and record their
// outcome, and returns.
func (x *Dispatcher) Run(ctx context.Context) error {
	local, unsubscribe := x.d.Wake.Subscribe()
	defer unsubscribe()
	var remote <-chan struct{}
	if c, err := x.d.Watcher.WatchDeliveries(ctx); err != nil {
		x.log.Warn("webhook dispatcher: no notifications from other processes; polling", "error", err.Error())
	} else {
		remote = c
	}
	onlyFreed := false
	for ctx.Err() == nil {
		// While working through a backlog, a worker coming free does not
		// claim on its own: the claim waits until a quarter of the pool is
		// free, so that claims come in batches rather than one statement
		// per delivery. New work (a commit, a notification, a retry falling
		// due, the poll) claims at once.
		if (!onlyFreed || x.worthClaiming()) && x.claim(ctx) {
			onlyFreed = false
			continue
		}
		timer := x.d.After(x.untilNextWake())
		onlyFreed = false
		select {
		case <-ctx.Done():
		case <-local:
		case _, ok := <-remote:
			if !ok {
				remote = nil
			}
		case <-x.freed:
			onlyFreed = true
		case <-timer:
		}
	}
	x.wg.Wait()
	return nil
}

// worthClaiming reports whether a claim made only because workers came free
// is worth its statement: there was no backlog at the last claim, or enough
// workers are free to take a batch.
func (x *Dispatcher) worthClaiming() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return !x.backlog || x.opts.Workers-x.inFlight >= max(1, x.opts.Workers/4)
}

// untilNextWake is the time until the earliest retry this dispatcher
// scheduled that has not been claimed for yet, bounded by the poll interval.
func (x *Dispatcher) untilNextWake() time.Duration {
	x.mu.Lock()
	defer x.mu.Unlock()
	wait := x.opts.PollInterval
	if len(x.retries) > 0 {
		wait = min(wait, max(x.retries[0].Sub(x.d.Clock.Now()), 0))
	}
	return wait
}

// claim leases as many due deliveries as there are free workers and starts
// an attempt for each. It reports whether there may be more due at once.
func (x *Dispatcher) claim(ctx context.Context) bool {
	now := x.d.Clock.Now()
	x.mu.Lock()
	// This claim picks up every retry due by now.
	for len(x.retries) > 0 && !x.retries[0].After(now) {
		heap.Pop(&x.retries)
	}
	free := x.opts.Workers - x.inFlight
	var skip []string
	for id, n := range x.perHook {
		if n >= x.opts.PerWebhook {
			skip = append(skip, id)
		}
	}
	x.mu.Unlock()
	if free <= 0 {
		return false
	}
	claimed, err := x.d.Deliveries.ClaimDeliveries(ctx, ports.ClaimRequest{
		Owner: x.opts.Owner, Now: now, LeaseUntil: now.Add(x.opts.Lease), Limit: free, SkipWebhooks: skip,
	})
	if err != nil {
		if ctx.Err() == nil {
			x.log.Error("webhook dispatcher: claiming deliveries failed", "error", err.Error())
		}
		return false
	}
	var over []string
	for _, c := range claimed {
		wh := c.Delivery.WebhookID
		x.mu.Lock()
		if x.perHook[wh] >= x.opts.PerWebhook {
			x.mu.Unlock()
			over = append(over, c.Delivery.ID)
			continue
		}
		x.perHook[wh]++
		x.inFlight++
		x.wg.Add(1)
		x.mu.Unlock()
		go x.attempt(context.WithoutCancel(ctx), c)
	}
	if len(over) > 0 {
		// Deliveries of a webhook at its cap go back at once, so that any
		// dispatcher with room may take them; the next claim skips that
		// webhook.
		if err := x.d.Deliveries.ReleaseDeliveries(context.WithoutCancel(ctx), x.opts.Owner, over); err != nil {
			x.log.Error("webhook dispatcher: releasing deliveries failed", "error", err.Error())
		}
	}
	x.mu.Lock()
	x.backlog = len(claimed) == free
	x.mu.Unlock()
	return len(claimed) == free || len(over) > 0
}

// attempt makes one attempt of a claimed delivery and records its outcome.
// It runs on a context that shutdown does not cancel: an attempt in flight
// is bounded by the sender's timeout, not cut short.
func (x *Dispatcher) attempt(ctx context.Context, c ports.Dispatch) {
	defer x.done(c.Delivery.WebhookID)
	d := c.Delivery
	var out domain.Outcome
	if d.WindowClosed(x.d.Clock.Now(), x.opts.Policy) {
		// Paused past its window (its webhook was inactive): no attempt may
		// start any more.
		out = domain.Outcome{Delivery: d.Fail("The retry window closed before the next attempt.")}
	} else {
		secrets := domain.SigningSecrets(c.Secret, c.PreviousSecret, c.PreviousSecretExpiresAt, x.d.Clock.Now())
		a := ports.WebhookAttempt{
			URL: c.URL, Secret: secrets[0], EventID: d.EventID, EventType: d.EventType,
			Attempt: d.Attempts + 1, Body: c.Payload,
		}
		if len(secrets) > 1 {
			a.PreviousSecret = secrets[1]
		}
		res := x.d.Sender.Send(ctx, a)
		out = d.RecordAttempt(res, x.d.Clock.Now(), x.opts.Policy)
		level := slog.LevelDebug
		if !res.Succeeded() {
			level = slog.LevelWarn
		}
		x.log.Log(ctx, level, "webhook attempt", "delivery_id", d.ID, "webhook_id", d.WebhookID, "event_id", d.EventID,
			"attempt", d.Attempts+1, "status_code", res.StatusCode, "error", res.Err, "outcome", string(out.Delivery.Status))
	}
	x.record(ctx, out)
}

// record writes an outcome, and on a 410 deactivates the webhook and fails
// its other pending deliveries. If it cannot be written the lease lapses and
// the attempt is made again: at least once.
func (x *Dispatcher) record(ctx context.Context, out domain.Outcome) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d := out.Delivery
	var err error
	if !out.DeactivateWebhook {
		// One statement: no transaction round trips on the common path.
		_, err = x.d.Deliveries.FinishDelivery(ctx, d, x.opts.Owner)
	} else {
		err = x.deactivate(ctx, d)
	}
	if err != nil {
		x.log.Error("webhook dispatcher: recording an attempt failed; it will be retried when its lease lapses",
			"delivery_id", d.ID, "error", err.Error())
		return
	}
	if d.Status == domain.DeliveryPending && d.NextAttemptAt != nil {
		x.mu.Lock()
		heap.Push(&x.retries, *d.NextAttemptAt)
		x.mu.Unlock()
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
func (x *Dispatcher) done(webhookID string) {
	x.mu.Lock()
	x.inFlight--
	if x.perHook[webhookID]--; x.perHook[webhookID] <= 0 {
		delete(x.perHook, webhookID)
	}
	x.mu.Unlock()
	select {
	case x.freed <- struct{}{}:
	default:
	}
	x.wg.Done()
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
