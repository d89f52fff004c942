// Package rest is the gin REST adapter: routing under /v1, request decoding
// and the API's snake_case representations, mounted on the shared HTTP edge
// (adapters/httpedge). Handlers are thin: decode, call one core service,
// encode, and return any error for the edge to render.
package rest

import (
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/edgeport"
	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// Prefix is the path prefix of the REST API.
const Prefix = "/v1"

// Options configure the REST API.
type Options struct {
	// Idempotency keeps Idempotency-Key records of POSTs; nil disables the
	// feature (the header is then ignored).
	Idempotency edgeport.IdempotencyStore
}

// Server is the REST API over the core services.
type Server struct {
	app *app.App
	api *httpedge.API
}

// Mount serves the REST API under /v1 on the edge, behind the edge's chain
// (authentication, rate limit, body limits) and idempotent POSTs, its errors
// rendered as the API's error object.
func Mount(edge *httpedge.Edge, a *app.App, opts Options) *Server {
	s := &Server{app: a, api: edge.API(Prefix, httpedge.ErrorObject)}
	edge.Engine().GET(Prefix+"/openapi.json", serveOpenAPI)
	edge.Engine().GET("/docs", serveReferencePage)
	edge.Engine().GET("/docs/redoc.standalone.js", serveRedoc)
	v1 := edge.Engine().Group(Prefix, s.api.Chain(s.api.Idempotent(opts.Idempotency))...)
	v1.GET("/users/me", s.handle(s.me))
	v1.GET("/users", s.handle(s.listUsers))
	v1.POST("/projects", s.handle(s.createProject))
	v1.GET("/projects", s.handle(s.listProjects))
	v1.GET("/projects/:projectId", s.handle(s.getProject))
	v1.PATCH("/projects/:projectId", s.handle(s.updateProject))
	v1.GET("/projects/:projectId/tasks", s.handle(s.listTasks))
	v1.POST("/projects/:projectId/tasks", s.handle(s.createTask))
	v1.POST("/projects/:projectId/tasks/batch", s.handle(s.createTasks))
	v1.GET("/tasks", s.handle(s.listAllTasks))
	v1.GET("/tasks/counts", s.handle(s.countTasks))
	v1.GET("/tasks/:taskId", s.handle(s.getTask))
	v1.PATCH("/tasks/:taskId", s.handle(s.updateTask))
	v1.DELETE("/tasks/:taskId", s.handle(s.deleteTask))
	v1.POST("/webhooks", s.handle(s.createWebhook))
	v1.GET("/webhooks", s.handle(s.listWebhooks))
	v1.GET("/webhooks/:webhookId", s.handle(s.getWebhook))
	v1.PATCH("/webhooks/:webhookId", s.handle(s.updateWebhook))
	v1.DELETE("/webhooks/:webhookId", s.handle(s.deleteWebhook))
	v1.POST("/webhooks/:webhookId/rotate_secret", s.handle(s.rotateWebhookSecret))
	v1.POST("/webhooks/:webhookId/ping", s.handle(s.pingWebhook))
	v1.GET("/webhooks/:webhookId/deliveries", s.handle(s.listDeliveries))
	v1.POST("/webhooks/:webhookId/deliveries/:deliveryId/redeliver", s.handle(s.redeliver))
	v1.GET("/events", s.handle(s.listEvents))
	v1.GET("/events/:eventId", s.handle(s.getEvent))
	v1.GET("/audit_events", s.handle(s.listAuditEvents))
	v1.POST("/api_keys", s.handle(s.createAPIKey))
	v1.GET("/api_keys", s.handle(s.listAPIKeys))
	v1.GET("/api_keys/:keyId", s.handle(s.getAPIKey))
	v1.PATCH("/api_keys/:keyId", s.handle(s.updateAPIKey))
	v1.DELETE("/api_keys/:keyId", s.handle(s.revokeAPIKey))
	return s
}

// handler is a REST endpoint: it writes the response, or returns the error
// to answer with instead.
type handler func(c *gin.Context) error

// handle adapts h to gin: an error h returns ends the request in the REST
// shape, so that no endpoint renders errors itself.
func (s *Server) handle(h handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := h(c); err != nil {
			s.api.Abort(c, err)
		}
	}
}

// Actor is the authenticated caller of a REST request.
func Actor(c *gin.Context) domain.Actor { return httpedge.Actor(c) }

// pageRequest reads limit and cursor from the query string. It only turns
// the limit's text into an int; its range and default are the domain's.
func pageRequest(c *gin.Context) (domain.PageRequest, error) {
	req := domain.PageRequest{Cursor: c.Query("cursor")}
	if v, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return req, domain.InvalidLimit()
		}
		req.Limit = domain.Set(n)
	}
	return req, nil
}
