package store

import "github.com/worktrack/worktrack/core/ports"

// MaxBatch is the most keys one statement carries (ports.MaxBatch): a
// larger batch is split into statements of at most this many, so that no
// statement grows with a client's query.
const MaxBatch = ports.MaxBatch

// MaxBranches is the most UNION ALL branches (one page each) one statement
// carries. PostgreSQL's planning time grows with the square of the
// branches: planning a page statement took 56 ms for 100 branches, 0.9 s
// for 500 and 3.7 s for 1,000 (EXPLAIN SUMMARY on PostgreSQL 15, here), so
// a batch of pages is split a hundred at a time (SQLite caps a compound
// SELECT at 500 anyway).
const MaxBranches = 100

// inBatches reads keys MaxBatch at a time with read, in order, and returns
// what the reads returned, in the same order.
func inBatches[K, T any](keys []K, read func([]K) ([]T, error)) ([]T, error) {
	return inBatchesOf(MaxBatch, keys, read)
}

// inBatchesOf is inBatches with batches of size.
func inBatchesOf[K, T any](size int, keys []K, read func([]K) ([]T, error)) ([]T, error) {
	if len(keys) <= size {
		return read(keys)
	}
	out := make([]T, 0, len(keys))
	for start := 0; start < len(keys); start += size {
		got, err := read(keys[start:min(start+size, len(keys))])
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// insertBatch is the most rows one INSERT carries on PostgreSQL: a bulk
// creation's rows (500 tasks, their events, and one delivery per event and
// subscribed webhook, up to 10,000) are inserted this many at a time, so
// that no statement passes its bound on parameters (65,535) whatever the
// width of a row.
const insertBatch = 1000

// sqliteParams is the most values one multi-row SQLite statement binds.
// The driver (glebarez/go-sqlite) finds each of a statement's n parameters
// by a scan of its arguments, n²/2 steps a statement: inserting a bulk
// creation's 500 events and 10,000 deliveries (13 columns) 1,000 rows a
// statement took 1.5 s, most of it binding, all of it holding the one
// writer. Between 256 and 1,000 values a statement the same rows took
// 0.37 s; below that, the statements' own cost grows again
// (docs/performance.md).
const sqliteParams = 512

// insertRows is how many rows of width columns one INSERT carries on db:
// insertBatch on PostgreSQL, sqliteParams' worth on SQLite.
func (db *DB) insertRows(columns int) int {
	if db.dialect == DialectSQLite {
		return max(1, sqliteParams/columns)
	}
	return insertBatch
}
