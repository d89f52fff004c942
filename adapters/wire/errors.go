package wire

import "github.com/worktrack/worktrack/core/domain"

// The transport's own error codes: failures of routing, of the request's
// envelope (body, media type, size), of the edge's idempotency and rate
// limits (docs/api.md#errors). The core never reports them; they are
// domain.Code values so that one error type carries every failure.
const (
	CodeRouteNotFound        domain.Code = "route_not_found"
	CodeMethodNotAllowed     domain.Code = "method_not_allowed"
	CodeUnsupportedMediaType domain.Code = "unsupported_media_type"
	CodeRequestTooLarge      domain.Code = "request_too_large"
	CodeInvalidJSON          domain.Code = "invalid_json"
	CodeIdempotencyKeyReused domain.Code = "idempotency_key_reused"
	CodeIdempotencyKeyInUse              = domain.CodeIdempotencyKeyInUse
	CodeTooManyRequests                  = domain.CodeTooManyRequests
	// CodeClientClosedRequest is what a request becomes when its client
	// went away before the answer: its failure is the client's doing, not
	// the server's. Nobody reads the answer; the access log records it as
	// 499, at info (docs/api.md#under-load-and-faults).
	CodeClientClosedRequest domain.Code = "client_closed_request"
)

// Error types: the broad categories of the API's error object (error.type,
// and the type extension of GraphQL errors).
const (
	TypeAuthentication = "authentication_error"
	TypeInvalidRequest = "invalid_request_error"
	TypeRateLimit      = "rate_limit_error"
	TypeAPI            = "api_error"
)

// TypeOf is the API's error.type of a code.
func TypeOf(c domain.Code) string {
	switch c {
	case domain.CodeMissingAPIKey, domain.CodeInvalidAPIKey:
		return TypeAuthentication
	case CodeTooManyRequests:
		return TypeRateLimit
	case domain.CodeInternal, domain.CodeUnavailable, CodeClientClosedRequest:
		return TypeAPI
	default:
		return TypeInvalidRequest
	}
}

// ErrorBody is the API's error object.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of an error body. Param is present only for
// validation errors.
type ErrorDetail struct {
	Type      string `json:"type"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Param     string `json:"param,omitempty"`
	RequestID string `json:"request_id"`
}
