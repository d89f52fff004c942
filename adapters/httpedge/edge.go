// Package httpedge is the one HTTP edge that the REST and GraphQL APIs both
// mount: the gin engine with request ids, the access log and panic recovery;
// per API, authentication (with the failed-authentication block per client
// address), the per-key rate limit, the body size and type limit; the JSON
// body reader, the one code-to-status map, public errors and their
// rendering; idempotent POSTs; unmatched routes and methods; health checks.
//
// The APIs stand beside each other on the edge: each mounts its routes with
// Edge.API, giving its path prefix and the Renderer that writes its errors,
// and neither imports the other.
package httpedge

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/trace"

	"github.com/worktrack/worktrack/adapters/edgeport"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Authenticator resolves the secret of an "Authorization: Bearer" header to
// its caller; missing_api_key or invalid_api_key when it cannot.
// Implemented by core/app's Auth.
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (domain.Actor, error)
}

// Options configure the HTTP edge.
type Options struct {
	Logger *slog.Logger
	Clock  ports.Clock
	// Limiter counts requests per API key and failed authentications per
	// client address.
	Limiter    edgeport.RateLimiter
	RateLimit  int           // requests per key per window (default 600)
	RateWindow time.Duration // default 60s
	// UserRateLimit bounds the requests of all of one user's keys
	// together per window (default RateLimit), WorkspaceRateLimit those of
	// all of one workspace's (default 10 × RateLimit): minting keys buys
	// no more requests.
	UserRateLimit      int
	WorkspaceRateLimit int
	// AuthFailureLimit failed authentications from one address within
	// AuthFailureWindow (opened at the first failure) block that address
	// until the window closes. Defaults 20 and 60s.
	AuthFailureLimit  int
	AuthFailureWindow time.Duration
	// Ready reports whether the database answers (GET /readyz).
	Ready func(ctx context.Context) error
	// TrustedProxies are the addresses or CIDRs of the proxies in front of
	// the server (WORKTRACK_TRUSTED_PROXIES). A request from one of them has
	// as its client address the right-most X-Forwarded-For address that is
	// not itself a trusted proxy; any other request, the TCP peer's. By
	// default none: X-Forwarded-For is ignored and cannot be spoofed to
	// dodge limits.
	TrustedProxies []string
	// Observer, when set, is told of every answered request (metrics).
	Observer RequestObserver
	// CORSOrigins are the origins whose pages may call the APIs
	// (WORKTRACK_CORS_ORIGINS, read by ParseCORSOrigins): exact origins,
	// or "*" alone. None by default: same-origin pages only.
	CORSOrigins []string
	// Tracing, when set, makes every request a server span of it and hands
	// its context to the APIs (docs/operations.md#traces); nil traces
	// nothing and costs nothing.
	Tracing trace.TracerProvider
}

// RequestObserver is told of every answered request: its route template
// ("" when no route matched; never the raw path), method, status (499 for
// a client that went away) and latency; and of every refusal for a shared
// limit, by the limit's name (domain.Limit…). Implemented by
// adapters/metrics.
type RequestObserver interface {
	ObserveRequest(route, method string, status int, took time.Duration)
	ObserveRefusal(limit string)
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = systemClock{}
	}
	if o.RateLimit <= 0 {
		o.RateLimit = 600
	}
	if o.RateWindow <= 0 {
		o.RateWindow = time.Minute
	}
	if o.UserRateLimit <= 0 {
		o.UserRateLimit = o.RateLimit
	}
	if o.WorkspaceRateLimit <= 0 {
		o.WorkspaceRateLimit = 10 * o.RateLimit
	}
	if o.AuthFailureLimit <= 0 {
		o.AuthFailureLimit = 20
	}
	if o.AuthFailureWindow <= 0 {
		o.AuthFailureWindow = time.Minute
	}
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Edge is the gin engine and the middleware the APIs mount on it.
type Edge struct {
	engine *gin.Engine
	auth   Authenticator
	opts   Options
	// prefixes are the APIs' path prefixes (Edge.API), under which unknown
	// routes and methods are answered only after authentication.
	prefixes []string
	// running are the idempotency keys of requests still executing.
	running runningKeys
	// tracer makes each request a server span (serverSpan); nil when
	// tracing is off.
	tracer trace.Tracer
}

// New builds the engine: request ids, the access log and panic recovery on
// every request, GET /healthz and GET /readyz, and the answers to unknown
// routes and methods. The APIs then mount their routes (Edge.API).
func New(auth Authenticator, opts Options) *Edge {
	opts.defaults()
	s := &Edge{auth: auth, opts: opts}

	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.ContextWithFallback = true
	e.RemoteIPHeaders = []string{"X-Forwarded-For"}
	if err := e.SetTrustedProxies(opts.TrustedProxies); err != nil {
		opts.Logger.Warn("ignoring bad trusted proxies", "error", err)
	}
	// Preflights are answered here, before any API's authentication.
	if opts.Tracing != nil {
		s.tracer = opts.Tracing.Tracer("github.com/worktrack/worktrack/adapters/httpedge")
		e.Use(s.requestID, s.serverSpan)
	} else {
		e.Use(s.requestID)
	}
	e.Use(s.accessLog, recoverWith(ErrorObject), corsMiddleware(opts.CORSOrigins))

	e.GET("/healthz", func(c *gin.Context) { JSON(c, http.StatusOK, gin.H{"status": "ok"}) })
	e.GET("/readyz", s.ready)

	// Unknown routes and methods under the APIs are answered after
	// authentication, as Stripe does: an anonymous caller learns nothing.
	// They are answered with the API's error object, whichever the API.
	e.NoRoute(s.unmatched(func(c *gin.Context) {
		ErrorObject.Abort(c, domain.Errorf(wire.CodeRouteNotFound, "Unrecognized request URL (%s %s).", c.Request.Method, c.Request.URL.Path))
	}))
	e.NoMethod(s.unmatched(func(c *gin.Context) {
		ErrorObject.Abort(c, domain.Errorf(wire.CodeMethodNotAllowed, "Method %s is not allowed on %s; see the Allow header.", c.Request.Method, c.Request.URL.Path))
	}))
	s.engine = e
	return s
}

// MountMetrics serves GET /metrics with h. With a token, the request must
// carry "Authorization: Bearer <token>", else 401 with the error object;
// API keys are not accepted there, and the token nowhere else.
func (s *Edge) MountMetrics(h http.Handler, token string) {
	s.engine.GET("/metrics", func(c *gin.Context) {
		if token != "" {
			got := Bearer(c.GetHeader("Authorization"))
			switch {
			case got == "":
				ErrorObject.Abort(c, domain.Errorf(domain.CodeMissingAPIKey, "GET /metrics needs the metrics token: send \"Authorization: Bearer <WORKTRACK_METRICS_TOKEN>\"."))
				return
			case subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1:
				ErrorObject.Abort(c, domain.Errorf(domain.CodeInvalidAPIKey, "The metrics token is not valid."))
				return
			}
		}
		h.ServeHTTP(c.Writer, c.Request)
	})
}

// Engine is the gin engine, to mount routes on and to serve.
func (s *Edge) Engine() *gin.Engine { return s.engine }

// ServeHTTP serves a request through the engine.
func (s *Edge) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.engine.ServeHTTP(w, r) }

// API is one API mounted on the edge: its path prefix and the renderer of
// its errors.
type API struct {
	edge   *Edge
	render Renderer
	// answers are the committed answers of keyed requests (Idempotent).
	answers edgeport.IdempotencyStore
}

// API declares prefix (the path itself and every path below it) as an API's,
// whose errors render is to write, and returns what the API mounts its
// routes with.
func (s *Edge) API(prefix string, render Renderer) *API {
	s.prefixes = append(s.prefixes, prefix)
	return &API{edge: s, render: render}
}

// Chain is the middleware of every route of the API, followed by handlers:
// recover panics, refuse blocked addresses, authenticate the key, count it
// against its rate limit, and check the body's size and type. Each call
// returns a new slice.
func (a *API) Chain(handlers ...gin.HandlerFunc) []gin.HandlerFunc {
	chain := []gin.HandlerFunc{
		recoverWith(a.render),
		func(c *gin.Context) { a.edge.authenticate(c, a.render) },
		func(c *gin.Context) { a.edge.rateLimit(c, a.render) },
		func(c *gin.Context) { body(c, a.render) },
	}
	return append(chain, handlers...)
}

// Abort ends the request with err, in the API's shape.
// A keyed request that lost its key to another process's commit answers
// with that commit's answer instead (replayTaken).
func (a *API) Abort(c *gin.Context, err error) {
	if a.replayTaken(c) {
		return
	}
	a.render.Abort(c, err)
}

// isAPIPath reports whether an API declared p's prefix.
func (s *Edge) isAPIPath(p string) bool {
	for _, prefix := range s.prefixes {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			return true
		}
	}
	return false
}

// unmatched answers with final, after authentication and the rate limit on
// API paths.
func (s *Edge) unmatched(final gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.isAPIPath(c.Request.URL.Path) {
			if s.authenticate(c, ErrorObject); c.IsAborted() {
				return
			}
			if s.rateLimit(c, ErrorObject); c.IsAborted() {
				return
			}
		}
		final(c)
	}
}

func (s *Edge) ready(c *gin.Context) {
	if s.opts.Ready != nil {
		ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
		defer cancel()
		if err := s.opts.Ready(ctx); err != nil {
			Logger(c).WarnContext(ctx, "not ready", "error", err.Error())
			JSON(c, http.StatusServiceUnavailable, gin.H{"status": "unavailable"})
			return
		}
	}
	JSON(c, http.StatusOK, gin.H{"status": "ok"})
}
