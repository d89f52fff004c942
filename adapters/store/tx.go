package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/core/ports"
)

var _ ports.Transactor = (*DB)(nil)

// txKey carries a transaction of one DB in a context. Keying by DB keeps a
// transaction of one database from leaking into calls on another.
type txKey struct{ db *DB }

// InTx runs fn in one database transaction, carried in the context given to
// fn: every repository call made with that context joins it. An error (or a
// panic) from fn rolls everything back. A nested InTx joins the outer
// transaction; its error is returned to the outer fn, which decides.
func (db *DB) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Value(txKey{db}).(*gorm.DB); ok {
		return fn(ctx)
	}
	// A transaction holds one connection from BEGIN to COMMIT: it takes
	// its seats for all of it (its statements take none), then, on SQLite,
	// waits for the one writer in its workspace's turn. It holds its seats
	// while it waits: the seats bound the CPU that the workspace's work
	// takes, and on SQLite a write runs in this process; a write that took
	// the writer alone ran beside its workspace's whole share of reads
	// (docs/decisions.md).
	ctx, release, err := db.admit(ctx)
	if err != nil {
		return err
	}
	if release != nil {
		defer release()
	}
	release, err = db.takeWriter(ctx)
	if err != nil {
		return err
	}
	defer release()
	// The transaction itself (BEGIN, COMMIT, ROLLBACK) runs on a context
	// that ctx never cancels: pgx's database/sql adapter ends a transaction
	// under the context it began with, and closes the connection if that
	// context has ended. A caller that has gone by the time the transaction
	// holds its connection is noticed before fn runs; fn's statements run
	// under ctx, and a ctx that ends before the commit rolls everything
	// back, the connection kept.
	txCtx := context.WithoutCancel(ctx)
	// Begin and commit failures do not pass through GORM's statement
	// callbacks; a lost connection there is service_unavailable too.
	wroteDeliveries := new(bool)
	err = unavailable(db.gorm.WithContext(txCtx).Transaction(func(tx *gorm.DB) error {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		ctx := context.WithValue(ctx, txKey{db}, tx)
		if err := fn(context.WithValue(ctx, deliveriesKey{db}, wroteDeliveries)); err != nil {
			return err
		}
		// Nothing commits for a caller that has gone.
		return context.Cause(ctx)
	}))
	if err == nil && *wroteDeliveries {
		db.deliveriesAnnouncer.announce()
	}
	return err
}

// deliveriesKey carries, in a transaction's context, whether the
// transaction wrote deliveries that other processes' dispatchers should
// hear of once it commits.
type deliveriesKey struct{ db *DB }

// announceDeliveries tells other processes' dispatchers of deliveries
// written with ctx (PostgreSQL): when ctx's transaction commits, and not at
// all if it rolls back; at once outside a transaction.
func (db *DB) announceDeliveries(ctx context.Context) {
	if db.dialect != DialectPostgres {
		return
	}
	if wrote, ok := ctx.Value(deliveriesKey{db}).(*bool); ok {
		*wrote = true
		return
	}
	db.deliveriesAnnouncer.announce()
}

// conn is the handle every repository method starts from: the transaction in
// ctx when there is one, else the pool.
// lockScope takes, inside the context's transaction, a lock named scope
// that other transactions' lockScope of the same name wait for until the
// transaction ends: a PostgreSQL advisory lock (SQLite transactions hold
// the database's write lock already). Outside a transaction it does
// nothing.
func (db *DB) lockScope(ctx context.Context, scope string) error {
	tx, ok := ctx.Value(txKey{db}).(*gorm.DB)
	if !ok || db.dialect != DialectPostgres {
		return nil
	}
	if err := tx.Exec("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", "worktrack:"+scope).Error; err != nil {
		return fmt.Errorf("store: lock %s: %w", scope, err)
	}
	return nil
}

func (db *DB) conn(ctx context.Context) *gorm.DB {
	if tx, ok := ctx.Value(txKey{db}).(*gorm.DB); ok {
		return tx.WithContext(ctx)
	}
	return db.gorm.WithContext(ctx)
}

// takeWriter waits for SQLite's writer, in the turn of ctx's workspace
// (the work of no workspace, the webhook dispatcher's records of its
// attempts, has a turn of its own), and returns its release. On
// PostgreSQL, and inside a transaction (which holds the writer), it takes
// nothing.
func (db *DB) takeWriter(ctx context.Context) (func(), error) {
	if db.writer == nil {
		return func() {}, nil
	}
	scope, _ := ports.DBScopeOf(ctx)
	return db.takeWriterAs(ctx, scope.WorkspaceID)
}

// claimFlow is the writer's turn of the dispatcher's claims. A claim
// leases every workspace's due deliveries: behind the dispatcher's other
// writes in one turn (its records of A's timed-out attempts), B's
// delivery waited a turn more for each of them, and a turn on SQLite is as
// long as the longest transaction of another workspace in between.
// Workspace ids have a prefix of their own (wsp_), so no workspace shares
// it.
const claimFlow = "dispatcher:claim"

// takeWriterAs is takeWriter in flow's turn.
func (db *DB) takeWriterAs(ctx context.Context, flow string) (func(), error) {
	if db.writer == nil {
		return func() {}, nil
	}
	if _, inTx := ctx.Value(txKey{db}).(*gorm.DB); inTx {
		return func() {}, nil
	}
	scope, _ := ports.DBScopeOf(ctx)
	start := time.Now()
	w, err := db.writer.Acquire(ctx, flow, 1)
	if _, seated := ctx.Value(slotKey{db}).(bool); seated {
		// The seats' holding time, added when they are returned,
		// includes this wait: it is queued time.
		scope.Phases.MoveToQueued(time.Since(start))
	} else {
		scope.Phases.AddQueued(time.Since(start))
	}
	if err != nil {
		return nil, err
	}
	return w.Release, nil
}
