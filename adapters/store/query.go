package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"gorm.io/gorm"
)

// query runs a read statement, written with ? placeholders, in ctx's
// transaction or else on the pool, straight through database/sql. The
// hottest reads (a task by id, pages of tasks) are raw statements scanned
// field by field; going through GORM's Raw as well cost them a statement
// clone, a clause build and the callback chain per call, about a twentieth
// of a GET's CPU time under load, for nothing they use. A lost connection
// still reads as service_unavailable, as registerUnavailable makes every
// GORM statement's error.
func (db *DB) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	var pool gorm.ConnPool = db.sql
	if tx, ok := ctx.Value(txKey{db}).(*gorm.DB); ok {
		pool = tx.Statement.ConnPool
	}
	if db.dialect == DialectPostgres {
		q = numbered(q)
	}
	if observe := db.readObserver.Load(); observe != nil {
		(*observe)(q)
	}
	rows, err := pool.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, unavailable(err)
	}
	return rows, nil
}

// ObserveRawReads has fn called with the SQL of every read that bypasses
// GORM (see query), as GORM's callbacks are called for every other
// statement: storetest counts statements with both.
func (db *DB) ObserveRawReads(fn func(sql string)) { db.readObserver.Store(&fn) }

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
