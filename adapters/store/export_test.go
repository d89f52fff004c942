package store

import (
	"context"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// PGClaim exposes PostgreSQL's claim statement, with its arguments, to the
// plan checks of store_test.
func PGClaim(r ports.ClaimRequest) (string, []any) { return pgClaim(r) }

// Conn exposes the handle repository methods start from (the transaction
// in ctx, else the pool), so that tests can run a statement of their own
// inside a transaction.
func (db *DB) Conn(ctx context.Context) *gorm.DB { return db.conn(ctx) }

// Numbered exposes the ?-to-$n rewrite of raw reads on PostgreSQL.
var Numbered = numbered

// Unpositioned exposes the sequencer's predicate to the plan checks.
const Unpositioned = unpositioned

// TaskPageSQL exposes the statement of one page of a task list, with its
// arguments, to the plan checks.
func TaskPageSQL(dialect string, f ports.TaskFilter) (string, []any) {
	q := taskQuery{dialect: dialect}
	q.page(f, -1)
	return q.sql.String(), q.args
}

// TaskCountSQL exposes the statement counting a task list by group.
func TaskCountSQL(dialect string, f ports.TaskFilter, by domain.TaskCountGroup) (string, []any) {
	q := taskQuery{dialect: dialect}
	q.count(f, by)
	return q.sql.String(), q.args
}
