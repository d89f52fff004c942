package httpedge

import (
	"github.com/gin-gonic/gin"
	otelattribute "go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/worktrack/worktrack/adapters/telemetry"
	"github.com/worktrack/worktrack/core/ports"
)

// serverSpan makes the request a server span of the edge's tracer,
// continuing an incoming traceparent (the sampler decides by it:
// parent-based), named by the route template that matched ("GET
// /v1/tasks/:taskId", never the path with its ids) and attributed by the
// HTTP server conventions, with the request id and, once the caller is
// known, the workspace id. The request's context carries the request id
// from here, for the spans started under it (telemetry's
// scopeAttributes).
//
// It is written here rather than taken from otelhttp, which computes its
// attributes and wraps the response writer and the body of every request
// before the sampler has decided: sampling 1 request in 100, that cost 15%
// of rest-get's rate (docs/performance.md). An unsampled request costs here
// the extraction and a context.
func (s *Edge) serverSpan(c *gin.Context) {
	r := c.Request
	ctx := telemetry.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := s.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer))
	if !span.IsRecording() {
		// Unsampled: the context still carries the trace, for the events
		// the request writes (their deliveries follow its decision).
		c.Request = r.WithContext(ctx)
		c.Next()
		return
	}
	defer span.End()
	c.Request = r.WithContext(ports.WithRequestInfo(ctx, ports.RequestInfo{RequestID: RequestID(c)}))
	c.Next()

	status := c.Writer.Status()
	if ClientGone(c) && status >= 500 {
		status = StatusClientClosedRequest
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	attrs := make([]otelattribute.KeyValue, 0, 10)
	attrs = append(attrs,
		semconv.HTTPRequestMethodKey.String(r.Method),
		semconv.URLScheme(scheme),
		semconv.URLPath(r.URL.Path),
		semconv.HTTPResponseStatusCode(status),
		semconv.ClientAddress(c.ClientIP()),
		telemetry.RequestID.String(RequestID(c)),
	)
	if ua := r.UserAgent(); ua != "" {
		attrs = append(attrs, semconv.UserAgentOriginal(ua))
	}
	if route := c.FullPath(); route != "" {
		span.SetName(r.Method + " " + route)
		attrs = append(attrs, semconv.HTTPRoute(route))
	}
	if ws := Actor(c).WorkspaceID; ws != "" {
		attrs = append(attrs, telemetry.WorkspaceID.String(ws))
	}
	span.SetAttributes(attrs...)
	if status >= 500 {
		span.SetStatus(codes.Error, "")
	}
}
