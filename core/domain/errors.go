package domain

import (
	"errors"
	"fmt"
)

// Code is a machine-readable error code of the public API (docs/api.md#errors).
// Every failure the core reports carries one; the edges map it to a transport
// status exactly once.
type Code string

// The error codes the core reports. The edges add their own transport codes
// (routing, request bodies, rate limits, idempotency) beside these.
const (
	CodeMissingAPIKey           Code = "missing_api_key"
	CodeInvalidAPIKey           Code = "invalid_api_key"
	CodePermissionDenied        Code = "permission_denied"
	CodeValidationFailed        Code = "validation_failed"
	CodeNotFound                Code = "resource_not_found"
	CodeAlreadyExists           Code = "resource_already_exists"
	CodeInvalidStatusTransition Code = "invalid_status_transition"
	CodeInternal                Code = "internal_error"
	CodeUnavailable             Code = "service_unavailable"
	// CodeTooManyRequests: past the key's rate limit, or the most
	// subscriptions one key may hold at once.
	CodeTooManyRequests Code = "too_many_requests"
	// CodeSubscriberTooSlow ends a subscription that fell too far behind
	// the events it was sent; it can resume after the last one it received.
	CodeSubscriberTooSlow Code = "subscriber_too_slow"
	// CodeLimitReached: a workspace, user or key holds the most of a
	// resource it may (webhooks, API keys).
	CodeLimitReached Code = "resource_limit_reached"
	// CodeIdempotencyKeyInUse: a request with the same idempotency key is
	// still running, or committed its answer while this one ran (its change
	// is rolled back: docs/api.md#idempotent-requests).
	CodeIdempotencyKeyInUse Code = "idempotency_key_in_use"
)

// Error is the one error type of the core. Param names the request field or
// query parameter at fault, for validation errors. Limit, on a refusal that
// keeps one tenant or client from taking more than its share, names the
// limit; it is not shown to the client, and /metrics counts the refusals by
// it (worktrack_refusals_total{reason}).
type Error struct {
	Code    Code
	Message string
	Param   string
	Limit   string
}

// The shared limits a refusal can name (Error.Limit).
const (
	LimitAuthFailures   = "auth_failures"         // failed authentications from one address
	LimitRate           = "rate_limit"            // a key's requests per window
	LimitGraphQLCost    = "graphql_cost"          // an operation's complexity, depth or text
	LimitSubscriptions  = "subscriptions_per_key" // a key's subscriptions
	LimitSockets        = "sockets_per_key"       // a key's open WebSockets
	LimitSocketsPerUser = "sockets_per_user"      // a user's open WebSockets, all its keys'
	// LimitSocketsPerWorkspace: a workspace's open WebSockets.
	LimitSocketsPerWorkspace = "sockets_per_workspace"
	LimitPendingSockets      = "pending_sockets"        // an address's sockets waiting for connection_init
	LimitSocketInit          = "socket_init_timeout"    // a socket that sent no connection_init
	LimitWebhooks            = "webhooks_per_workspace" // a workspace's webhooks
	LimitAPIKeys             = "api_keys_per_user"      //nolint:gosec // a limit's name, not a credential
	LimitStatementTime       = "statement_timeout"      // a request's database statement past its deadline
	LimitDatabaseShare       = "database_share"         // a workspace's share of the database connections
)

// Limits lists every limit a refusal can name.
var Limits = []string{
	LimitAuthFailures, LimitRate, LimitGraphQLCost, LimitSubscriptions, LimitSockets, LimitSocketsPerUser, LimitSocketsPerWorkspace,
	LimitPendingSockets, LimitSocketInit, LimitWebhooks, LimitAPIKeys, LimitStatementTime, LimitDatabaseShare,
}

// Refusal is a refusal for a shared limit: code (too_many_requests or
// resource_limit_reached) with the limit it names.
func Refusal(code Code, limit, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Limit: limit}
}

func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s: %s (param %s)", e.Code, e.Message, e.Param)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Errorf builds an Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid reports a validation failure of one request field.
func Invalid(param, format string, args ...any) *Error {
	return &Error{Code: CodeValidationFailed, Message: fmt.Sprintf(format, args...), Param: param}
}

// NotFound reports an absent resource. The same answer is given for a resource
// of another workspace, so that ids cannot be probed across tenants.
func NotFound(kind, id string) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf("No such %s: '%s'", kind, id)}
}

// Forbidden reports a role that may not make the call.
func Forbidden(format string, args ...any) *Error {
	return &Error{Code: CodePermissionDenied, Message: fmt.Sprintf(format, args...)}
}

// AsError returns the domain error inside err, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// ErrorCode is the code of err: its own for a domain error, internal_error for
// anything else (whose detail must stay in the log).
func ErrorCode(err error) Code {
	if e, ok := AsError(err); ok {
		return e.Code
	}
	return CodeInternal
}

// IsCode reports whether err carries code.
func IsCode(err error, code Code) bool {
	e, ok := AsError(err)
	return ok && e.Code == code
}
