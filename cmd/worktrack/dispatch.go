package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// startDispatcher runs the webhook dispatcher of `serve` until ctx ends
// (SIGTERM) or the returned stop is called. stop waits until the dispatcher
// has returned: it stops claiming, and the attempts in flight finish
// (bounded by WORKTRACK_WEBHOOK_TIMEOUT) and record their outcome before the
// database is closed.
//
// On PostgreSQL the dispatcher gets a small connection pool of its own
// (dispatcherConns): its claims and outcome writes then never wait for a
// connection behind API requests, nor API requests behind them. SQLite
// keeps one pool: its writes are serialised anyway, and a second pool on
// an in-memory database would be another database.
func startDispatcher(ctx context.Context, a *app.App, db *store.DB, cfg Config, log *slog.Logger) (stop func()) {
	ddb, closeDB := dispatcherDB(ctx, db, cfg, log)
	sender := webhook.NewSender(webhook.SenderOptions{Timeout: cfg.WebhookTimeout, AllowPrivate: cfg.WebhookAllowPrivate})
	stores := app.DispatcherStores{Tx: ddb, Deliveries: ddb.Deliveries(), Webhooks: ddb.Webhooks()}
	d := a.NewDispatcherOn(stores, sender, ddb, app.DispatcherOptions{
		Policy: domain.RetryPolicy{
			Base: cfg.WebhookBackoffBase, Max: cfg.WebhookBackoffMax, Window: cfg.WebhookRetryWindow,
			Jitter: domain.EqualJitter,
		},
		Timeout: cfg.WebhookTimeout,
		// A few milliseconds of the first attempt's latency buy one claim
		// per burst of commits instead of one per commit.
		Coalesce: dispatchCoalesce,
		Logger:   log,
	})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
		log.Info("webhook dispatcher stopped")
	}()
	return func() {
		cancel()
		<-done
		closeDB()
	}
}

// dispatchCoalesce is how long the dispatcher gathers commits before
// claiming their deliveries.
const dispatchCoalesce = 5 * time.Millisecond

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
	ddb, err := store.Open(ctx, cfg.DatabaseURL, store.WithMaxOpenConns(dispatcherConns))
	if err != nil {
		log.Warn("webhook dispatcher: no connection pool of its own; sharing the API's", "error", err.Error())
		return db, func() {}
	}
	return ddb, func() { _ = ddb.Close() }
}
