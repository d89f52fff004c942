package httpedge

import (
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
)

// StatusClientClosedRequest is nginx's status for a request whose client
// closed the connection before the answer; net/http has no name for it.
const StatusClientClosedRequest = 499

// statusOf is the one map from error code to HTTP status (docs/api.md#errors).
var statusOf = map[domain.Code]int{
	domain.CodeMissingAPIKey:           http.StatusUnauthorized,
	domain.CodeInvalidAPIKey:           http.StatusUnauthorized,
	domain.CodePermissionDenied:        http.StatusForbidden,
	domain.CodeInsufficientScope:       http.StatusForbidden,
	wire.CodeInvalidJSON:               http.StatusBadRequest,
	wire.CodeUnsupportedMediaType:      http.StatusUnsupportedMediaType,
	domain.CodeValidationFailed:        http.StatusBadRequest,
	domain.CodeNotFound:                http.StatusNotFound,
	wire.CodeRouteNotFound:             http.StatusNotFound,
	wire.CodeMethodNotAllowed:          http.StatusMethodNotAllowed,
	domain.CodeAlreadyExists:           http.StatusConflict,
	domain.CodeLimitReached:            http.StatusConflict,
	domain.CodeInvalidStatusTransition: http.StatusConflict,
	wire.CodeRequestTooLarge:           http.StatusRequestEntityTooLarge,
	wire.CodeIdempotencyKeyReused:      http.StatusConflict,
	wire.CodeIdempotencyKeyInUse:       http.StatusConflict,
	wire.CodeTooManyRequests:           http.StatusTooManyRequests,
	domain.CodeInternal:                http.StatusInternalServerError,
	domain.CodeUnavailable:             http.StatusServiceUnavailable,
	wire.CodeClientClosedRequest:       StatusClientClosedRequest,
}

// StatusOf returns the HTTP status of an error code.
func StatusOf(code domain.Code) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Renderer writes an error response in one API's shape and aborts the chain.
// Each API picks its renderer where it mounts (Edge.API): REST answers with
// the API's error object, GraphQL with a GraphQL-shaped body, so that the
// shared middleware answers each API in its own shape.
type Renderer func(c *gin.Context, status int, e *domain.Error, requestID string)

// ErrorObject renders the API's error object, {"error": {type, code,
// message, param, request_id}}: the REST API's shape, and the edge's own for
// paths no API owns (unknown routes, health checks).
var ErrorObject Renderer = errorObject

func errorObject(c *gin.Context, status int, e *domain.Error, requestID string) {
	c.Abort()
	JSON(c, status, wire.ErrorBody{Error: wire.ErrorDetail{
		Type: wire.TypeOf(e.Code), Code: string(e.Code), Message: e.Message, Param: e.Param, RequestID: requestID,
	}})
}

// Abort ends the request with err, rendered by r at err's status.
func (r Renderer) Abort(c *gin.Context, err error) {
	e := PublicError(c, err)
	status := StatusOf(e.Code)
	if status == http.StatusTooManyRequests && c.Writer.Header().Get("Retry-After") == "" {
		// A refusal that is not a window's (a workspace's share of the
		// database) frees within moments.
		c.Header("Retry-After", "1")
	}
	r(c, status, e, RequestID(c))
}

// internalMessage is what a client is told of an unexpected failure.
const internalMessage = "An unexpected error occurred. Quote the request id when contacting support."

// PublicError turns any error into what a client may see. Domain errors pass
// as they are (the store reports a lost database as service_unavailable);
// anything else becomes internal_error, its detail logged under the request
// id and never sent. A failure while the client is already gone (its request
// context cancelled: a query interrupted, a connection the driver closed) is
// no server error: it becomes client_closed_request, logged by the access log
// alone, as 499 at info.
func PublicError(c *gin.Context, err error) *domain.Error {
	e, ok := domain.AsError(err)
	if ok && e.Limit != "" {
		if o, found := c.Get(observerKey); found {
			o.(RequestObserver).ObserveRefusal(e.Limit)
		}
	}
	serverFault := !ok || e.Code == domain.CodeUnavailable || e.Code == domain.CodeInternal
	if !serverFault {
		return e
	}
	if ClientGone(c) {
		c.Set(clientClosedKey, true)
		return errClientClosed
	}
	Logger(c).ErrorContext(c.Request.Context(), "request failed", "request_id", RequestID(c), "error", err.Error())
	if ok {
		return e
	}
	return domain.Errorf(domain.CodeInternal, internalMessage)
}

var errClientClosed = domain.Errorf(wire.CodeClientClosedRequest, "The client closed the request before it was answered.")

// ClientGone reports whether the client of the request went away: net/http
// cancels a request's context when its connection closes (or, for HTTP/2, its
// stream is reset), and at no other time while the handler runs; a server
// shutdown lets in-flight requests finish with their contexts intact.
func ClientGone(c *gin.Context) bool {
	return c.Request.Context().Err() != nil
}

// Logger is the edge's logger, for the handlers of a request.
func Logger(c *gin.Context) *slog.Logger {
	if l, ok := c.Get(loggerKey); ok {
		return l.(*slog.Logger)
	}
	return slog.Default()
}
