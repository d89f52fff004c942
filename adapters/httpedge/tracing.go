package httpedge

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/worktrack/worktrack/adapters/telemetry"
	"github.com/worktrack/worktrack/core/ports"
)

// traced is engine behind otelhttp's server span, which honours an
// incoming traceparent (the sampler decides by it: parent-based).
func traced(engine http.Handler, tp trace.TracerProvider) http.Handler {
	return otelhttp.NewHandler(engine, "http",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(telemetry.Propagator),
		otelhttp.WithMeterProvider(noopmetric.NewMeterProvider()),
		// Named by its method until the route is known (traceRoute).
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
	)
}

// traceRoute names the request's server span by the route template that
// matched ("GET /v1/tasks/:id", never the path with its ids), and gives it
// the request id and, once the caller is known, the workspace id. The
// request's context carries the request id from here, for the spans
// started under it (telemetry's scopeAttributes).
func (s *Edge) traceRoute(c *gin.Context) {
	span := trace.SpanFromContext(c.Request.Context())
	if !span.IsRecording() {
		c.Next()
		return
	}
	c.Request = c.Request.WithContext(ports.WithRequestInfo(c.Request.Context(), ports.RequestInfo{RequestID: RequestID(c)}))
	c.Next()
	span.SetAttributes(telemetry.RequestID.String(RequestID(c)))
	if route := c.FullPath(); route != "" {
		span.SetName(c.Request.Method + " " + route)
		span.SetAttributes(semconv.HTTPRoute(route))
	}
	if ws := Actor(c).WorkspaceID; ws != "" {
		span.SetAttributes(telemetry.WorkspaceID.String(ws))
	}
}
