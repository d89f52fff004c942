package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/gin-gonic/gin"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph"
)

// POST /graphql runs on gqlgen's executor directly rather than through its
// POST transport, which would read and decode the body a second time (the
// edge has read it, and must refuse a body that is not one JSON object
// before GraphQL sees it), and would marshal the finished response once more
// to copy its data. Everything between the decoded request and the response
// (persisted queries, parsing, validation, the limits, execution, the error
// presenter) is the executor's, configured as the WebSocket server is.

// newExecutor is the executor of queries and mutations sent with POST.
func newExecutor(a *app.App, o Options) *executor.Executor {
	exec := executor.New(graph.NewSchema(a))
	configure(exec, o)
	exec.Use(noSubscriptionsOverPOST{})
	return exec
}

// postBody is a GraphQL request sent with POST (GraphQL over HTTP).
type postBody struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
	Extensions    map[string]any `json:"extensions"`
}

// errNotOneObject is the answer to a body that is not one JSON object.
var errNotOneObject = domain.Errorf(wire.CodeInvalidJSON,
	"The request body must be one JSON object: {\"query\": \"…\", \"variables\": {…}, \"operationName\": \"…\"}.")

// postHandler serves POST /graphql.
type postHandler struct {
	exec *executor.Executor
	app  *app.App
	wait time.Duration
	api  *httpedge.API
}

// serve runs one GraphQL request for the authenticated caller, with fresh
// dataloaders. The body must be one JSON object, refused as over REST
// otherwise (invalid_json, request_too_large), in the GraphQL shape; a
// member of the wrong JSON type is validation_failed with the member as
// param, before gqlgen sees it.
func (h *postHandler) serve(c *gin.Context) {
	start := graphql.Now()
	raw, err := httpedge.ReadBody(c)
	if err != nil {
		h.api.Abort(c, err)
		return
	}
	var body postBody
	if err := httpedge.DecodeObject(raw, &body); err != nil {
		if domain.IsCode(err, wire.CodeInvalidJSON) {
			err = errNotOneObject
		}
		h.api.Abort(c, err)
		return
	}
	params := &graphql.RawParams{
		Query:         body.Query,
		OperationName: body.OperationName,
		Variables:     body.Variables,
		Extensions:    body.Extensions,
		Headers:       c.Request.Header,
		ReadTime:      graphql.TraceTiming{Start: start, End: graphql.Now()},
	}
	h.run(c, params, true)
}

// run executes params for the authenticated caller and writes the answer.
// Over GET (mutations false) a mutation is refused with 405 and Allow:
// POST before anything runs: GET must not change anything (GraphQL over
// HTTP).
func (h *postHandler) run(c *gin.Context, params *graphql.RawParams, mutations bool) {
	ctx := graphql.StartOperationTrace(c.Request.Context())
	ctx = graph.WithCaller(ctx, h.app, caller(c, httpedge.Actor(c)), h.wait)
	contentType := responseContentType(c.Request)
	status, resp := h.execute(ctx, params, contentType, mutations)
	if status == http.StatusMethodNotAllowed {
		c.Header("Allow", http.MethodPost)
		h.api.Abort(c, domain.Errorf(wire.CodeMethodNotAllowed,
			"Mutations change data and are sent with POST %s; GET runs queries only.", Path))
		return
	}
	if resp == nil {
		// The executor gives no response only when the request's context
		// ended before it ran: the client has gone.
		err := ctx.Err()
		if err == nil {
			err = errors.New("graphql: the executor gave no response")
		}
		h.api.Abort(c, err)
		return
	}
	h.write(c, contentType, status, resp)
}

// execute parses, validates and runs params, and returns the HTTP status
// and the response: a request refused before it runs is 422, or 400 for a
// client that asked for application/graphql-response+json (GraphQL over
// HTTP); one that ran is 200, errors included.
// A mutation when mutations is false is refused before it runs: 405 and
// no response.
func (h *postHandler) execute(ctx context.Context, params *graphql.RawParams, contentType string, mutations bool) (int, *graphql.Response) {
	op, errs := h.exec.CreateOperationContext(ctx, params)
	if errs == nil && !mutations && op.Operation != nil && op.Operation.Operation == ast.Mutation {
		return http.StatusMethodNotAllowed, nil
	}
	if errs != nil {
		status := http.StatusOK
		if errcode.GetErrorKind(errs) == errcode.KindProtocol {
			status = http.StatusUnprocessableEntity
			if contentType == mediaGraphQLResponse {
				status = http.StatusBadRequest
			}
		}
		return status, h.exec.DispatchError(graphql.WithOperationContext(ctx, op), errs)
	}
	responses, ctx := h.exec.DispatchOperation(ctx, op)
	return http.StatusOK, responses(ctx)
}

const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
)

// responseContentType is the media type of the answer: the first of JSON
// and GraphQL's own response type that the Accept header names, JSON by
// default.
func responseContentType(r *http.Request) string {
	for part := range strings.SplitSeq(r.Header.Get("Accept"), ",") {
		mediaType, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mediaType {
		case "*/*", "application/*", mediaJSON:
			return mediaJSON
		case mediaGraphQLResponse:
			return mediaGraphQLResponse
		}
	}
	return mediaJSON
}

// write writes resp, with a final newline like every JSON body. The common
// answer, data alone, is written as it stands: the executor has just built
// its data as compact JSON, and marshalling the response would only copy
// it, escaping it again on the way. Anything with errors or extensions is
// marshalled whole.
func (h *postHandler) write(c *gin.Context, contentType string, status int, resp *graphql.Response) {
	c.Header("Content-Type", contentType)
	if len(resp.Errors) == 0 && len(resp.Extensions) == 0 && resp.Label == "" && resp.Path == nil && resp.HasNext == nil {
		data := resp.Data
		if len(data) == 0 {
			data = json.RawMessage("null")
		}
		c.Status(status)
		_, _ = c.Writer.WriteString(`{"data":`)
		_, _ = c.Writer.Write(data)
		_, _ = c.Writer.WriteString("}\n")
		return
	}
	b, err := wire.Marshal(resp)
	if err != nil {
		// Only invalid data bytes fail here, which the executor never makes.
		h.api.Abort(c, fmt.Errorf("graphql: marshalling the response: %w", err))
		return
	}
	c.Status(status)
	_, _ = c.Writer.Write(append(b, '\n'))
}

// noSubscriptionsOverPOST refuses a subscription sent with POST: it needs
// a WebSocket.
type noSubscriptionsOverPOST struct{}

var _ graphql.OperationInterceptor = noSubscriptionsOverPOST{}

func (noSubscriptionsOverPOST) ExtensionName() string                   { return "NoSubscriptionsOverPOST" }
func (noSubscriptionsOverPOST) Validate(graphql.ExecutableSchema) error { return nil }

func (noSubscriptionsOverPOST) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if oc := graphql.GetOperationContext(ctx); oc.Operation != nil && oc.Operation.Operation == ast.Subscription {
		err := domain.Invalid("query", "Subscriptions are served over WebSocket: connect to ws(s)://<host>%s with the graphql-transport-ws subprotocol (the graphql-ws library).", Path)
		return graphql.OneShot(&graphql.Response{Errors: []*gqlerror.Error{graph.PresentError(ctx, err)}})
	}
	return next(ctx)
}

// serveGET runs a query sent as GET /graphql?query=…&variables=…&
// operationName=…&extensions=… (GraphQL over HTTP; urql's default, and
// Apollo Client's with useGETForQueries or persisted queries), exactly as
// POST runs it. variables and extensions are JSON objects; a mutation is
// 405 with Allow: POST.
func (h *postHandler) serveGET(c *gin.Context) {
	start := graphql.Now()
	q := c.Request.URL.Query()
	params := &graphql.RawParams{
		Query:         q.Get("query"),
		OperationName: q.Get("operationName"),
		Headers:       c.Request.Header,
	}
	for _, p := range []struct {
		name string
		into *map[string]any
	}{{"variables", &params.Variables}, {"extensions", &params.Extensions}} {
		raw := q.Get(p.name)
		if raw == "" {
			continue
		}
		if err := httpedge.DecodeObject([]byte(raw), p.into); err != nil {
			h.api.Abort(c, domain.Invalid(p.name, "The %s parameter must be one JSON object, URL-encoded.", p.name))
			return
		}
	}
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	h.run(c, params, false)
}
