package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/worktrack/worktrack/adapters/metrics"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// startDispatcher runs the webhook dispatcher of `serve` until the returned
// stop is called; SIGTERM does not stop it by itself, so that the deliveries
// of requests still finishing are claimed too. stop waits until the
// dispatcher has returned: it stops claiming, and the attempts in flight
// finish (bounded by WORKTRACK_WEBHOOK_TIMEOUT) and record their outcome
// before the database is closed. When stop's ctx ends first, stop gives the
// leases of the attempts still in flight back and returns: another
// dispatcher sends those deliveries again (at least once). Calls after the
// first do nothing.
//
// On PostgreSQL the dispatcher gets a small connection pool of its own
// (dispatcherConns): its claims and outcome writes then never wait for a
// connection behind API requests, nor API requests behind them. SQLite
// keeps one pool: its writes are serialised anyway, and a second pool on
// an in-memory database would be another database.
//
// That pool commits asynchronously (store.WithAsyncCommit): a lease or an
// outcome lost in a database crash means the attempt is made again, which
// at-least-once delivery allows, and the dispatcher's commits no longer wait
// for the disk beside the API's.
func startDispatcher(ctx context.Context, a *app.App, db *store.DB, cfg Config, log *slog.Logger, m *metrics.Metrics, tracing trace.TracerProvider) (stop func(context.Context)) {
	ddb, closeDB := dispatcherDB(ctx, db, cfg, log)
	if ddb != db {
		if sqlDB, err := ddb.Gorm().DB(); err == nil {
			m.WatchPool("dispatcher", sqlDB)
		}
	}
	sender := webhook.NewSender(webhook.SenderOptions{Timeout: cfg.WebhookTimeout, AllowPrivate: cfg.WebhookAllowPrivate, Tracing: tracing})
	deps := a.DispatcherDeps(sender, ddb)
	deps.Tx, deps.Deliveries, deps.Webhooks, deps.EventLog, deps.Audit = ddb, ddb.Deliveries(), ddb.Webhooks(), ddb.Events(), ddb.Audit()
	d := app.NewDispatcher(deps, app.DispatcherOptions{
		Policy: domain.RetryPolicy{
			Base: cfg.WebhookBackoffBase, Max: cfg.WebhookBackoffMax, Window: cfg.WebhookRetryWindow,
			Jitter: domain.EqualJitter,
		},
		Timeout:      cfg.WebhookTimeout,
		DisableAfter: cfg.WebhookDisableAfter,
		// A few milliseconds of the first attempt's latency buy one claim
		// per burst of commits instead of one per commit.
		Coalesce:  dispatchCoalesce,
		Pace:      dispatchPace,
		Logger:    log,
		OnAttempt: m.ObserveDelivery,
	})
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
		log.Info("webhook dispatcher stopped")
	}()
	var once sync.Once
	return func(wait context.Context) {
		once.Do(func() {
			cancel()
			select {
			case <-done:
				closeDB()
			case <-wait.Done():
				// Out of time: give the leases back, so that another
				// process sends those deliveries at once.
				rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				if err := d.Abandon(rctx); err != nil {
					log.Warn("webhook dispatcher: shutdown timeout ran out with attempts in flight; their deliveries will be sent again when their leases lapse", "error", err.Error())
				} else {
					log.Warn("webhook dispatcher: shutdown timeout ran out with attempts in flight; their leases were given back for another process to send them")
				}
			}
		})
	}
}

// dispatchCoalesce is how long the dispatcher gathers commits before
// claiming their deliveries.
const dispatchCoalesce = 5 * time.Millisecond

// dispatchPace is the least time between two claims for commits, and
// between two outcome writes: under a stream of creates with webhooks, a
// claim statement per delivery or two cost more database time than the
// delivery's own insert.
const dispatchPace = 20 * time.Millisecond

// dispatcherConns is the dispatcher's own PostgreSQL pool: one claim and
// one batched outcome write at a time need two; the rest cover a 410's
// transaction and a reconnect.
const dispatcherConns = 4

// dispatcherDB opens the dispatcher's pool on PostgreSQL; elsewhere, or if
// it cannot be opened, the dispatcher shares db.
func dispatcherDB(ctx context.Context, db *store.DB, cfg Config, log *slog.Logger) (*store.DB, func()) {
	if db.Dialect() != store.DialectPostgres {
		return db, func() {}
	}
	// One origin with db: the API's commits wake this process's dispatcher
	// in process, not again through the database.
	ddb, err := store.Open(ctx, cfg.DatabaseURL, store.WithMaxOpenConns(dispatcherConns), store.WithAsyncCommit(),
		store.WithSecrets(cfg.Secrets), store.WithOrigin(db.Origin()))
	if err != nil {
		log.Warn("webhook dispatcher: no connection pool of its own; sharing the API's", "error", err.Error())
		return db, func() {}
	}
	return ddb, func() { _ = ddb.Close() }
}
