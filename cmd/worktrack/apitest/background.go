package apitest

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/ports"
)

// RunDispatcher delivers e's webhooks until the test ends, as `worktrack
// serve`'s dispatcher does, on e's clock (which it sets running): a real
// sender that allows private addresses (the tests' receivers listen on
// loopback), with o.Timeout (2 s when zero); o.Logger discards when nil.
func (e *Env) RunDispatcher(t testing.TB, o app.DispatcherOptions) {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	RunDispatcherOver(t, e, e.App, e.DB, webhook.NewSender(webhook.SenderOptions{Timeout: o.Timeout, AllowPrivate: true}), o)
}

// RunDispatcherOver is RunDispatcher over another core (a second process's),
// woken by watcher (that process's database handle), sending with sender.
func RunDispatcherOver(t testing.TB, e *Env, a *app.App, watcher ports.DeliveryWatcher, sender ports.WebhookSender, o app.DispatcherOptions) {
	t.Helper()
	e.Clock.Run()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	d := app.NewDispatcher(a.DispatcherDeps(sender, watcher), o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// StallWorkspace makes every query that db runs for workspaceID's requests
// (under its ports.DBScope) wait, while on is set, until release is closed
// or the statement's context ends (then it fails with that context's
// error); stalled counts the queries held. Tests hold a workspace's share
// of the database with it.
func StallWorkspace(t testing.TB, db *store.DB, workspaceID string, on *atomic.Bool, release <-chan struct{}, stalled *atomic.Int64) {
	t.Helper()
	err := db.Gorm().Callback().Query().Before("gorm:query").Register("apitest:stall-workspace", func(tx *gorm.DB) {
		scope, ok := ports.DBScopeOf(tx.Statement.Context)
		if !on.Load() || !ok || scope.WorkspaceID != workspaceID || tx.Error != nil {
			return
		}
		stalled.Add(1)
		select {
		case <-tx.Statement.Context.Done():
			_ = tx.AddError(tx.Statement.Context.Err())
		case <-release:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}
