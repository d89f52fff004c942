package app_test

import (
	"context"
	"sync"
	"testing"

	"github.com/worktrack/worktrack/cmd/worktrack/wiring"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/app"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func newApp(db *store.DB) *app.App { return wiring.App(db, wiring.Core{}) }

// Servers starting together on an empty database bootstrap it exactly once:
// one workspace, one admin, one key, one secret printed.
func TestBootstrapOnceUnderConcurrentStarts(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		const servers = 6
		var wg sync.WaitGroup
		created := make(chan string, servers)
		errs := make(chan error, servers)
		start := make(chan struct{})
		for i := 0; i < servers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ok, _, secret, err := newApp(db).Admin.Bootstrap(context.Background(), "admin@example.com")
				if err != nil {
					errs <- err
				}
				if ok {
					created <- secret
				}
			}()
		}
		close(start)
		wg.Wait()
		close(created)
		close(errs)
		for err := range errs {
			t.Errorf("bootstrap: %v", err)
		}
		if n := len(created); n != 1 {
			t.Fatalf("bootstrapped %d times, want once", n)
		}
		if n, _ := db.Workspaces().CountWorkspaces(context.Background()); n != 1 {
			t.Fatalf("%d workspaces, want 1", n)
		}
		if ok, _, _, err := newApp(db).Admin.Bootstrap(context.Background(), "admin@example.com"); ok || err != nil {
			t.Fatalf("a later start bootstrapped again: %v %v", ok, err)
		}
	})
}
