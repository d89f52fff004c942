package app

import (
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
	// PerWorkspace bounds the attempts in flight of one workspace's
	// webhooks, so that one workspace's dead receivers or backlog hold at
	// most this share of the workers whatever its number of webhooks.
	// Default Workers/4, at least 1.
	PerWorkspace int
	// PerWebhook bounds the attempts in flight to one webhook, so that a slow
	// or dead receiver holds at most this share of its workspace's. Default
	// PerWorkspace/2, at least 1: 16 in flight keep up with a fast
	// receiver, and a dead one leaves its workspace's other webhooks half
	// of its share.
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
	// Pace is the least time between two claims made for commits, and
	// between two writes of outcomes: under a stream of writes each
	// statement takes what arrived since the last, so the claims and
	// outcome writes a second stay few however many deliveries there are.
	// A commit after a quiet spell still waits only Coalesce. Workers
	// coming free for a backlog (a webhook, workspace or the pool at its
	// cap) wait only a quarter of the pace since the last claim: a
	// webhook's cap would otherwise bound its attempts to PerWebhook per
	// pace. Default 0: no pace.
	Pace time.Duration
	// Owner names this dispatcher in leases. Default a fresh random id.
	Owner string
	// Logger reports failures to reach the database. Default slog.Default().
	Logger *slog.Logger
	// DisableAfter is how long every attempt to a webhook must have failed
	// (with at least domain.MinFailedAttempts of them) before it is
	// disabled: WORKTRACK_WEBHOOK_DISABLE_AFTER. Default 72h.
	DisableAfter time.Duration
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

	mu      sync.Mutex // guards adm and retries
	adm     *admission
	retries retryTimes // retries this dispatcher scheduled
	freed   chan struct{}
	wg      sync.WaitGroup
	// finishes carries attempt outcomes to the one goroutine that writes
	// them, many per statement (finishLoop).
	finishes chan domain.Outcome
	// events records the webhook.disabled events, over the dispatcher's
	// own stores; audit their audit records.
	events *outbox
	audit  auditLog
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
	// Clock decides what is due; After waits (nil: time.After), so that
	// tests can run the schedule on a fake clock.
	Clock ports.Clock
	After func(time.Duration) <-chan time.Time
	// EventLog, Payloads and IDs record the webhook.disabled event of a
	// webhook it disables, in the transaction that disables it (Logged
	// wakes the live feed after it commits).
	EventLog ports.EventStore
	Payloads ports.PayloadRenderer
	IDs      ports.IDGenerator
	Logged   *Signal
	// Audit records a webhook it disables in the audit log, in the same
	// transaction.
	Audit ports.AuditStore
}

// DispatcherDeps are the ports of a dispatcher over this app's stores,
// woken by this app's commits, sending with sender and told of other
// processes' commits by watcher. A deployment replaces the stores with ones
// over a database pool of the dispatcher's own, so that claims and outcomes
// never queue behind API requests for a connection, nor API requests behind
// them.
func (a *App) DispatcherDeps(sender ports.WebhookSender, watcher ports.DeliveryWatcher) DispatcherDeps {
	return DispatcherDeps{
		Tx: a.tx, Deliveries: a.deliveries, Webhooks: a.webhooks, Sender: sender, Watcher: watcher,
		Wake: a.wake, Clock: a.clock, After: time.After,
		EventLog: a.eventLog, Payloads: a.payloads, IDs: a.ids, Logged: a.logged, Audit: a.audit.store,
	}
}

// NewDispatcher makes a dispatcher; zero options get their defaults.
func NewDispatcher(d DispatcherDeps, o DispatcherOptions) *Dispatcher {
	mustHave(map[string]any{
		"Tx": d.Tx, "Deliveries": d.Deliveries, "Webhooks": d.Webhooks, "Sender": d.Sender,
		"Watcher": d.Watcher, "Clock": d.Clock, "EventLog": d.EventLog, "Payloads": d.Payloads, "IDs": d.IDs,
		"Audit": d.Audit,
	})
	if d.Wake == nil || d.Logged == nil {
		panic("app: the dispatcher needs Wake and Logged")
	}
	if o.DisableAfter <= 0 {
		o.DisableAfter = domain.DefaultDisableAfter
	}
	if d.After == nil {
		d.After = time.After
	}
	if o.Workers <= 0 {
		o.Workers = 128
	}
	if o.PerWorkspace <= 0 {
		o.PerWorkspace = max(1, o.Workers/4)
	}
	if o.PerWebhook <= 0 {
		o.PerWebhook = max(1, o.PerWorkspace/2)
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
		d: d, opts: o, log: o.Logger, adm: newAdmission(o.Workers, o.PerWebhook, o.PerWorkspace), freed: make(chan struct{}, 1),
		finishes: make(chan domain.Outcome, o.Workers),
		events: &outbox{
			ids: d.IDs, events: d.EventLog, deliveries: d.Deliveries,
			payloads: d.Payloads, wake: d.Wake, logged: d.Logged,
		},
		audit: auditLog{store: d.Audit, ids: d.IDs, clock: d.Clock},
	}
}

// Run dispatches until ctx ends. Then it stops claiming, lets the attempts
// in flight finish (each bounded by the sender's timeout) and record their
// outcome, and returns. A Dispatcher runs once.
func (x *Dispatcher) Run(ctx context.Context) error {
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		x.finishLoop(context.WithoutCancel(ctx), ctx.Done())
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
	var claimed time.Time // when the last claim was made
	for ctx.Err() == nil {
		// While working through a backlog, a worker coming free does not
		// claim on its own: the claim waits until a quarter of the pool is
		// free, so that claims come in batches rather than one statement
		// per delivery. New work (a commit, a notification, a retry falling
		// due, the poll) claims at once.
		if !onlyFreed || x.worthClaiming() {
			claimed = time.Now()
			if x.claim(ctx) {
				onlyFreed = false
				continue
			}
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
		if wait := max(x.opts.Coalesce, x.opts.Pace-time.Since(claimed)); commit && wait > 0 {
			x.pace(ctx, wait, claimed)
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
	ids := x.adm.inFlightIDs()
	x.mu.Unlock()
	return x.d.Deliveries.ReleaseDeliveries(ctx, x.opts.Owner, ids)
}

// pace waits before a claim that commits asked for, so that the commits
// made meanwhile are claimed by the same statement. Workers coming free in
// a batch's worth for the backlog the last claim left (backlogBatchFree)
// shorten the wait to a quarter of the pace since the last claim (made at
// claimed):
// otherwise, under a stream of writes, a webhook with more due than its cap
// got at most PerWebhook attempts per pace however fast its receiver
// answered (16 per 20 ms, 800 a second, in the server); the quarter still
// spaces such claims.
func (x *Dispatcher) pace(ctx context.Context, wait time.Duration, claimed time.Time) {
	timer := x.d.After(wait)
	var soon <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer:
			return
		case <-soon:
			return
		case <-x.freed:
			if soon != nil {
				continue
			}
			x.mu.Lock()
			batch := x.adm.backlogBatchFree()
			x.mu.Unlock()
			if !batch {
				continue
			}
			least := x.opts.Pace/4 - time.Since(claimed) // from now, not from the wait's start
			if least <= 0 {
				return
			}
			soon = x.d.After(least)
		}
	}
}

// worthClaiming reports whether a claim made only because workers came free
// is worth its statement (admission.worthClaiming).
func (x *Dispatcher) worthClaiming() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.adm.worthClaiming()
}

// untilNextWake is the time until the earliest retry this dispatcher
// scheduled that has not been claimed for yet, bounded by the poll interval.
func (x *Dispatcher) untilNextWake() time.Duration {
	x.mu.Lock()
	defer x.mu.Unlock()
	wait := x.opts.PollInterval
	if next, ok := x.retries.next(); ok {
		wait = min(wait, max(next.Sub(x.d.Clock.Now()), 0))
	}
	return wait
}

// claim leases as many due deliveries as there are free workers and starts
// an attempt for each: room, claim, admit, release what does not fit. It
// reports whether there may be more due at once.
func (x *Dispatcher) claim(ctx context.Context) bool {
	now := x.d.Clock.Now()
	x.mu.Lock()
	x.retries.dropDue(now) // this claim picks up every retry due by now
	room := x.adm.room()
	x.mu.Unlock()
	if room.free <= 0 {
		return false
	}
	// The store takes no more of a webhook than its room, so that a claim
	// during one webhook's backlog does not lease what must be released.
	claimed, err := x.d.Deliveries.ClaimDeliveries(ctx, x.adm.request(room, x.opts.Owner, now, now.Add(x.opts.Lease)))
	if err != nil {
		if ctx.Err() == nil {
			x.log.Error("webhook dispatcher: claiming deliveries failed", "error", err.Error())
		}
		return false
	}
	x.mu.Lock()
	admitted, over := x.adm.admit(claimed, room)
	x.wg.Add(len(admitted))
	x.mu.Unlock()
	for _, c := range admitted {
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
	return len(claimed) == room.free || len(over) > 0
}

// attempt makes one attempt of a claimed delivery and records its outcome.
// It runs on a context that shutdown does not cancel: an attempt in flight
// is bounded by the sender's timeout, not cut short.
func (x *Dispatcher) attempt(ctx context.Context, c ports.Dispatch) {
	defer x.done(c.Delivery)
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
			Attempt: d.Attempts + 1, Body: c.Payload, Headers: c.Headers,
			WorkspaceID: d.WorkspaceID, WebhookID: d.WebhookID, DeliveryID: d.ID, TraceParent: c.TraceParent,
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
