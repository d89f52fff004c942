package store

import "time"

// timeOf is the domain value of a time column.
func timeOf(t Time) time.Time { return time.Time(t) }

// mapRows maps rows to domain values; never nil, so an empty list is [].
func mapRows[R, T any](rows []R, f func(R) T) []T {
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}
