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
	// Workers bounds the attempts in flight at once. Default 128: an
	// attempt mostly waits on the network, so workers are cheap.
	Workers int
	// PerWebhook bounds the attempts in flight to one webhook, so that a slow
	// or dead receiver holds at most this share of the workers. Default
	// Workers/4, at least 1: 32 in flight keep up with a fast receiver, and
	// three slow ones still leave a quarter of the pool to the rest.
	PerWebhook int
	// PollInterval is the fallback for wake-ups that cannot be signalled
	// (another process's expired lease, a lost notification). Default 1s.
	PollInterval time.Duration
	// Lease is how long a claimed delivery stays reserved to this
	// dispatcher; a crashed process's claims lapse after it. Default
	// 2×Timeout + 10s.
	Lease time.Duration
	// Coalesce is how long a wake-up by a commit waits before claiming, so
	// that the deliveries of the commits made meanwhile are claimed by the
	// same statement: under a stream of writes, one claim every few
	// milliseconds instead of one per commit (each scanning the due
	// deliveries). Default 0: claim at once.
	Coalesce time.Duration
	// Owner names this dispatcher in leases. Default a fresh random id.
	Owner string
	// Logger reports failures to reach the database. Default slog.Default().
	Logger *slog.Logger
	// OnAttempt, when set, is told of every attempt's outcome: the
	// delivery as the attempt left it (succeeded, failed for good, or
	// pending with a retry scheduled). Metrics count them.
	OnAttempt func(domain.Delivery)
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
	attempts map[string]struct{} // the deliveries of the attempts in flight
	perHook  map[string]int
	retries  timeHeap // retries this dispatcher scheduled, earliest first
	backlog  bool     // the last claim took all it asked for: more may be due
	// backlogHooks are the webhooks the last claim took all their room of.
	backlogHooks map[string]bool
	freed        chan struct{}
	wg           sync.WaitGroup
	// finishes carries attempt outcomes to the one goroutine that writes
	// them, many per statement (finishLoop).
	finishes chan domain.Delivery
}

// maxFinishBatch bounds the outcomes written by one statement.
const maxFinishBatch = 256

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
	return a.NewDispatcherOn(DispatcherStores{Tx: a.tx, Deliveries: a.deliveries, Webhooks: a.webhooks}, sender, watcher, o)
}

// DispatcherStores are the ports a dispatcher reads and writes deliveries
// and webhooks through. A deployment gives the dispatcher stores over a
// database pool of its own, so that claims and outcomes never queue behind
// API requests for a connection, nor API requests behind them.
type DispatcherStores struct {
	Tx         ports.Transactor
	Deliveries ports.DeliveryStore
	Webhooks   ports.WebhookStore
}

// NewDispatcherOn is NewDispatcher over the given stores, woken by this
// app's commits.
func (a *App) NewDispatcherOn(st DispatcherStores, sender ports.WebhookSender, watcher ports.DeliveryWatcher, o DispatcherOptions) *Dispatcher {
	return NewDispatcher(DispatcherDeps{
		Tx: st.Tx, Deliveries: st.Deliveries, Webhooks: st.Webhooks, Sender: sender, Watcher: watcher,
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
		o.Workers = 128
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
	return &Dispatcher{
		d: d, opts: o, log: o.Logger, perHook: map[string]int{}, attempts: map[string]struct{}{}, backlogHooks: map[string]bool{}, freed: make(chan struct{}, 1),
		finishes: make(chan domain.Delivery, o.Workers),
	}
}

// Run dispatches until ctx ends. Then it stops claiming, lets the attempts
// in flight finish (each bounded by the sender's timeout) and record their
// outcome, and returns. A Dispatcher runs once.
func (x *Dispatcher) Run(ctx context.Context) error {
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		x.finishLoop(context.WithoutCancel(ctx))
	}()
	defer func() {
		// Every attempt has handed over its outcome (wg); write the last.
		close(x.finishes)
		<-finished
	}()
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
		commit := false
		select {
		case <-ctx.Done():
		case <-local:
			commit = true
		case _, ok := <-remote:
			if !ok {
				remote = nil
			}
			commit = ok
		case <-x.freed:
			onlyFreed = true
		case <-timer:
		}
		if commit && x.opts.Coalesce > 0 {
			select {
			case <-ctx.Done():
			case <-x.d.After(x.opts.Coalesce):
			}
		}
	}
	x.wg.Wait()
	return nil
}

// Abandon gives back the leases of the attempts still in flight, for a
// shutdown that cannot wait for them (Run's context is cancelled and its
// time is up): other dispatchers may then claim those deliveries at once,
// rather than when the leases lapse. An attempt that still completes is
// not recorded (its finish no longer holds the lease), so its delivery is
// sent again: at least once.
func (x *Dispatcher) Abandon(ctx context.Context) error {
	x.mu.Lock()
	ids := make([]string, 0, len(x.attempts))
	for id := range x.attempts {
		ids = append(ids, id)
	}
	x.mu.Unlock()
	return x.d.Deliveries.ReleaseDeliveries(ctx, x.opts.Owner, ids)
}

// worthClaiming reports whether a claim made only because workers came free
// is worth its statement: there was no backlog at the last claim, or enough
// workers are free to take a batch.
func (x *Dispatcher) worthClaiming() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.backlog || x.opts.Workers-x.inFlight >= max(1, x.opts.Workers/4) {
		return true
	}
	for id := range x.backlogHooks {
		if x.opts.PerWebhook-x.perHook[id] >= max(1, x.opts.PerWebhook/4) {
			return true
		}
	}
	return false
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
	room := map[string]int{}
	for id, n := range x.perHook {
		if n >= x.opts.PerWebhook {
			skip = append(skip, id)
		} else {
			room[id] = x.opts.PerWebhook - n
		}
	}
	x.mu.Unlock()
	if free <= 0 {
		return false
	}
	// The store takes no more of a webhook than its room, so that a claim
	// during one webhook's backlog does not lease what must be released.
	claimed, err := x.d.Deliveries.ClaimDeliveries(ctx, ports.ClaimRequest{
		Owner: x.opts.Owner, Now: now, LeaseUntil: now.Add(x.opts.Lease), Limit: free, SkipWebhooks: skip,
		PerWebhook: x.opts.PerWebhook, Room: room,
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
		x.attempts[c.Delivery.ID] = struct{}{}
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
	// A webhook that got all the room it was offered may have more due:
	// the claim loop claims again for it once a batch's worth of its room
	// is free, rather than one statement per finished attempt.
	got := map[string]int{}
	for _, c := range claimed {
		got[c.Delivery.WebhookID]++
	}
	x.mu.Lock()
	clear(x.backlogHooks)
	for id, n := range got {
		r, ok := room[id]
		if !ok {
			r = x.opts.PerWebhook
		}
		if n >= r {
			x.backlogHooks[id] = true
		}
	}
	x.backlog = len(claimed) == free || len(x.backlogHooks) > 0
	x.mu.Unlock()
	return len(claimed) == free || len(over) > 0
}

// attempt makes one attempt of a claimed delivery and records its outcome.
// It runs on a context that shutdown does not cancel: an attempt in flight
// is bounded by the sender's timeout, not cut short.
func (x *Dispatcher) attempt(ctx context.Context, c ports.Dispatch) {
	defer x.done(c.Delivery.ID, c.Delivery.WebhookID)
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
	if x.opts.OnAttempt != nil {
		x.opts.OnAttempt(out.Delivery)
	}
	x.record(ctx, out)
}

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
			heap.Push(&x.retries, *d.NextAttemptAt)
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
func (x *Dispatcher) done(deliveryID, webhookID string) {
	x.mu.Lock()
	x.inFlight--
	delete(x.attempts, deliveryID)
	if x.perHook[webhookID]--; x.perHook[webhookID] <= 0 {
		delete(x.perHook, webhookID)
	}
	x.mu.Unlock()
	x.nudge()
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
