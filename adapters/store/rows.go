package store

import "time"

// timeOf is the domain value of a time column.
func timeOf(t Time) time.Time { return time.Time(t) }

// restoreRows rebuilds domain values from rows through f, which checks each
// (the domain's Restore functions); never nil, so an empty list is [].
func restoreRows[R, T any](rows []R, f func(R) (T, error)) ([]T, error) {
	out := make([]T, len(rows))
	for i, r := range rows {
		v, err := f(r)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
