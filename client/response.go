package client

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// Response is what an API answer said beside its body: its status, its
// request id (quote it when asking for help), where the key stands in its
// rate-limit window, and whether it replayed an earlier answer. Ask for it
// with CaptureResponse, as stripe-go's LastResponse or go-github's Response
// give it.
type Response struct {
	StatusCode int
	// Header is the answer's whole header.
	Header http.Header
	// RequestID is X-Request-Id.
	RequestID string
	// RateLimit is the key's window as X-RateLimit-* told it (zero when the
	// answer carried none, e.g. from a proxy).
	RateLimit RateLimit
	// Replayed is true for an answer replayed for an Idempotency-Key that an
	// earlier request already used (Idempotent-Replayed: true).
	Replayed bool
}

// RateLimit is a key's rate-limit window (docs/api.md#rate-limits).
type RateLimit struct {
	Limit     int       // requests per window
	Remaining int       // requests left in this window
	Reset     time.Time // when the window ends
}

type responseKey struct{}

// CaptureResponse returns a context whose calls record their answer's
// Response into r: the last answer the call received (for a list, the
// last page's; for a retried call, the final attempt's).
//
//	var res client.Response
//	p, err := c.Projects.Get(client.CaptureResponse(ctx, &res), id)
//	log.Printf("request %s, %d requests left", res.RequestID, res.RateLimit.Remaining)
func CaptureResponse(ctx context.Context, r *Response) context.Context {
	return context.WithValue(ctx, responseKey{}, r)
}

// record fills the Response ctx captures, if any, from res.
func record(ctx context.Context, res *http.Response) {
	r, _ := ctx.Value(responseKey{}).(*Response)
	if r == nil {
		return
	}
	h := res.Header
	*r = Response{
		StatusCode: res.StatusCode,
		Header:     h.Clone(),
		RequestID:  h.Get("X-Request-Id"),
		Replayed:   h.Get("Idempotent-Replayed") == "true",
	}
	limit, err1 := strconv.Atoi(h.Get("X-RateLimit-Limit"))
	remaining, err2 := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	reset, err3 := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	if err1 == nil && err2 == nil && err3 == nil {
		r.RateLimit = RateLimit{Limit: limit, Remaining: remaining, Reset: time.Unix(reset, 0)}
	}
}

// The codes of Error.Code (docs/api.md#errors). An answer that is not the
// API's error object (a proxy's) has the code "http_<status>".
const (
	CodeMissingAPIKey           = "missing_api_key"
	CodeInvalidAPIKey           = "invalid_api_key"
	CodePermissionDenied        = "permission_denied"
	CodeInsufficientScope       = "insufficient_scope"
	CodeInvalidJSON             = "invalid_json"
	CodeUnsupportedMediaType    = "unsupported_media_type"
	CodeValidationFailed        = "validation_failed"
	CodeResourceNotFound        = "resource_not_found"
	CodeRouteNotFound           = "route_not_found"
	CodeMethodNotAllowed        = "method_not_allowed"
	CodeResourceAlreadyExists   = "resource_already_exists"
	CodeResourceLimitReached    = "resource_limit_reached"
	CodeInvalidStatusTransition = "invalid_status_transition"
	CodeRequestTooLarge         = "request_too_large"
	CodeIdempotencyKeyReused    = "idempotency_key_reused"
	CodeIdempotencyKeyInUse     = "idempotency_key_in_use"
	CodeTooManyRequests         = "too_many_requests"
	CodeInternalError           = "internal_error"
	CodeServiceUnavailable      = "service_unavailable"
)
