package server

import (
	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph"
)

// httpError is the GraphQL-shaped body of a request refused before GraphQL
// runs: 401 and 429 from the edge's chain, 405, 413, 415 and invalid JSON
// bodies.
type httpError struct {
	Errors []httpErrorItem `json:"errors"`
	Data   *struct{}       `json:"data"`
}

type httpErrorItem struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

// renderHTTPError is the httpedge.Renderer of the /graphql routes, so that
// the edge's authentication, rate-limit and body middleware answer in the
// GraphQL shape, at the same HTTP status and with the same extensions.
func renderHTTPError(c *gin.Context, status int, e *domain.Error, requestID string) {
	c.Abort()
	httpedge.JSON(c, status, httpError{Errors: []httpErrorItem{{Message: e.Message, Extensions: graph.Extensions(e, requestID)}}})
}
