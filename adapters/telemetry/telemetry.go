// Package telemetry is the process's OpenTelemetry tracing: a tracer
// provider configured by the standard OTEL_* variables alone, or none at all
// (docs/operations.md#traces).
//
// With no exporter configured, Setup returns a Tracing whose Provider is nil:
// the adapters then install no instrumentation, and tracing costs nothing.
// With one, spans are exported in batches behind a bounded queue of its own
// (Queue), so that a collector that is down or slow never holds a request:
// a span that finds the queue full is dropped and counted (Dropped, served as
// worktrack_trace_spans_dropped_total).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/worktrack/worktrack/core/ports"
)

// Attribute keys this service adds to every span it can (docs/operations.md#traces).
const (
	// WorkspaceID is the workspace whose work the span is.
	WorkspaceID = attribute.Key("worktrack.workspace.id")
	// RequestID is the request's X-Request-Id.
	RequestID = attribute.Key("worktrack.request.id")
)

// Propagator reads and writes W3C traceparent and tracestate, on incoming
// requests and on webhook deliveries.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// QueueSize is how many ended spans wait for the exporter's batches at
// most; beyond it spans are dropped (and counted), never waited for.
const QueueSize = 4096

// Tracing is the process's tracing: Provider is nil when it is off.
type Tracing struct {
	Provider trace.TracerProvider
	queue    *Queue
	shutdown func(context.Context) error
}

// Dropped is how many spans were dropped because the export queue was full.
func (t *Tracing) Dropped() uint64 {
	if t == nil || t.queue == nil {
		return 0
	}
	return t.queue.Dropped()
}

// Shutdown exports what is queued, within ctx, and stops.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// Enabled reports whether env configures a trace exporter: OTEL_SDK_DISABLED
// is not "true", OTEL_TRACES_EXPORTER is not "none", and an exporter is
// named (OTEL_TRACES_EXPORTER=otlp) or an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))) {
	case "none":
		return false
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return true
	}
}

// Setup configures tracing from the process's OTEL_* variables (Enabled);
// version is the service.version of the spans' resource. A variable it
// cannot honour is an error that names it.
func Setup(ctx context.Context, version string) (*Tracing, error) {
	if !Enabled(os.Getenv) {
		return &Tracing{}, nil
	}
	exporter, err := newExporter(ctx, os.Getenv)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("worktrack"), semconv.ServiceVersion(version)),
		resource.WithTelemetrySDK(),
		// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, over the defaults.
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	// The batches (OTEL_BSP_*) block only Queue's goroutine, never a
	// request: Queue drops what the batches cannot take.
	batches := sdktrace.NewBatchSpanProcessor(exporter, sdktrace.WithBlocking())
	return New(batches, sdktrace.WithResource(res)), nil
}

// newExporter is the OTLP exporter OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL
// names: http/protobuf (the default) or grpc. The exporters read the other
// OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout,
// compression, certificates) themselves.
func newExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	if e := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); e != "" && e != "otlp" {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q is not supported: use otlp or none", e)
	}
	name, protocol := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		name, protocol = "OTEL_EXPORTER_OTLP_PROTOCOL", getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch strings.TrimSpace(protocol) {
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("%s=%q is not supported: use http/protobuf or grpc", name, protocol)
	}
}

// New is tracing whose ended, sampled spans go to next behind a Queue;
// opts configure the provider (a sampler, a resource). Tests pass an
// in-memory recorder as next.
func New(next sdktrace.SpanProcessor, opts ...sdktrace.TracerProviderOption) *Tracing {
	q := NewQueue(next, QueueSize)
	tp := sdktrace.NewTracerProvider(append(opts,
		sdktrace.WithSpanProcessor(scopeAttributes{}),
		sdktrace.WithSpanProcessor(q))...)
	return &Tracing{Provider: tp, queue: q, shutdown: tp.Shutdown}
}

// scopeAttributes gives every span started under a request's or a
// workspace's context that context's request id and workspace id.
type scopeAttributes struct{}

func (scopeAttributes) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	if !s.IsRecording() {
		return
	}
	id := ports.RequestInfoFrom(parent).RequestID
	scope, _ := ports.DBScopeOf(parent)
	switch {
	case id != "" && scope.WorkspaceID != "":
		s.SetAttributes(RequestID.String(id), WorkspaceID.String(scope.WorkspaceID))
	case id != "":
		s.SetAttributes(RequestID.String(id))
	case scope.WorkspaceID != "":
		s.SetAttributes(WorkspaceID.String(scope.WorkspaceID))
	}
}
func (scopeAttributes) OnEnd(sdktrace.ReadOnlySpan)      {}
func (scopeAttributes) Shutdown(context.Context) error   { return nil }
func (scopeAttributes) ForceFlush(context.Context) error { return nil }

// Queue hands ended spans to next from a goroutine of its own, through a
// bounded queue: OnEnd never waits, and drops (counting) a span that finds
// the queue full.
type Queue struct {
	next    sdktrace.SpanProcessor
	spans   chan sdktrace.ReadOnlySpan
	flush   chan chan struct{}
	dropped atomic.Uint64
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// NewQueue starts a queue of size spans in front of next.
func NewQueue(next sdktrace.SpanProcessor, size int) *Queue {
	q := &Queue{
		next:  next,
		spans: make(chan sdktrace.ReadOnlySpan, size),
		flush: make(chan chan struct{}),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go q.run()
	return q
}

func (q *Queue) run() {
	defer close(q.done)
	for {
		select {
		case s := <-q.spans:
			q.next.OnEnd(s)
		case ack := <-q.flush:
			q.drain()
			close(ack)
		case <-q.stop:
			q.drain()
			return
		}
	}
}

// drain hands next every span queued now.
func (q *Queue) drain() {
	for {
		select {
		case s := <-q.spans:
			q.next.OnEnd(s)
		default:
			return
		}
	}
}

// Dropped is how many spans found the queue full.
func (q *Queue) Dropped() uint64 { return q.dropped.Load() }

// OnStart implements sdktrace.SpanProcessor.
func (q *Queue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span, or drops it when the queue is full.
func (q *Queue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	select {
	case q.spans <- s:
	default:
		q.dropped.Add(1)
	}
}

// ForceFlush hands next what is queued, then flushes next, within ctx.
func (q *Queue) ForceFlush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case q.flush <- ack:
	case <-q.done:
		return q.next.ForceFlush(ctx)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
	case <-ctx.Done():
		return ctx.Err()
	}
	return q.next.ForceFlush(ctx)
}

// Shutdown hands next what is queued and shuts it down, within ctx.
func (q *Queue) Shutdown(ctx context.Context) error {
	q.once.Do(func() { close(q.stop) })
	select {
	case <-q.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return q.next.Shutdown(ctx)
}

// TraceParent is the W3C traceparent of ctx's span, "" when ctx has none.
func TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	Propagator.Inject(ctx, c)
	return c["traceparent"]
}

// ContextWithTraceParent is ctx continuing the trace of traceparent (from
// TraceParent); ctx itself when traceparent is "" or malformed.
func ContextWithTraceParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return Propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// ForceFlush hands what is queued to the exporter and waits for its
// export, within ctx (tests read their recorder after it).
func (t *Tracing) ForceFlush(ctx context.Context) error {
	if t == nil || t.queue == nil {
		return nil
	}
	return t.queue.ForceFlush(ctx)
}
