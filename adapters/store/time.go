package store

import (
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// timeLayout is how instants are stored in SQLite, which has no time type and
// compares TEXT byte by byte: fixed width, UTC, microseconds, so that string
// order is time order and keyset comparisons work. PostgreSQL parses the same
// text for timestamptz parameters.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// Time is a non-null time column. It writes timeLayout and reads both a
// time.Time (PostgreSQL) and text (SQLite).
type Time time.Time

// TimestamptzValue gives PostgreSQL's driver the instant itself, to the
// microsecond as timeLayout writes it: pgx then encodes it in binary
// rather than parsing the text Value writes, which cost a create under load
// a tenth of the server's time.
func (t Time) TimestamptzValue() (pgtype.Timestamptz, error) {
	return pgtype.Timestamptz{Time: time.Time(t).UTC().Truncate(time.Microsecond), Valid: true}, nil
}

// Value implements driver.Valuer.
func (t Time) Value() (driver.Value, error) {
	return time.Time(t).UTC().Format(timeLayout), nil
}

// Scan implements sql.Scanner.
func (t *Time) Scan(src any) error {
	v, ok, err := scanTime(src)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("store: NULL in a non-null time column")
	}
	*t = Time(v)
	return nil
}

// NullTime is a nullable time column, stored like Time.
type NullTime struct {
	Time  time.Time
	Valid bool
}

// NullTimeOf is the column value of an optional instant.
func NullTimeOf(t *time.Time) NullTime {
	if t == nil {
		return NullTime{}
	}
	return NullTime{Time: *t, Valid: true}
}

// Ptr is the optional instant of the column.
func (n NullTime) Ptr() *time.Time {
	if !n.Valid {
		return nil
	}
	t := n.Time
	return &t
}

// TimestamptzValue is Time's, or NULL.
func (n NullTime) TimestamptzValue() (pgtype.Timestamptz, error) {
	if !n.Valid {
		return pgtype.Timestamptz{}, nil
	}
	return Time(n.Time).TimestamptzValue()
}

// Value implements driver.Valuer.
func (n NullTime) Value() (driver.Value, error) {
	if !n.Valid {
		return nil, nil
	}
	return Time(n.Time).Value()
}

// Scan implements sql.Scanner.
func (n *NullTime) Scan(src any) error {
	v, ok, err := scanTime(src)
	if err != nil {
		return err
	}
	*n = NullTime{Time: v, Valid: ok}
	return nil
}

func scanTime(src any) (time.Time, bool, error) {
	switch v := src.(type) {
	case nil:
		return time.Time{}, false, nil
	case time.Time:
		return v.UTC(), true, nil
	case string:
		return parseTime(v)
	case []byte:
		return parseTime(string(v))
	}
	return time.Time{}, false, fmt.Errorf("store: cannot scan %T into a time column", src)
}

func parseTime(s string) (time.Time, bool, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("store: bad time %q in a time column: %w", s, err)
	}
	return t.UTC(), true, nil
}
