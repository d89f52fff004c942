package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/99designs/gqlgen/graphql/playground"
	"github.com/gin-gonic/gin"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/worktrack/worktrack/adapters/rest"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// Path is where GraphQL is served.
const Path = "/graphql"

// Defaults of Options.
const (
	DefaultMaxComplexity = 25_000
	DefaultMaxDepth      = 12
	DefaultAPQCacheSize  = 1_000
	DefaultLoaderWait    = 10 * time.Millisecond
)

// Options configure the GraphQL edge.
type Options struct {
	// MaxComplexity refuses, before it runs, an operation whose complexity
	// (connections weigh first × their items, see complexity) exceeds it.
	MaxComplexity int
	// MaxDepth refuses, before it runs, an operation nested deeper.
	MaxDepth int
	// APQCacheSize is how many automatic persisted queries are remembered
	// (least recently used are forgotten first).
	APQCacheSize int
	// LoaderWait is how long a dataloader waits to gather a batch.
	LoaderWait time.Duration
	// Logger receives resolver panics; errors are logged through the REST
	// server's logger (rest.PublicError), keyed by request id.
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.MaxComplexity <= 0 {
		o.MaxComplexity = DefaultMaxComplexity
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.APQCacheSize <= 0 {
		o.APQCacheSize = DefaultAPQCacheSize
	}
	if o.LoaderWait <= 0 {
		o.LoaderWait = DefaultLoaderWait
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// NewServer builds the gqlgen server: POST transport, introspection,
// automatic persisted queries, the depth and complexity limits, the error
// presenter. It expects the request context prepared by Mount's handler.
func NewServer(a *app.App, o Options) *handler.Server {
	o.defaults()
	srv := handler.New(NewExecutableSchema(Config{Resolvers: &Resolver{App: a}, Complexity: complexity()}))
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.Use(extension.Introspection{})
	srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](o.APQCacheSize)})
	srv.Use(depthLimit{max: o.MaxDepth})
	srv.Use(extension.FixedComplexityLimit(o.MaxComplexity))
	srv.SetErrorPresenter(presentError)
	srv.SetRecoverFunc(recoverPanic(o.Logger))
	return srv
}

// Mount serves GraphQL on the engine built by rest.New, behind the same
// middleware as the REST API (authentication, the failed-authentication
// block, the per-key rate limit, body size and type), whose errors are
// rendered in the GraphQL shape on these routes:
//
//	POST /graphql             queries and mutations
//	GET  /graphql             the GraphiQL page, for requests that accept text/html
//	                          (no key needed: the page holds no data); otherwise 405
//	any other method          405, after authentication
func Mount(e *gin.Engine, rs *rest.Server, a *app.App, o Options) {
	o.defaults()
	h := &httpHandler{gql: NewServer(a, o), app: a, wait: o.LoaderWait}
	// authenticated is the shared REST chain, rendering its errors in the
	// GraphQL shape, followed by handlers.
	authenticated := func(handlers ...gin.HandlerFunc) []gin.HandlerFunc {
		chain := append([]gin.HandlerFunc{rest.UseErrorRenderer(renderHTTPError)}, rs.Authenticated()...)
		return append(chain, handlers...)
	}
	graphiql := playground.Handler("Worktrack GraphQL", Path)
	servePage := func(c *gin.Context) {
		if acceptsHTML(c.Request) {
			graphiql(c.Writer, c.Request)
			c.Abort()
		}
	}

	e.POST(Path, authenticated(h.serve)...)
	e.GET(Path, append([]gin.HandlerFunc{servePage}, authenticated(methodNotAllowed)...)...)
	for _, m := range []string{http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions} {
		e.Handle(m, Path, authenticated(methodNotAllowed)...)
	}
}

type httpHandler struct {
	gql  http.Handler
	app  *app.App
	wait time.Duration
}

// serve runs one GraphQL request for the authenticated caller, with fresh
// dataloaders. The body must be one JSON object: anything else is refused
// as over REST (invalid_json, request_too_large), in the GraphQL shape.
func (h *httpHandler) serve(c *gin.Context) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			fail(c, domain.Errorf(domain.CodeRequestTooLarge, "The request body must be at most %d bytes.", rest.MaxBodyBytes))
			return
		}
		fail(c, err)
		return
	}
	if !isJSONObject(body) {
		fail(c, domain.Errorf(domain.CodeInvalidJSON,
			"The request body must be one JSON object: {\"query\": \"…\", \"variables\": {…}, \"operationName\": \"…\"}."))
		return
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(body))

	who := rest.Actor(c)
	ctx := withRequest(c.Request.Context(), &request{actor: who, loaders: newLoaders(h.app, who, h.wait), gin: c})
	h.gql.ServeHTTP(c.Writer, c.Request.WithContext(ctx))
}

func isJSONObject(body []byte) bool {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return false
	}
	return !dec.More() && dec.InputOffset() == int64(len(trimmed))
}

func methodNotAllowed(c *gin.Context) {
	c.Header("Allow", "GET, POST")
	fail(c, domain.Errorf(domain.CodeMethodNotAllowed,
		"Send GraphQL requests with POST %s; GET %s serves the GraphiQL page to browsers (Accept: text/html).", Path, Path))
}

// fail ends the request with err in the GraphQL shape.
func fail(c *gin.Context, err error) {
	e := rest.PublicError(c, err)
	renderHTTPError(c, rest.StatusOf(e.Code), e, rest.RequestID(c))
}

func acceptsHTML(r *http.Request) bool {
	return strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/html")
}
