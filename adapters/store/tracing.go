package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"

	"github.com/XSAM/otelsql"
	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
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

// recordingOnly passes pgx's statements, batches, copies and prepares to
// otelpgx only under a recording span. otelpgx itself starts no span
// without one, but still stamps the context and builds its metrics'
// attributes for every statement: at a sampling ratio of 0.01 that was
// most of what tracing cost an untraced request. Connects are not traced.
type recordingOnly struct{ t *otelpgx.Tracer }

var (
	_ pgx.QueryTracer    = recordingOnly{}
	_ pgx.BatchTracer    = recordingOnly{}
	_ pgx.CopyFromTracer = recordingOnly{}
	_ pgx.PrepareTracer  = recordingOnly{}
)

func recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// The ...End methods see the context their ...Start returned: the
// statement's own span when one was started, else the caller's.

func (r recordingOnly) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !recording(ctx) {
		return ctx
	}
	return r.t.TraceQueryStart(ctx, c, d)
}

func (r recordingOnly) TraceQueryEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryEndData) {
	if recording(ctx) {
		r.t.TraceQueryEnd(ctx, c, d)
	}
}

func (r recordingOnly) TraceBatchStart(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	if !recording(ctx) {
		return ctx
	}
	return r.t.TraceBatchStart(ctx, c, d)
}

func (r recordingOnly) TraceBatchQuery(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchQueryData) {
	if recording(ctx) {
		r.t.TraceBatchQuery(ctx, c, d)
	}
}

func (r recordingOnly) TraceBatchEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchEndData) {
	if recording(ctx) {
		r.t.TraceBatchEnd(ctx, c, d)
	}
}

func (r recordingOnly) TraceCopyFromStart(ctx context.Context, c *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	if !recording(ctx) {
		return ctx
	}
	return r.t.TraceCopyFromStart(ctx, c, d)
}

func (r recordingOnly) TraceCopyFromEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceCopyFromEndData) {
	if recording(ctx) {
		r.t.TraceCopyFromEnd(ctx, c, d)
	}
}

func (r recordingOnly) TracePrepareStart(ctx context.Context, c *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	if !recording(ctx) {
		return ctx
	}
	return r.t.TracePrepareStart(ctx, c, d)
}

func (r recordingOnly) TracePrepareEnd(ctx context.Context, c *pgx.Conn, d pgx.TracePrepareEndData) {
	if recording(ctx) {
		r.t.TracePrepareEnd(ctx, c, d)
	}
}
