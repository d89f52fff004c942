package graph

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gin-gonic/gin"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/worktrack/worktrack/adapters/httpedge"
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
	// Logger receives resolver panics; errors are logged through the edge's
	// logger (httpedge.PublicError), keyed by request id.
	Logger *slog.Logger

	// budget is the process's workBudget, shared by the HTTP and the
	// WebSocket server that Mount makes. It holds MaxComplexity: one
	// setting bounds both what one operation may cost and how much runs at
	// once (five projects × tasks dashboards by default), so that any
	// operation the limit lets through can run.
	budget workBudget
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
	if !o.budget.set() {
		o.budget = newWorkBudget(o.MaxComplexity)
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
	configure(srv, o)
	srv.Use(noSubscriptionsOverPOST{})
	return srv
}

// configure gives a server of either transport the same cache, extensions,
// limits and error handling.
func configure(srv *handler.Server, o Options) {
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.Use(extension.Introspection{})
	srv.Use(documentLimit{}) // before the persisted-query cache stores a query
	srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](o.APQCacheSize)})
	srv.Use(depthLimit{max: o.MaxDepth})
	srv.Use(extension.FixedComplexityLimit(o.MaxComplexity))
	srv.Use(o.budget)
	srv.SetErrorPresenter(presentError)
	srv.SetRecoverFunc(recoverPanic(o.Logger))
}

// Mount serves GraphQL on the HTTP edge, behind the same chain as the REST
// API (authentication, the failed-authentication block, the per-key rate
// limit, body size and type), whose errors are rendered in the GraphQL shape
// on these routes:
//
//	POST /graphql             queries and mutations
//	GET  /graphql             a WebSocket upgrade: subscriptions (and queries and
//	                          mutations) over graphql-transport-ws, authenticated
//	                          by connection_init; else the GraphiQL page, for
//	                          requests that accept text/html (no key needed: the
//	                          page holds no data); otherwise 405
//	any other method          405, after authentication
//
// It returns the open WebSockets, for the server to close on shutdown.
func Mount(edge *httpedge.Edge, a *app.App, o Options) *Sockets {
	o.defaults()
	api := edge.API(Path, renderHTTPError)
	sockets := newSockets(a.Auth)
	ws := newWSHandler(edge, api, a, o, sockets)
	h := &httpHandler{gql: NewServer(a, o), app: a, wait: o.LoaderWait, api: api}
	graphiql, script, style := graphiqlHandlers()
	servePage := func(c *gin.Context) {
		if acceptsHTML(c.Request) {
			graphiql(c)
			c.Abort()
		}
	}

	e := edge.Engine()
	e.GET(GraphiQLAssetPath+"/graphiql.js", script)
	e.GET(GraphiQLAssetPath+"/graphiql.css", style)
	e.POST(Path, api.Chain(h.serve)...)
	e.GET(Path, append([]gin.HandlerFunc{ws.upgrade, servePage}, api.Chain(h.methodNotAllowed)...)...)
	for _, m := range []string{http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions} {
		e.Handle(m, Path, api.Chain(h.methodNotAllowed)...)
	}
	return sockets
}

type httpHandler struct {
	gql  http.Handler
	app  *app.App
	wait time.Duration
	api  *httpedge.API
}

// serve runs one GraphQL request for the authenticated caller, with fresh
// dataloaders. The body must be one JSON object: anything else is refused
// as over REST (invalid_json, request_too_large), in the GraphQL shape.
func (h *httpHandler) serve(c *gin.Context) {
	body, err := httpedge.ReadBody(c)
	if err != nil {
		h.api.Abort(c, err)
		return
	}
	obj, err := httpedge.ParseObject(body)
	if err != nil {
		h.api.Abort(c, domain.Errorf(httpedge.CodeInvalidJSON,
			"The request body must be one JSON object: {\"query\": \"…\", \"variables\": {…}, \"operationName\": \"…\"}."))
		return
	}
	if err := checkEnvelope(obj); err != nil {
		h.api.Abort(c, err)
		return
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(body))

	who := httpedge.Actor(c)
	ctx := withRequest(c.Request.Context(), &request{actor: who, loaders: newLoaders(h.app, who, h.wait), gin: c})
	h.gql.ServeHTTP(c.Writer, c.Request.WithContext(ctx))
}

func (h *httpHandler) methodNotAllowed(c *gin.Context) {
	c.Header("Allow", "GET, POST")
	h.api.Abort(c, domain.Errorf(httpedge.CodeMethodNotAllowed,
		"Send GraphQL requests with POST %s; GET %s serves the GraphiQL page to browsers (Accept: text/html).", Path, Path))
}

func acceptsHTML(r *http.Request) bool {
	return strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/html")
}

// envelope are the members of a GraphQL request body and the JSON type each
// must have, null aside.
var envelope = []struct{ name, want, kind string }{
	{"query", "a string", "\""},
	{"operationName", "a string", "\""},
	{"variables", "an object", "{"},
	{"extensions", "an object", "{"},
}

// checkEnvelope refuses a body whose members have the wrong JSON type
// (validation_failed, param the member) before gqlgen decodes it: gqlgen
// would answer with its decoder's message and the whole body echoed back.
func checkEnvelope(obj httpedge.Object) error {
	for _, m := range envelope {
		raw, ok := obj[m.name]
		if !ok {
			continue
		}
		v := bytes.TrimSpace(raw)
		if string(v) == "null" {
			continue
		}
		if len(v) == 0 || v[0] != m.kind[0] {
			return domain.Invalid(m.name, "Must be %s.", m.want)
		}
	}
	return nil
}
