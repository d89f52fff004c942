package store

import (
	"context"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// PGClaim exposes PostgreSQL's claim statement, with its arguments, to the
// plan checks of store_test.
func PGClaim(r ports.ClaimRequest) (string, []any) {
	q := pgClaim(r)
	return q.sql.String(), q.args
}

// Conn exposes the handle repository methods start from (the transaction
// in ctx, else the pool), so that tests can run a statement of their own
// inside a transaction.
func (db *DB) Conn(ctx context.Context) *gorm.DB { return db.conn(ctx) }

// Numbered exposes the ?-to-$n rewrite of raw reads on PostgreSQL.
var Numbered = numbered

// Unpositioned exposes the sequencer's predicate to the plan checks.
const Unpositioned = unpositioned

// ToPosition exposes the sequencer's read to the plan checks.
var ToPosition = toPosition

// TaskPageSQL exposes the statement of one page of a task list, with its
// arguments, to the plan checks.
func TaskPageSQL(dialect string, f ports.TaskFilter) (string, []any) {
	q := taskQuery{sqlBuilder: sqlBuilder{dialect: dialect}}
	q.page(f, -1)
	return q.sql.String(), q.args
}

// TaskCountSQL exposes the statement counting a task list by group.
func TaskCountSQL(dialect string, f ports.TaskFilter, by domain.TaskCountGroup) (string, []any) {
	q := taskQuery{sqlBuilder: sqlBuilder{dialect: dialect}}
	q.count(f, by)
	return q.sql.String(), q.args
}

// ReadCount runs q, a statement of one count column, as the task lists'
// reads run: under ctx's budget, with LiveArg standing for the
// statement's context on SQLite.
func (db *DB) ReadCount(ctx context.Context, q string, args ...any) (int64, error) {
	var n int64
	err := db.read(ctx, q, args, func(rows rowScanner) error {
		for rows.Next() {
			if err := rows.Scan(&n); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// LiveArg is the argument that becomes a SQLite statement's context token.
var LiveArg any = sqliteLiveArg{}

// Waiting is how many statements of the workspace wait for seats.
func (db *DB) Waiting(workspaceID string) int {
	return db.QueuedStatements(workspaceID)
}

// Holding is how many seats the workspace holds.
func (db *DB) Holding(workspaceID string) int {
	if b := db.budget.Load(); b != nil && b.seats != nil {
		held, _ := b.seats.Held(workspaceID)
		return held
	}
	return 0
}

// QueuedWrites is how many write transactions of the workspace wait for
// SQLite's writer.
func (db *DB) QueuedWrites(workspaceID string) int {
	if db.writer == nil {
		return 0
	}
	_, queued := db.writer.Held(workspaceID)
	return queued
}

// SQLiteParams is the most values one SQLite statement of a bulk write
// binds.
const SQLiteParams = sqliteParams

// ClaimFlow is the SQLite writer's turn of the dispatcher's claims.
const ClaimFlow = claimFlow
