// Package model holds the GraphQL-only types (inputs, connections, payloads)
// that gqlgen generates, and the DateTime scalar. Resources themselves bind
// to core/domain types (gqlgen.yml models).
package model

import (
	"encoding/json"
	"io"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/worktrack/worktrack/core/domain"
)

// MarshalDateTime renders an instant exactly as REST and webhook payloads
// do: RFC 3339 in UTC, six fractional digits, a Z.
func MarshalDateTime(t time.Time) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		_, _ = io.WriteString(w, strconv.Quote(domain.FormatTime(t)))
	})
}

// UnmarshalDateTime reads an RFC 3339 date-time with any offset, as REST
// reads due_at. The error leaves Param empty: the error presenter names the
// input field from the error's path.
func UnmarshalDateTime(v any) (time.Time, error) {
	s, ok := v.(string)
	if ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, domain.Invalid("", "Expected an RFC 3339 date-time, e.g. 2026-01-02T15:04:05Z.")
}

// JSON is a JSON value passed through as its bytes.
type JSON = json.RawMessage

// MarshalJSON writes the value's bytes as they are.
func MarshalJSON(v json.RawMessage) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		if len(v) == 0 {
			_, _ = io.WriteString(w, "null")
			return
		}
		_, _ = w.Write(v)
	})
}

// UnmarshalJSON accepts any JSON value (the schema takes none as input).
func UnmarshalJSON(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, domain.Invalid("", "Expected a JSON value.")
	}
	return b, nil
}
