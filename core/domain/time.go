package domain

import "time"

// Timestamp normalises an instant as Worktrack stores it (docs/api.md#identifiers-and-time): UTC, truncated
// (never rounded) to microseconds, so that what a create returns is exactly
// what later reads return from either database.
func Timestamp(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

// TimestampPtr is Timestamp for an optional instant.
func TimestampPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := Timestamp(*t)
	return &v
}

// TimeFormat is the one wire format of instants: RFC 3339 in UTC with a Z and
// exactly six fractional digits, so REST, GraphQL and webhook payloads format
// the same instant identically.
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// FormatTime renders t in TimeFormat.
func FormatTime(t time.Time) string {
	return Timestamp(t).Format(TimeFormat)
}

// The instants a client may send: years 0001 to 9999 in UTC. RFC 3339 cannot
// write other years, and PostgreSQL and SQLite store and read back only
// these alike (PostgreSQL refuses year 0; SQLite keeps year 10000 as text
// no later read can parse).
var (
	MinTime = time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, time.December, 31, 23, 59, 59, 999_999_000, time.UTC)
)

// CheckTime applies the one rule of every instant a client sends: once
// converted to UTC (and truncated to microseconds, as stored) it must lie
// between MinTime and MaxTime, else validation_failed on param. Offsets
// count: 0001-01-01T00:00:00+01:00 is year 0 in UTC, 9999-12-31T23:00:00-01:00
// is year 10000.
func CheckTime(param string, t time.Time) error {
	u := Timestamp(t)
	if u.Before(MinTime) || u.After(MaxTime) {
		return Invalid(param, "Must be between %s and %s once converted to UTC.",
			MinTime.Format(TimeFormat), MaxTime.Format(TimeFormat))
	}
	return nil
}

// InTimeRange reports whether CheckTime accepts t.
func InTimeRange(t time.Time) bool {
	u := Timestamp(t)
	return !u.Before(MinTime) && !u.After(MaxTime)
}
