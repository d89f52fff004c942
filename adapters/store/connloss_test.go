package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
)

// onePostgresConnection opens a fresh, migrated PostgreSQL schema (its URL
// returned too) through a pool of one connection, with a context bounding
// the test.
func onePostgresConnection(t *testing.T) (context.Context, string, *store.DB) {
	t.Helper()
	u := storetest.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	db, err := store.Open(ctx, u, store.WithMaxOpenConns(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return ctx, u, db
}

// A PostgreSQL restart terminates every pooled session: the server sends
// FATAL 57P01 (admin_shutdown) on each, and the next statement on that
// connection fails with it. That is a lost connection, not a fault of the
// statement: clients must get 503 service_unavailable, never a 500.
func TestTerminatedSessionIsServiceUnavailable(t *testing.T) {
	// One connection, so the statement after the termination must run on
	// the terminated session.
	ctx, u, db := onePostgresConnection(t)
	admin, err := store.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	ws := newWorkspace(t, db)
	task := newTask(t, db, newProject(t, db, ws, "TERM", base), domain.TaskFields{Title: domain.Set("t")}, base)
	// Both ways a statement reaches PostgreSQL: through GORM, and the task
	// reads' own path on the connection's pgx.Conn (DB.read).
	for name, statement := range map[string]func() error{
		"gorm": func() error { _, err := db.Workspaces().FindWorkspaceByID(ctx, ws.ID); return err },
		"pgx":  func() error { _, err := db.Tasks().FindTaskByID(ctx, ws.ID, task.ID); return err },
	} {
		t.Run(name, func(t *testing.T) {
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

			err := statement()
			if err == nil {
				t.Fatal("a statement on a terminated session succeeded; the test did not reach the lost connection")
			}
			if e, ok := domain.AsError(err); !ok || e.Code != domain.CodeUnavailable {
				t.Fatalf("statement on a terminated session: %v; want code %s", err, domain.CodeUnavailable)
			}

			// The pool recovers by itself: the next statement opens a new session.
			if err := statement(); err != nil {
				t.Fatalf("after the lost connection: %v", err)
			}
		})
	}
}

// A statement whose context ends mid-statement (a client that disconnected)
// does not cost the pool its connection, in a transaction or outside one:
// the statement is cancelled on the server and the session is used again.
// pgx's default closed the connection, and a transaction's rollback under
// the cancelled context could not be sent, which closed it too: under load
// every disconnecting client cost a new PostgreSQL session
// (docs/api.md#under-load-and-faults: no broken connection left behind, no
// churn).
func TestCancelledStatementKeepsItsSession(t *testing.T) {
	// One connection: every statement runs on the same session unless it
	// was closed.
	ctx, u, db := onePostgresConnection(t)
	ws := newWorkspace(t, db)
	pid := func() int {
		t.Helper()
		var pid int
		if err := db.Gorm().WithContext(ctx).Raw("SELECT pg_backend_pid()").Scan(&pid).Error; err != nil {
			t.Fatal(err)
		}
		return pid
	}
	sqlDB, err := db.Gorm().DB()
	if err != nil {
		t.Fatal(err)
	}
	sessions := func() int { return sqlDB.Stats().OpenConnections }
	first := pid()

	t.Run("a read", func(t *testing.T) {
		cctx, ccancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer ccancel()
		err := db.Gorm().WithContext(cctx).Exec("SELECT pg_sleep(5)").Error
		if err == nil {
			t.Fatal("pg_sleep(5) under a 20 ms context succeeded")
		}
		if got := pid(); got != first || sessions() != 1 {
			t.Fatalf("after a cancelled read the pool has session %d (%d open); want %d, the one it had", got, sessions(), first)
		}
	})

	t.Run("a task read on the connection's pgx.Conn", func(t *testing.T) {
		task := newTask(t, db, newProject(t, db, ws, "LOCKED", base), domain.TaskFields{Title: domain.Set("t")}, base)
		// Another session holds the table, so the read waits on the server
		// until its context ends.
		locker, err := store.Open(ctx, u, store.WithMaxOpenConns(1))
		if err != nil {
			t.Fatal(err)
		}
		defer locker.Close()
		release := make(chan struct{})
		locked := make(chan error, 1)
		go func() {
			_ = locker.InTx(ctx, func(ctx context.Context) error {
				err := locker.Conn(ctx).Exec("LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE").Error
				locked <- err
				if err == nil {
					<-release
				}
				return errors.New("roll back")
			})
		}()
		if err := <-locked; err != nil {
			t.Fatal(err)
		}
		cctx, ccancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer ccancel()
		_, err = db.Tasks().FindTaskByID(cctx, ws.ID, task.ID)
		close(release)
		if err == nil {
			t.Fatal("a task read under a 50 ms context, on a locked table, succeeded")
		}
		if got := pid(); got != first || sessions() != 1 {
			t.Fatalf("after a cancelled task read the pool has session %d (%d open); want %d, the one it had", got, sessions(), first)
		}
		if got, err := db.Tasks().FindTaskByID(ctx, ws.ID, task.ID); err != nil || got.ID != task.ID {
			t.Fatalf("the read after the cancelled one: %v, %v", got.ID, err)
		}
	})

	t.Run("a write in a transaction", func(t *testing.T) {
		p := makeProject(t, ws, "GONE", base)
		cctx, ccancel := context.WithCancel(ctx)
		defer ccancel()
		err := db.InTx(cctx, func(ctx context.Context) error {
			if err := db.Projects().CreateProject(ctx, p); err != nil {
				return err
			}
			time.AfterFunc(20*time.Millisecond, ccancel)
			return db.Conn(ctx).Exec("SELECT pg_sleep(5)").Error
		})
		if err == nil {
			t.Fatal("a transaction whose context was cancelled mid-statement committed")
		}
		if got := pid(); got != first || sessions() != 1 {
			t.Fatalf("after a cancelled transaction the pool has session %d (%d open); want %d, the one it had", got, sessions(), first)
		}
		// Rolled back: nothing of it is visible.
		if _, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID); err == nil {
			t.Fatal("the cancelled transaction's project exists")
		}
	})

	// A client that went away between two of its request's statements:
	// the next statement starts under an ended context. It must fail with
	// the context's error and leave the session alone. Were it to reach
	// pgx's database/sql adapter, the adapter would answer it as a bad
	// connection (nothing was sent), and database/sql would close the
	// session and one more; database/sql checks the context first.
	t.Run("statements whose context ended before they started", func(t *testing.T) {
		cctx, ccancel := context.WithCancel(ctx)
		ccancel()
		p := makeProject(t, ws, "LATE", base)
		for name, run := range map[string]func() error{
			"raw":    func() error { return db.Gorm().WithContext(cctx).Exec("SELECT 1").Error },
			"create": func() error { return db.Projects().CreateProject(cctx, p) },
			"query": func() error {
				var n int64
				return db.Gorm().WithContext(cctx).Table("projects").Count(&n).Error
			},
			"in a transaction": func() error {
				return db.InTx(ctx, func(context.Context) error { return db.Projects().CreateProject(cctx, p) })
			},
		} {
			if err := run(); !errors.Is(err, context.Canceled) {
				t.Fatalf("%s under an ended context: %v, want context.Canceled", name, err)
			}
			if got := pid(); got != first || sessions() != 1 {
				t.Fatalf("after a %s under an ended context the pool has session %d (%d open); want %d, the one it had", name, got, sessions(), first)
			}
		}
		if _, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID); err == nil {
			t.Fatal("a project created under an ended context exists")
		}
	})

	// Clients that go away at any point of a write, BEGIN included: pgx's
	// database/sql adapter ends a transaction under the context it began
	// with, and closes the connection if that context has ended. So
	// whenever the cancel lands, the session must stay.
	t.Run("transactions cancelled at any point", func(t *testing.T) {
		cancelled := 0
		for i := range 300 {
			p := makeProject(t, ws, fmt.Sprintf("ANY%d", i), base)
			cctx, ccancel := context.WithCancel(ctx)
			// Cancels spread over the first 1.5 ms, a transaction's length.
			time.AfterFunc(time.Duration(i*5)*time.Microsecond, ccancel)
			if err := db.InTx(cctx, func(ctx context.Context) error {
				return db.Projects().CreateProject(ctx, p)
			}); err != nil {
				// A cancel that lands between database/sql's look at the
				// context and pgx's reads as a bad connection
				// (service_unavailable); the edge logs any failure of a
				// request whose client has gone as 499.
				if cctx.Err() == nil {
					t.Fatalf("transaction %d, not cancelled, failed: %v", i, err)
				}
				cancelled++
			}
			ccancel()
			if got := pid(); got != first || sessions() != 1 {
				t.Fatalf("after transaction %d (cancelled after %d µs) the pool has session %d (%d open); want %d, the one it had",
					i, i*5, got, sessions(), first)
			}
		}
		if cancelled == 0 {
			t.Fatal("no transaction was cancelled: the test did not test anything")
		}
		t.Logf("%d of 300 transactions cancelled", cancelled)
	})

	t.Run("a transaction cancelled between statements", func(t *testing.T) {
		p := makeProject(t, ws, "GONE2", base)
		cctx, ccancel := context.WithCancel(ctx)
		err := db.InTx(cctx, func(ctx context.Context) error {
			if err := db.Projects().CreateProject(ctx, p); err != nil {
				return err
			}
			ccancel()
			return nil
		})
		if err == nil {
			t.Fatal("a transaction whose context was cancelled before its commit committed")
		}
		if got := pid(); got != first {
			t.Fatalf("after a transaction cancelled before its commit the pool has session %d; want %d", got, first)
		}
		if _, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID); err == nil {
			t.Fatal("the cancelled transaction's project exists")
		}
	})
}

// A pooled connection whose socket died before a task read was sent (the
// server or a proxy closed it while it sat idle) costs the read nothing: as
// database/sql does for GORM's statements, the read on the connection's
// pgx.Conn is tried again on a new connection, and the dead one is dropped.
func TestTaskReadRetriesOnAConnectionThatDiedInThePool(t *testing.T) {
	ctx, _, db := onePostgresConnection(t)
	ws := newWorkspace(t, db)
	task := newTask(t, db, newProject(t, db, ws, "DEAD", base), domain.TaskFields{Title: domain.Set("t")}, base)
	// Close the socket under pgx, which does not notice until it writes.
	onPooledConn(ctx, t, db, func(c *pgx.Conn) { _ = c.PgConn().Conn().Close() })

	got, err := db.Tasks().FindTaskByID(ctx, ws.ID, task.ID)
	if err != nil || got.ID != task.ID {
		t.Fatalf("a task read on a connection that died in the pool: %v, %v", got.ID, err)
	}
	sqlDB, err := db.Gorm().DB()
	if err != nil {
		t.Fatal(err)
	}
	if n := sqlDB.Stats().OpenConnections; n != 1 {
		t.Fatalf("%d connections open after the retry, want 1", n)
	}
}

// onPooledConn runs fn on the pgx connection under one of db's pooled
// PostgreSQL connections, which goes back to the pool afterwards.
func onPooledConn(ctx context.Context, t *testing.T, db *store.DB, fn func(*pgx.Conn)) {
	t.Helper()
	sqlDB, err := db.Gorm().DB()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if err := conn.Raw(func(dc any) error { fn(dc.(*stdlib.Conn).Conn()); return nil }); err != nil {
		t.Fatal(err)
	}
}
