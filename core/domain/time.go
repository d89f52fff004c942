package domain

import "time"

// Timestamp normalises an instant as the contract stores it: UTC, truncated
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
