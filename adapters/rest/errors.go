package rest

import (
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
)

// statusOf is the one map from error code to HTTP status (contract section 4).
var statusOf = map[domain.Code]int{
	domain.CodeMissingAPIKey:           http.StatusUnauthorized,
	domain.CodeInvalidAPIKey:           http.StatusUnauthorized,
	domain.CodePermissionDenied:        http.StatusForbidden,
	domain.CodeInvalidJSON:             http.StatusBadRequest,
	domain.CodeUnsupportedMediaType:    http.StatusUnsupportedMediaType,
	domain.CodeValidationFailed:        http.StatusBadRequest,
	domain.CodeNotFound:                http.StatusNotFound,
	domain.CodeRouteNotFound:           http.StatusNotFound,
	domain.CodeMethodNotAllowed:        http.StatusMethodNotAllowed,
	domain.CodeAlreadyExists:           http.StatusConflict,
	domain.CodeInvalidStatusTransition: http.StatusConflict,
	domain.CodeRequestTooLarge:         http.StatusRequestEntityTooLarge,
	domain.CodeIdempotencyKeyReused:    http.StatusConflict,
	domain.CodeIdempotencyKeyInUse:     http.StatusConflict,
	domain.CodeTooManyRequests:         http.StatusTooManyRequests,
	domain.CodeInternal:                http.StatusInternalServerError,
	domain.CodeUnavailable:             http.StatusServiceUnavailable,
}

// StatusOf returns the HTTP status of an error code.
func StatusOf(code domain.Code) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// ErrorRenderer writes an error response. REST uses the spec's error object;
// the GraphQL route installs one that writes a GraphQL-shaped body, so that
// the shared authentication and rate-limit middleware answers each API in its
// own shape.
type ErrorRenderer func(c *gin.Context, status int, e *domain.Error, requestID string)

const rendererKey = "worktrack.errorRenderer"

// UseErrorRenderer makes r the renderer of errors for the rest of the chain.
func UseErrorRenderer(r ErrorRenderer) gin.HandlerFunc {
	return func(c *gin.Context) { c.Set(rendererKey, r); c.Next() }
}

func renderREST(c *gin.Context, status int, e *domain.Error, requestID string) {
	c.AbortWithStatusJSON(status, wire.ErrorBody{Error: wire.ErrorDetail{
		Type: e.Code.Type(), Code: string(e.Code), Message: e.Message, Param: e.Param, RequestID: requestID,
	}})
}

// PublicError turns any error into what a client may see. Domain errors pass
// as they are (the store reports a lost database as service_unavailable);
// anything else becomes internal_error, its detail logged under the request
// id and never sent.
func PublicError(c *gin.Context, err error) *domain.Error {
	if e, ok := domain.AsError(err); ok {
		if e.Code == domain.CodeUnavailable || e.Code == domain.CodeInternal {
			logger(c).Error("request failed", "request_id", RequestID(c), "error", err.Error())
		}
		return e
	}
	logger(c).Error("request failed", "request_id", RequestID(c), "error", err.Error())
	return domain.Errorf(domain.CodeInternal, "An unexpected error occurred. Quote the request id when contacting support.")
}

// abort ends the request with err.
func abort(c *gin.Context, err error) {
	e := PublicError(c, err)
	render := renderREST
	if r, ok := c.Get(rendererKey); ok {
		render = r.(ErrorRenderer)
	}
	render(c, StatusOf(e.Code), e, RequestID(c))
}

func logger(c *gin.Context) *slog.Logger {
	if l, ok := c.Get(loggerKey); ok {
		return l.(*slog.Logger)
	}
	return slog.Default()
}
