package store

import (
	"context"
	"fmt"
)

// FoldBatch bounds the projects one fold moves deltas of.
const FoldBatch = 500

// foldLock is the advisory lock key that lets one fold run at a time across
// every process of a database ("wtfold").
const foldLock = 0x7774666f6c64

// FoldCounts folds pending count deltas (migration 00013) into their
// projects' rows, at most FoldBatch projects a call, and returns how many
// projects it folded. The row's task_count is set to the sum of its counts
// by status, so that a folded row reads as a whole without the view. A read of a project adds its pending deltas to its row
// either way, so folding changes no count anyone reads: it only keeps the
// deltas few, so that reads stay one index probe. One statement deletes
// every committed delta of the projects it picks and adds their sums to
// the rows, so a read sees the deltas or their sums, never both or neither,
// and a partial sum can never take a count below zero. One fold runs at a
// time across processes (an advisory lock; a fold that finds it taken
// returns); the UPDATE takes the rows' no-key lock, which task creations'
// key-share locks do not wait for. SQLite counts into the rows directly
// and has nothing to fold.
func (db *DB) FoldCounts(ctx context.Context) (int, error) {
	if db.dialect != DialectPostgres {
		return 0, nil
	}
	var pending bool
	if err := db.conn(ctx).Raw("SELECT EXISTS (SELECT 1 FROM project_count_deltas)").Scan(&pending).Error; err != nil {
		return 0, fmt.Errorf("store: fold counts: %w", err)
	}
	if !pending {
		return 0, nil // an idle fold opens no write transaction
	}
	var folded int
	err := db.InTx(ctx, func(ctx context.Context) error {
		var mine bool
		if err := db.conn(ctx).Raw("SELECT pg_try_advisory_xact_lock(?)", foldLock).Scan(&mine).Error; err != nil || !mine {
			return err
		}
		res := db.conn(ctx).Exec(`WITH picked AS (
    SELECT DISTINCT project_id FROM project_count_deltas LIMIT ?
), gone AS (
    DELETE FROM project_count_deltas WHERE project_id IN (SELECT project_id FROM picked)
    RETURNING project_id, open, in_progress, done, archived
), sums AS (
    SELECT project_id, sum(open) AS open, sum(in_progress) AS in_progress, sum(done) AS done, sum(archived) AS archived
    FROM gone GROUP BY project_id
)
UPDATE projects p SET
    open_count        = p.open_count + s.open,
    in_progress_count = p.in_progress_count + s.in_progress,
    done_count        = p.done_count + s.done,
    archived_count    = p.archived_count + s.archived,
    task_count        = p.open_count + s.open + p.in_progress_count + s.in_progress
                      + p.done_count + s.done + p.archived_count + s.archived
FROM sums s WHERE p.id = s.project_id`, FoldBatch)
		folded = int(res.RowsAffected)
		return res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("store: fold counts: %w", err)
	}
	return folded, nil
}
