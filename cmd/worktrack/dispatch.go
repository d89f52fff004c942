package main

import (
	"context"
	"log/slog"

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
func startDispatcher(ctx context.Context, a *app.App, db *store.DB, cfg Config, log *slog.Logger) (stop func()) {
	sender := webhook.NewSender(webhook.SenderOptions{Timeout: cfg.WebhookTimeout, AllowPrivate: cfg.WebhookAllowPrivate})
	d := a.NewDispatcher(sender, db, app.DispatcherOptions{
		Policy: domain.RetryPolicy{
			Base: cfg.WebhookBackoffBase, Max: cfg.WebhookBackoffMax, Window: cfg.WebhookRetryWindow,
			Jitter: domain.EqualJitter,
		},
		Timeout: cfg.WebhookTimeout,
		Logger:  log,
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
	}
}
