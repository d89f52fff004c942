package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
)

// A PostgreSQL restart terminates every pooled session: the server sends
// FATAL 57P01 (admin_shutdown) on each, and the next statement on that
// connection fails with it. That is a lost connection, not a fault of the
// statement: clients must get 503 service_unavailable, never a 500.
func TestTerminatedSessionIsServiceUnavailable(t *testing.T) {
	u := storetest.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// One connection, so the statement after the termination must run on
	// the terminated session.
	db, err := store.Open(ctx, u, store.WithMaxOpenConns(1))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	admin, err := store.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	ws := newWorkspace(t, db)
	var pid int
	if err := db.Gorm().WithContext(ctx).Raw("SELECT pg_backend_pid()").Scan(&pid).Error; err != nil {
		t.Fatal(err)
	}
	var done bool
	if err := admin.Gorm().WithContext(ctx).Raw("SELECT pg_terminate_backend(?)", pid).Scan(&done).Error; err != nil || !done {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, done, err)
	}
	// Wait until the server has ended the session, so its FATAL is waiting.
	for {
		var n int
		if err := admin.Gorm().WithContext(ctx).Raw("SELECT count(*) FROM pg_stat_activity WHERE pid = ?", pid).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}

	_, err = db.Workspaces().FindWorkspaceByID(ctx, ws.ID)
	if err == nil {
		t.Fatal("a statement on a terminated session succeeded; the test did not reach the lost connection")
	}
	if e, ok := domain.AsError(err); !ok || e.Code != domain.CodeUnavailable {
		t.Fatalf("statement on a terminated session: %v; want code %s", err, domain.CodeUnavailable)
	}

	// The pool recovers by itself: the next statement opens a new session.
	if _, err := db.Workspaces().FindWorkspaceByID(ctx, ws.ID); err != nil {
		t.Fatalf("after the lost connection: %v", err)
	}
}
