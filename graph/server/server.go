// Package server is the GraphQL transport: it serves the schema of package
// graph on the HTTP edge, as POST /graphql (queries and mutations) and as
// WebSocket (graphql-transport-ws: subscriptions, queries and mutations),
// with the limits every operation passes (query text, depth, complexity,
// the tasks one document may create, the work budget) and the GraphiQL
// page. It imports graph; graph never imports it.
package server

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/gin-gonic/gin"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/otel/trace"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph"
)

// Path is where GraphQL is served.
const Path = "/graphql"

// Defaults of Options.
const (
	DefaultMaxComplexity = 25_000
	DefaultMaxDepth      = 12
	DefaultAPQCacheSize  = 1_000
	DefaultLoaderWait    = 10 * time.Millisecond
	DefaultInitTimeout   = 10 * time.Second
	// DefaultWriteTimeout is Options.WriteTimeout's default.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultKeyCheckInterval is Options.KeyCheckInterval's default.
	DefaultKeyCheckInterval = 2 * time.Second
)

// Options configure the GraphQL transport.
type Options struct {
	// MaxComplexity refuses, before it runs, an operation whose complexity
	// (connections weigh first × their items, see graph.Complexity) exceeds
	// it.
	MaxComplexity int
	// MaxDepth refuses, before it runs, an operation nested deeper.
	MaxDepth int
	// APQCacheSize is how many automatic persisted queries are remembered
	// (least recently used are forgotten first).
	APQCacheSize int
	// LoaderWait is how long a dataloader waits to gather a batch.
	LoaderWait time.Duration
	// InitTimeout is how long a new WebSocket may take to send
	// connection_init before it is closed with 4408 (default 10s).
	InitTimeout time.Duration
	// WriteTimeout bounds the write of one message over a WebSocket: a
	// client that reads nothing for this long is disconnected (default
	// 10s).
	WriteTimeout time.Duration
	// KeyCheckInterval is how often an open socket's key is resolved again,
	// so that a revoked or expired key, or a changed role, closes it
	// (default 2s; with the key cache's 5 seconds, within 10 seconds).
	KeyCheckInterval time.Duration
	// Logger receives resolver panics; errors are logged through the edge's
	// logger (httpedge.PublicError), keyed by request id.
	Logger *slog.Logger
	// Tracing, when set, makes each operation, each field with a resolver
	// and each subscription message sent a span of it; nil traces nothing.
	Tracing trace.TracerProvider

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
	if o.InitTimeout <= 0 {
		o.InitTimeout = DefaultInitTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.KeyCheckInterval <= 0 {
		o.KeyCheckInterval = DefaultKeyCheckInterval
	}
	if !o.budget.set() {
		o.budget = newWorkBudget(o.MaxComplexity)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// executorConfig is what configure sets: gqlgen's executor (POST) and its
// server (WebSocket) both have it.
type executorConfig interface {
	SetQueryCache(graphql.Cache[*ast.QueryDocument])
	Use(graphql.HandlerExtension)
	SetErrorPresenter(graphql.ErrorPresenterFunc)
	SetRecoverFunc(graphql.RecoverFunc)
}

// configure gives the executors of either transport the same cache,
// extensions, limits and error handling.
func configure(srv executorConfig, o Options) {
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.Use(extension.Introspection{})
	srv.Use(queryTextLimit{}) // before the persisted-query cache stores a query
	srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](o.APQCacheSize)})
	srv.Use(depthLimit{max: o.MaxDepth})
	srv.Use(extension.FixedComplexityLimit(o.MaxComplexity))
	srv.Use(graph.BatchLimit())
	srv.Use(o.budget)
	if o.Tracing != nil {
		srv.Use(tracing{tracer: o.Tracing.Tracer(tracerName)})
	}
	srv.SetErrorPresenter(graph.PresentError)
	srv.SetRecoverFunc(graph.Recover(o.Logger))
}

// Mount serves GraphQL on the HTTP edge, behind the same chain as the REST
// API (authentication, the failed-authentication block, the per-key rate
// limit, body size and type), whose errors are rendered in the GraphQL shape
// on these routes:
//
//	POST /graphql             queries and mutations
//	GET  /graphql             a WebSocket upgrade: subscriptions (and queries and
//	                          mutations) over graphql-transport-ws, authenticated
//	                          by connection_init; else, without query or
//	                          extensions, the GraphiQL page for requests that
//	                          accept text/html (no key needed: the page holds
//	                          no data); otherwise a query (GraphQL over HTTP
//	                          GET: a mutation is 405, Allow: POST)
//	any other method          405, after authentication
//
// It returns the open WebSockets, for the server to close on shutdown.
func Mount(edge *httpedge.Edge, a *app.App, o Options) *Sockets {
	o.defaults()
	api := edge.API(Path, renderHTTPError)
	sockets := newSockets(a.Auth, o.KeyCheckInterval)
	ws := newWSHandler(edge, api, a, o, sockets)
	h := &postHandler{exec: newExecutor(a, o), app: a, wait: o.LoaderWait, api: api}
	servePage := func(c *gin.Context) {
		if acceptsHTML(c.Request) && !c.Request.URL.Query().Has("query") && !c.Request.URL.Query().Has("extensions") {
			serveGraphiQL(c)
			c.Abort()
		}
	}

	e := edge.Engine()
	mountGraphiQLAssets(e)
	e.POST(Path, api.Chain(h.serve)...)
	e.GET(Path, append([]gin.HandlerFunc{ws.upgrade, servePage}, api.Chain(h.serveGET)...)...)
	for _, m := range []string{http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions} {
		e.Handle(m, Path, api.Chain(h.methodNotAllowed)...)
	}
	return sockets
}

// caller is the graph.Caller of a request that passed the edge's chain (or
// of a WebSocket upgrade, with the key its connection_init authenticated).
func caller(c *gin.Context, who domain.Actor) graph.Caller {
	return graph.Caller{
		Actor:     who,
		RequestID: httpedge.RequestID(c),
		Public:    func(err error) *domain.Error { return httpedge.PublicError(c, err) },
	}
}

func (h *postHandler) methodNotAllowed(c *gin.Context) {
	c.Header("Allow", "GET, POST")
	h.api.Abort(c, domain.Errorf(wire.CodeMethodNotAllowed,
		"Send GraphQL requests with POST %s (queries may also be sent with GET %s?query=…).", Path, Path))
}

func acceptsHTML(r *http.Request) bool {
	return strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/html")
}
