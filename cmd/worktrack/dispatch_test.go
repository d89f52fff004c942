package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
)

// The dispatcher's own PostgreSQL pool tags its notifications like the
// API's, so that the API's commits (after which the core wakes the
// dispatcher in process) do not wake it a second time through the
// database; the store's TestPostgresWatchDeliveries shows that handles of
// one origin do not hear each other.
func TestDispatcherPoolSharesTheAPIsOrigin(t *testing.T) {
	u := storetest.PostgresURL(t)
	ctx := context.Background()
	db, err := store.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ddb, closeDB := dispatcherDB(ctx, db, Config{DatabaseURL: u}, slog.New(slog.DiscardHandler))
	defer closeDB()
	if ddb == db {
		t.Fatal("the dispatcher got no pool of its own")
	}
	if ddb.Origin() != db.Origin() || db.Origin() == "" {
		t.Fatalf("the dispatcher's pool has origin %q, the API's %q", ddb.Origin(), db.Origin())
	}
}
