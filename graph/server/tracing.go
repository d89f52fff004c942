package server

import (
	"context"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

const tracerName = "github.com/worktrack/worktrack/graph/server"

// tracing makes an operation a span named by its type and name ("query
// Dashboard"), and each field with a resolver of its own (the fields that
// read the database) a span under it, all of them children of the
// operation's span. The document and the variables are
// never recorded: they hold the callers' data. Subscriptions are traced
// per message sent (socket.WriteJSON), not as one span as long as the
// subscription.
type tracing struct {
	tracer trace.Tracer
}

// operationSpanKey keys the operation's span in its resolvers' contexts.
type operationSpanKey struct{}

var (
	_ graphql.HandlerExtension    = tracing{}
	_ graphql.ResponseInterceptor = tracing{}
	_ graphql.FieldInterceptor    = tracing{}
)

func (tracing) ExtensionName() string                   { return "Tracing" }
func (tracing) Validate(graphql.ExecutableSchema) error { return nil }

func (t tracing) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if !graphql.HasOperationContext(ctx) {
		return next(ctx)
	}
	op := graphql.GetOperationContext(ctx).Operation
	if op == nil || op.Operation == ast.Subscription || !trace.SpanFromContext(ctx).IsRecording() {
		return next(ctx)
	}
	name := string(op.Operation)
	attrs := []attribute.KeyValue{semconv.GraphQLOperationTypeKey.String(string(op.Operation))}
	if op.Name != "" {
		name += " " + op.Name
		attrs = append(attrs, semconv.GraphQLOperationName(op.Name))
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
	defer span.End()
	resp := next(context.WithValue(ctx, operationSpanKey{}, span))
	if resp != nil && len(resp.Errors) > 0 {
		span.SetAttributes(attribute.Int("worktrack.graphql.errors", len(resp.Errors)))
		span.SetStatus(codes.Error, strconv.Itoa(len(resp.Errors))+" errors")
	}
	return resp
}

func (t tracing) InterceptField(ctx context.Context, next graphql.Resolver) (any, error) {
	fc := graphql.GetFieldContext(ctx)
	op, _ := ctx.Value(operationSpanKey{}).(trace.Span)
	if fc == nil || !fc.IsResolver || op == nil || !op.IsRecording() {
		return next(ctx)
	}
	// Under the operation's span: a nested field resolves after its
	// parent's resolver has returned (and its span ended).
	ctx, span := t.tracer.Start(trace.ContextWithSpan(ctx, op), fc.Object+"."+fc.Field.Name, trace.WithAttributes(
		attribute.String("graphql.field.parent_type", fc.Object),
		attribute.String("graphql.field.name", fc.Field.Name),
	))
	defer span.End()
	res, err := next(ctx)
	if err != nil {
		span.SetStatus(codes.Error, "resolver failed")
	}
	return res, err
}
