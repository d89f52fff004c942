package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/worktrack/worktrack/adapters/telemetry"
)

func TestEnabledOnlyWithAnExporter(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
	} {
		if got := telemetry.Enabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("Enabled(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

func TestSetupIsOffWithoutAnExporter(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	tr, err := telemetry.Setup(context.Background(), "test")
	if err != nil || tr.Provider != nil {
		t.Fatalf("Setup without an exporter: provider %v, error %v; want none", tr.Provider, err)
	}
}

func TestSetupNamesAVariableItCannotHonour(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, err := telemetry.Setup(context.Background(), "test"); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Fatalf("Setup with http/json: %v, want an error naming OTEL_EXPORTER_OTLP_PROTOCOL", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	if _, err := telemetry.Setup(context.Background(), "test"); err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_EXPORTER") {
		t.Fatalf("Setup with zipkin: %v, want an error naming OTEL_TRACES_EXPORTER", err)
	}
}

// A collector that takes the exporter's request and never answers: the
// spans that end meanwhile never wait; those the queue cannot hold are
// dropped and counted.
func TestASlowCollectorNeverHoldsASpan(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer collector.Close()
	defer close(release)
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(collector.URL+"/v1/traces"),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	batches := sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithBlocking(), sdktrace.WithMaxQueueSize(64),
		sdktrace.WithMaxExportBatchSize(64), sdktrace.WithBatchTimeout(time.Millisecond))
	tr := telemetry.New(batches)
	tracer := tr.Provider.Tracer("test")
	n := 3 * telemetry.QueueSize
	for range n {
		_, span := tracer.Start(context.Background(), "work")
		span.End()
	}
	if d := tr.Dropped(); d == 0 || d > uint64(n) {
		t.Fatalf("%d of %d spans dropped with the collector stuck; want some, counted", d, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = tr.Shutdown(ctx) // the collector is stuck: the flush gives up with ctx
}

// Spans end in the recorder through the queue, and a flush waits for them.
func TestQueueHandsOverEverySpanItHolds(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tr := telemetry.New(rec)
	tracer := tr.Provider.Tracer("test")
	for range 100 {
		_, span := tracer.Start(context.Background(), "work")
		span.End()
	}
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(rec.Ended()); got != 100 || tr.Dropped() != 0 {
		t.Fatalf("%d spans recorded, %d dropped; want 100 and 0", got, tr.Dropped())
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestTraceParentRoundTrip(t *testing.T) {
	t.Parallel()
	if got := telemetry.TraceParent(context.Background()); got != "" {
		t.Fatalf("TraceParent without a span = %q", got)
	}
	rec := tracetest.NewSpanRecorder()
	tr := telemetry.New(rec)
	ctx, span := tr.Provider.Tracer("test").Start(context.Background(), "create")
	tp := telemetry.TraceParent(ctx)
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if tp != want {
		t.Fatalf("TraceParent = %q, want %q", tp, want)
	}
	span.End()
	_, child := tr.Provider.Tracer("test").Start(telemetry.ContextWithTraceParent(context.Background(), tp), "attempt")
	if child.SpanContext().TraceID() != span.SpanContext().TraceID() {
		t.Fatal("a span started from the traceparent is not in its trace")
	}
	child.End()
	if ctx := telemetry.ContextWithTraceParent(context.Background(), "garbage"); telemetry.TraceParent(ctx) != "" {
		t.Fatal("a malformed traceparent gave a context a span")
	}
}

func TestLogLinesOfATracedContextCarryItsIDs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	tr := telemetry.New(tracetest.NewSpanRecorder())
	ctx, span := tr.Provider.Tracer("test").Start(context.Background(), "request")
	log.InfoContext(ctx, "traced")
	log.Info("untraced")
	span.End()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("log %q", buf.String())
	}
	var traced, untraced map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &traced)
	_ = json.Unmarshal([]byte(lines[1]), &untraced)
	if traced["trace_id"] != span.SpanContext().TraceID().String() || traced["span_id"] != span.SpanContext().SpanID().String() || traced["component"] != "test" {
		t.Fatalf("traced line %v", traced)
	}
	if _, ok := untraced["trace_id"]; ok {
		t.Fatalf("untraced line %v has a trace_id", untraced)
	}

	// A request the sampler left out: its trace reaches no collector, so
	// its lines do not point at one.
	buf.Reset()
	never := telemetry.New(tracetest.NewSpanRecorder(), sdktrace.WithSampler(sdktrace.NeverSample()))
	ctx, unsampled := never.Provider.Tracer("test").Start(context.Background(), "request")
	if !unsampled.SpanContext().IsValid() {
		t.Fatal("an unsampled span has no trace id")
	}
	log.InfoContext(ctx, "unsampled")
	unsampled.End()
	if strings.Contains(buf.String(), "trace_id") {
		t.Fatalf("an unsampled request's line has a trace_id: %s", buf.String())
	}
}
