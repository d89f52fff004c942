// Package telemetrytest records the spans of a test's server in memory
// (the SDK's tracetest recorder, behind telemetry's own queue) and reads
// them back: by trace, by parent, and every string they hold.
package telemetrytest

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/worktrack/worktrack/adapters/telemetry"
)

// Recorder is tracing whose spans are kept in memory, every span sampled.
type Recorder struct {
	*telemetry.Tracing
	rec *tracetest.SpanRecorder
}

// New is a recorder, shut down when t ends.
func New(t testing.TB) *Recorder {
	rec := tracetest.NewSpanRecorder()
	r := &Recorder{Tracing: telemetry.New(rec, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample()))), rec: rec}
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	return r
}

// Ended is every span ended so far, once the queue has handed them over.
func (r *Recorder) Ended(t testing.TB) []sdktrace.ReadOnlySpan {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.ForceFlush(ctx); err != nil {
		t.Fatalf("flush spans: %v", err)
	}
	return r.rec.Ended()
}

// WaitFor returns the ended spans once match holds for one of them (the
// first such span), failing t after 10 s.
func (r *Recorder) WaitFor(t testing.TB, what string, match func(sdktrace.ReadOnlySpan) bool) (sdktrace.ReadOnlySpan, []sdktrace.ReadOnlySpan) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		spans := r.Ended(t)
		for _, s := range spans {
			if match(s) {
				return s, spans
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %s among %d:\n%s", what, len(spans), Describe(spans))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Attr is the value of span's attribute key as a string, "" without it.
func Attr(s sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value.String()
		}
	}
	return ""
}

// Has reports whether span has the attribute key.
func Has(s sdktrace.ReadOnlySpan, key attribute.Key) bool {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return true
		}
	}
	return false
}

// InTrace are the spans of trace id.
func InTrace(spans []sdktrace.ReadOnlySpan, id trace.TraceID) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanContext().TraceID() == id {
			out = append(out, s)
		}
	}
	return out
}

// Descends reports whether s is ancestor or below it, within spans.
func Descends(spans []sdktrace.ReadOnlySpan, s sdktrace.ReadOnlySpan, ancestor trace.SpanID) bool {
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, x := range spans {
		byID[x.SpanContext().SpanID()] = x
	}
	for range len(spans) + 1 {
		if s.SpanContext().SpanID() == ancestor {
			return true
		}
		p, ok := byID[s.Parent().SpanID()]
		if !ok {
			return s.Parent().SpanID() == ancestor
		}
		s = p
	}
	return false
}

// Strings is every string a span shows a collector: its name, status,
// attribute values and events' names and attribute values.
func Strings(s sdktrace.ReadOnlySpan) []string {
	out := []string{s.Name(), s.Status().Description}
	for _, kv := range s.Attributes() {
		out = append(out, string(kv.Key)+"="+kv.Value.String())
	}
	for _, ev := range s.Events() {
		out = append(out, ev.Name)
		for _, kv := range ev.Attributes {
			out = append(out, string(kv.Key)+"="+kv.Value.String())
		}
	}
	return out
}

// NoneHolds fails t when any span shows a collector one of secrets.
func NoneHolds(t testing.TB, spans []sdktrace.ReadOnlySpan, secrets ...string) {
	t.Helper()
	for _, s := range spans {
		for _, str := range Strings(s) {
			for _, secret := range secrets {
				if secret != "" && strings.Contains(str, secret) {
					t.Errorf("span %q holds %q: %s", s.Name(), secret, str)
				}
			}
		}
	}
}

// Describe lists spans, one a line, for a failure message.
func Describe(spans []sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString(s.SpanKind().String() + " " + s.Name() + " trace=" + s.SpanContext().TraceID().String() +
			" span=" + s.SpanContext().SpanID().String() + " parent=" + s.Parent().SpanID().String() + "\n")
	}
	return b.String()
}
