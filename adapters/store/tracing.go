package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"

	"github.com/XSAM/otelsql"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// tracedSQLite opens the SQLite driver through otelsql, which traces each
// statement as pgx's tracer does on PostgreSQL (WithTracing): a client span
// named by the statement's operation (SELECT, INSERT, ...) with its text,
// never its arguments, and only under a context whose span records, so that
// background work starts no trace of its own. The spans of rows, session
// resets and prepares are left out: they would double every statement's.
func tracedSQLite(dsn string, tp trace.TracerProvider) (*sql.DB, error) {
	return otelsql.Open("sqlite", dsn,
		otelsql.WithTracerProvider(tp),
		otelsql.WithMeterProvider(noopmetric.NewMeterProvider()),
		otelsql.WithAttributes(semconv.DBSystemNameSQLite),
		otelsql.WithSpanNameFormatter(func(_ context.Context, method otelsql.Method, query string) string {
			if op := operationOf(query); op != "" {
				return op
			}
			return string(method)
		}),
		otelsql.WithSpanOptions(otelsql.SpanOptions{
			DisableErrSkip:       true,
			OmitConnResetSession: true,
			OmitConnPrepare:      true,
			OmitRows:             true,
			OmitConnectorConnect: true,
			SpanFilter: func(ctx context.Context, _ otelsql.Method, _ string, _ []driver.NamedValue) bool {
				return trace.SpanFromContext(ctx).IsRecording()
			},
		}),
	)
}

// operationOf is the first word of a statement, upper-cased: its
// db.operation.name in a span's name.
func operationOf(query string) string {
	query = strings.TrimSpace(query)
	end := strings.IndexAny(query, " \t\n(")
	if end < 0 {
		end = len(query)
	}
	return strings.ToUpper(query[:end])
}

// traceParentOf is the W3C traceparent of ctx's span, for an event's
// trace_parent: the deliveries of the event continue the trace of the
// request that caused it. nil (NULL) when ctx carries no span, as when
// tracing is off.
func traceParentOf(ctx context.Context) *string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	tp := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
	return &tp
}
