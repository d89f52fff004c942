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

// insertBatch is the most rows one INSERT carries: a bulk creation's rows
// (500 tasks, their events, and one delivery per event and subscribed
// webhook, up to 10,000) are inserted this many at a time, so that no
// statement passes either database's bound on parameters (PostgreSQL's
// 65,535; SQLite's 32,766) whatever the width of a row.
const insertBatch = 1000
