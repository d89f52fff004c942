package store

import (
	"context"

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
	if db.writeLock != nil {
		select {
		case db.writeLock <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer func() { <-db.writeLock }()
	}
	// Begin and commit failures do not pass through GORM's statement
	// callbacks; a lost connection there is service_unavailable too.
	return unavailable(db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ctx := context.WithValue(ctx, txKey{db}, tx)
		return fn(context.WithValue(ctx, notifiedKey{db}, new(bool)))
	}))
}

// notifiedKey carries, in a transaction's context, whether the transaction
// has queued its NOTIFY to the dispatchers already: one per transaction is
// enough, however many deliveries it writes.
type notifiedKey struct{ db *DB }

// firstNotify reports whether ctx's transaction has not notified yet, and
// marks it notified; outside a transaction it is always true.
func (db *DB) firstNotify(ctx context.Context) bool {
	done, ok := ctx.Value(notifiedKey{db}).(*bool)
	if !ok {
		return true
	}
	if *done {
		return false
	}
	*done = true
	return true
}

// conn is the handle every repository method starts from: the transaction in
// ctx when there is one, else the pool.
func (db *DB) conn(ctx context.Context) *gorm.DB {
	if tx, ok := ctx.Value(txKey{db}).(*gorm.DB); ok {
		return tx.WithContext(ctx)
	}
	return db.gorm.WithContext(ctx)
}
