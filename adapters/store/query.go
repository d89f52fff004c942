package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"
)

// rowScanner is what a read's scan function is given: *sql.Rows, or pgx's
// rows on PostgreSQL's native path (read).
type rowScanner interface {
	Next() bool
	Scan(dest ...any) error
}

// read runs a statement that returns rows (a read, or a write with
// RETURNING: CreateTaskLogged), written with ? placeholders, in ctx's
// transaction or else on the pool, and hands its rows to scan. The hottest
// reads (a task by id, pages of tasks) are raw statements scanned field by
// field; going through GORM's Raw as well cost them a statement clone, a
// clause build and the callback chain per call, about a twentieth of a GET's
// CPU time under load, for nothing they use.
//
// On PostgreSQL, outside a transaction, the statement runs on the pooled
// connection's own pgx.Conn (database/sql's Conn.Raw) rather than through
// database/sql's Rows: those convert every column to a driver.Value and
// back, and build per query the conversion functions pgx's stdlib adapter
// needs for that, a tenth of a GET's allocations. The connection still comes
// from and returns to the one pool, so its limits and metrics hold.
//
// A lost connection still reads as service_unavailable, as
// registerUnavailable makes every GORM statement's error.
func (db *DB) read(ctx context.Context, q string, args []any, scan func(rowScanner) error) error {
	return db.bound(ctx, func(ctx context.Context) error { return db.readBounded(ctx, q, args, scan) })
}

// readBounded is read under its budget (bound).
func (db *DB) readBounded(ctx context.Context, q string, args []any, scan func(rowScanner) error) error {
	if db.dialect == DialectPostgres {
		q = numbered(q)
	}
	cloned := false
	for i, a := range args {
		if _, ok := a.(sqliteLiveArg); ok {
			// The token goes into a copy: a caller's slice, reused for a
			// second statement, would otherwise carry this statement's
			// token, forgotten once it ends, and that statement's
			// worktrack_live would never see its own context end (an
			// endless statement then ran for ever under a cancelled one).
			if !cloned {
				args, cloned = slices.Clone(args), true
			}
			token, forget := liveToken(ctx)
			defer forget()
			args[i] = token
		}
	}
	if hook := db.rawHook.Load(); hook != nil {
		if err := (*hook)(ctx, q); err != nil {
			return err
		}
	}
	tx, inTx := ctx.Value(txKey{db}).(*gorm.DB)
	if db.dialect == DialectPostgres && !inTx {
		return db.readNative(ctx, q, args, scan)
	}
	var pool gorm.ConnPool = db.sql
	if inTx {
		pool = tx.Statement.ConnPool
	}
	rows, err := pool.QueryContext(ctx, q, args...)
	if err != nil {
		return unavailable(err)
	}
	defer rows.Close()
	if err := scan(rows); err != nil {
		return unavailable(err)
	}
	if err := rows.Err(); err != nil {
		return unavailable(err)
	}
	return unavailable(rows.Close())
}

// readNative is read on a pooled PostgreSQL connection's pgx.Conn. As
// database/sql does for its own statements, a statement that failed before
// anything of it reached the server (pgconn.SafeToRetry: a connection the
// server had closed while it sat in the pool) is tried again on another
// connection, at most badConnRetries times, and the dead one is dropped.
func (db *DB) readNative(ctx context.Context, q string, args []any, scan func(rowScanner) error) error {
	for attempt := 0; ; attempt++ {
		err := db.readNativeOnce(ctx, q, args, scan)
		if !errors.Is(err, driver.ErrBadConn) || attempt == badConnRetries {
			return unavailable(err)
		}
	}
}

// badConnRetries is how many times readNative tries a statement again, as
// database/sql's maxBadConnRetries.
const badConnRetries = 2

func (db *DB) readNativeOnce(ctx context.Context, q string, args []any, scan func(rowScanner) error) error {
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		rows, err := driverConn.(*stdlib.Conn).Conn().Query(ctx, q, args...)
		if err != nil {
			if pgconn.SafeToRetry(err) {
				// database/sql closes a connection whose Raw returned
				// ErrBadConn instead of pooling it again.
				return fmt.Errorf("%w (%w)", driver.ErrBadConn, err)
			}
			return err
		}
		defer rows.Close()
		if err := scan(rows); err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	})
}

// ObserveRawReads has fn called with the SQL of every statement that
// bypasses GORM (read), as GORM's callbacks are called for every other
// statement: storetest counts statements with both.
func (db *DB) ObserveRawReads(fn func(sql string)) {
	db.InterceptRawStatements(func(_ context.Context, sql string) error {
		fn(sql)
		return nil
	})
}

// InterceptRawStatements has fn called before every statement that
// bypasses GORM runs, with the statement's context (its database slot
// held) and SQL; an error from fn fails the statement with that error, as
// a GORM callback's AddError does for GORM's. Tests inject failures with
// it. It replaces ObserveRawReads' function: one hook at a time.
func (db *DB) InterceptRawStatements(fn func(ctx context.Context, sql string) error) {
	db.rawHook.Store(&fn)
}

// numbered rewrites the ? placeholders of q as PostgreSQL's $1, $2, …; the
// statements given to query have no ? of any other kind (no literals or
// operators containing one).
func numbered(q string) string {
	n := strings.Count(q, "?")
	if n == 0 {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 2*n)
	i := 0
	for {
		j := strings.IndexByte(q, '?')
		if j < 0 {
			b.WriteString(q)
			return b.String()
		}
		i++
		b.WriteString(q[:j])
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(i))
		q = q[j+1:]
	}
}
