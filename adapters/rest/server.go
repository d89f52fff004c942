// Package rest is the gin REST adapter: routing, request decoding, the spec's
// snake_case representations and the one code-to-status map. Handlers are
// thin: decode, call one core service, encode.
package rest

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Options configure the HTTP edge.
type Options struct {
	Logger *slog.Logger
	Clock  ports.Clock
	// Limiter counts requests per API key and failed authentications per
	// client address.
	Limiter    ports.RateLimiter
	RateLimit  int           // requests per key per window (default 600)
	RateWindow time.Duration // default 60s
	// AuthFailureLimit failed authentications from one address within
	// AuthFailureWindow (opened at the first failure) block that address
	// until the window closes. Defaults 20 and 60s.
	AuthFailureLimit  int
	AuthFailureWindow time.Duration
	// Idempotency keeps Idempotency-Key records of POSTs; nil disables the
	// feature (the header is then ignored).
	Idempotency ports.IdempotencyStore
	// Ready reports whether the database answers (GET /readyz).
	Ready func(ctx context.Context) error
	// TrustedProxies may set X-Forwarded-For; by default none, so the client
	// address is the connection's and cannot be spoofed to dodge limits.
	TrustedProxies []string
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = app.SystemClock{}
	}
	if o.RateLimit <= 0 {
		o.RateLimit = 600
	}
	if o.RateWindow <= 0 {
		o.RateWindow = time.Minute
	}
	if o.AuthFailureLimit <= 0 {
		o.AuthFailureLimit = 20
	}
	if o.AuthFailureWindow <= 0 {
		o.AuthFailureWindow = time.Minute
	}
}

// Server is the REST API over the core services.
type Server struct {
	app  *app.App
	opts Options
}

// New builds the gin engine: health checks, the REST API under /v1, and the
// shared middleware (request id, access log, recovery, authentication, rate
// limits) that other APIs mounted on the engine (GraphQL) reuse through
// Server.Authenticated.
func New(a *app.App, opts Options) (*gin.Engine, *Server) {
	opts.defaults()
	s := &Server{app: a, opts: opts}

	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.ContextWithFallback = true
	if err := e.SetTrustedProxies(opts.TrustedProxies); err != nil {
		opts.Logger.Warn("ignoring bad trusted proxies", "error", err)
	}
	e.Use(s.requestID, s.accessLog, s.recover)

	e.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	e.GET("/readyz", s.ready)

	v1 := e.Group("/v1", s.restOnly()...)
	v1.GET("/users/me", s.me)
	v1.GET("/users", s.listUsers)
	v1.POST("/projects", s.createProject)
	v1.GET("/projects", s.listProjects)
	v1.GET("/projects/:projectId", s.getProject)
	v1.PATCH("/projects/:projectId", s.updateProject)
	v1.GET("/projects/:projectId/tasks", s.listTasks)
	v1.POST("/projects/:projectId/tasks", s.createTask)
	v1.GET("/tasks/:taskId", s.getTask)
	v1.PATCH("/tasks/:taskId", s.updateTask)
	v1.DELETE("/tasks/:taskId", s.deleteTask)
	v1.POST("/webhooks", s.createWebhook)
	v1.GET("/webhooks", s.listWebhooks)
	v1.GET("/webhooks/:webhookId", s.getWebhook)
	v1.PATCH("/webhooks/:webhookId", s.updateWebhook)
	v1.DELETE("/webhooks/:webhookId", s.deleteWebhook)
	v1.POST("/webhooks/:webhookId/rotate_secret", s.rotateWebhookSecret)
	v1.GET("/webhooks/:webhookId/deliveries", s.listDeliveries)
	v1.POST("/webhooks/:webhookId/deliveries/:deliveryId/redeliver", s.redeliver)

	// Unknown routes and methods under the APIs are answered after
	// authentication, as Stripe does: an anonymous caller learns nothing.
	e.NoRoute(s.unmatched(func(c *gin.Context) {
		abort(c, domain.Errorf(domain.CodeRouteNotFound, "Unrecognized request URL (%s %s).", c.Request.Method, c.Request.URL.Path))
	}))
	e.NoMethod(s.unmatched(func(c *gin.Context) {
		abort(c, domain.Errorf(domain.CodeMethodNotAllowed, "Method %s is not allowed on %s; see the Allow header.", c.Request.Method, c.Request.URL.Path))
	}))
	return e, s
}

// Authenticated is the middleware chain of every API route: refuse blocked
// addresses, authenticate the key, count it against its rate limit, and
// check the body's size and type.
func (s *Server) Authenticated() []gin.HandlerFunc {
	return []gin.HandlerFunc{s.authenticate, s.rateLimit, s.body}
}

// restOnly is the middleware of REST routes only (not GraphQL, which does
// not take the Idempotency-Key header).
func (s *Server) restOnly() []gin.HandlerFunc {
	return append(s.Authenticated(), s.idempotency)
}

func (s *Server) unmatched(final gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := c.Request.URL.Path
		if !strings.HasPrefix(p, "/v1/") && p != "/v1" && !strings.HasPrefix(p, "/graphql") {
			final(c)
			return
		}
		for _, h := range s.Authenticated()[:2] {
			h(c)
			if c.IsAborted() {
				return
			}
		}
		final(c)
	}
}

func (s *Server) ready(c *gin.Context) {
	if s.opts.Ready != nil {
		ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
		defer cancel()
		if err := s.opts.Ready(ctx); err != nil {
			logger(c).Warn("not ready", "error", err.Error())
			c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unavailable"})
			return
		}
	}
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}
