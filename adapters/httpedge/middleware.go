package httpedge

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/edgeport"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

const (
	requestIDKey = "worktrack.requestID"
	loggerKey    = "worktrack.logger"
	observerKey  = "worktrack.observer"
	actorKey     = "worktrack.actor"
	// clientClosedKey marks a request whose failure PublicError put down to
	// its client going away (an API that answers 200 with errors, GraphQL,
	// still logs it as 499).
	clientClosedKey = "worktrack.clientClosed"

	// MaxBodyBytes is the largest request body accepted (docs/api.md#errors).
	MaxBodyBytes = 1 << 20
)

// RequestID returns the id of the request, "req_…".
func RequestID(c *gin.Context) string { return c.GetString(requestIDKey) }

// Actor returns the authenticated caller; only valid behind an API's chain
// (API.Chain).
func Actor(c *gin.Context) domain.Actor {
	a, _ := c.Get(actorKey)
	actor, _ := a.(domain.Actor)
	return actor
}

func (s *Edge) requestID(c *gin.Context) {
	id := domain.NewID(domain.PrefixRequest)
	c.Set(requestIDKey, id)
	c.Set(loggerKey, s.opts.Logger)
	if s.opts.Observer != nil {
		c.Set(observerKey, s.opts.Observer)
	}
	c.Header("X-Request-Id", id)
	// Every statement of a request runs under the database budget; the
	// workspace's seats apply once the caller is known (authenticate). The
	// phases add up where its database work spent its time (accessLog).
	c.Request = c.Request.WithContext(ports.WithRequestScope(c.Request.Context(), new(ports.Phases)))
	c.Next()
}

// accessLog writes one JSON line per request, at info; a request whose client
// went away before its answer is logged as 499 (docs/api.md#under-load-and-faults), never
// as the 5xx its interrupted work may have produced. The attributes are
// slog.Attr values on the stack (LogAttrs), not key-value pairs boxed into a
// []any, so that the line costs the handler's encoding and little else.
func (s *Edge) accessLog(c *gin.Context) {
	start := time.Now()
	scope, _ := ports.DBScopeOf(c.Request.Context())
	c.Next()
	status := c.Writer.Status()
	if ClientGone(c) && (status >= 500 || c.GetBool(clientClosedKey)) {
		status = StatusClientClosedRequest
	}
	if s.opts.Observer != nil {
		s.opts.Observer.ObserveRequest(c.FullPath(), c.Request.Method, status, time.Since(start))
	}
	log := s.opts.Logger
	ctx := c.Request.Context()
	if !log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	attrs := [11]slog.Attr{
		slog.String("request_id", RequestID(c)),
		slog.String("method", c.Request.Method),
		slog.String("path", c.Request.URL.Path),
		slog.Int("status", status),
		slog.Float64("latency_ms", ms(time.Since(start))),
		// Of the latency: waiting for database seats, and holding them
		// (the statements and their connections).
		slog.Float64("queued_ms", ms(scope.Phases.Queued())),
		slog.Float64("db_ms", ms(scope.Phases.Database())),
		slog.Int("bytes", c.Writer.Size()),
		slog.String("client_ip", c.ClientIP()),
	}
	n := 9
	if a := Actor(c); a.UserID != "" {
		attrs[9], attrs[10] = slog.String("user_id", a.UserID), slog.String("key_id", a.KeyID)
		n = 11
	}
	log.LogAttrs(ctx, slog.LevelInfo, "request", attrs[:n]...)
}

// recoverWith turns a panic into a 500 rendered by render, with the stack
// only in the log.
func recoverWith(render Renderer) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler { //nolint:errorlint // net/http documents this sentinel for re-panicking; it is never wrapped
					panic(r)
				}
				Logger(c).ErrorContext(c.Request.Context(), "panic", "request_id", RequestID(c), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				render.Abort(c, domain.Errorf(domain.CodeInternal, internalMessage))
			}
		}()
		c.Next()
	}
}

// Bearer extracts the token of an "Authorization: Bearer <token>" header
// value. The scheme is case-insensitive; anything else counts as no key.
func Bearer(h string) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// authenticate resolves the request's key (Authenticate) or aborts. The
// request's context carries from here what the audit log keeps of it
// (ports.RequestInfo): its client address, user agent and id.
func (s *Edge) authenticate(c *gin.Context, render Renderer) {
	ip := c.ClientIP()
	ctx := ports.WithRequestInfo(c.Request.Context(), ports.RequestInfo{IP: ip, UserAgent: c.Request.UserAgent(), RequestID: RequestID(c)})
	actor, blockedUntil, err := s.resolveKey(ctx, ip, Bearer(c.GetHeader("Authorization")))
	if err != nil {
		if !blockedUntil.IsZero() {
			setRetryAfter(c, blockedUntil, s.opts.Clock.Now())
		}
		render.Abort(c, err)
		return
	}
	c.Set(actorKey, actor)
	c.Request = c.Request.WithContext(ports.WithDBScope(ctx, actor.WorkspaceID))
	c.Next()
}

// Authenticate resolves secret, sent from the client address addr, to its
// caller. A key that authenticates is never refused for its address: many
// clients share one behind a proxy or NAT. A missing or invalid key counts
// as a failure of addr; once addr has failed AuthFailureLimit times in its
// window, it is answered too_many_requests instead of 401 until the window
// closes, so keys cannot be guessed at speed. The API chain does this for
// every request; the GraphQL WebSocket transport calls it for the key of
// connection_init.
func (s *Edge) Authenticate(ctx context.Context, addr, secret string) (domain.Actor, error) {
	actor, _, err := s.resolveKey(ctx, addr, secret)
	return actor, err
}

// resolveKey is Authenticate, with the end of the address's block when it
// is blocked.
func (s *Edge) resolveKey(ctx context.Context, addr, secret string) (domain.Actor, time.Time, error) {
	actor, err := s.auth.Authenticate(ctx, secret)
	if err == nil {
		return actor, time.Time{}, nil
	}
	if code := domain.ErrorCode(err); code != domain.CodeMissingAPIKey && code != domain.CodeInvalidAPIKey {
		return domain.Actor{}, time.Time{}, err
	}
	key := "authfail:" + addr
	now := s.opts.Clock.Now()
	d, lerr := s.opts.Limiter.Take(ctx, key, s.opts.AuthFailureLimit, s.opts.AuthFailureWindow, now)
	if lerr != nil {
		// A limiter outage must not take the API down with it: fail open.
		// The outage is reported once, where the limiter is guarded
		// (ratelimit.Guard); a line per request would flood the log.
		s.opts.Logger.Debug("auth failure limiter unavailable", "error", lerr.Error())
		return domain.Actor{}, time.Time{}, err
	}
	if !d.Allowed {
		return domain.Actor{}, d.Reset, domain.Refusal(wire.CodeTooManyRequests, domain.LimitAuthFailures,
			"Too many failed authentications from your address. Retry after the time in the Retry-After header, with a valid key.")
	}
	return domain.Actor{}, time.Time{}, err
}

// rateLimit counts the request against its key's, its user's and its
// workspace's windows and reports the tightest of them in both the
// X-RateLimit-* and the IETF draft headers.
func (s *Edge) rateLimit(c *gin.Context, render Renderer) {
	now := s.opts.Clock.Now()
	d, window, refusal, err := s.takeRequest(c.Request.Context(), Actor(c), now)
	if err != nil {
		Logger(c).DebugContext(c.Request.Context(), "rate limiter unavailable", "error", err.Error())
		c.Next()
		return
	}
	setRateLimitHeaders(c.Writer.Header(), d, window, now)
	if refusal != nil {
		setRetryAfter(c, d.Reset, now)
		render.Abort(c, refusal)
		return
	}
	c.Next()
}

// takeRequest counts one request of a against the windows of its key, its
// user and its workspace, in that order, stopping at the first that
// refuses it. It returns the tightest decision (the refusing one, else the
// one with the fewest requests left), its window, and the refusal.
func (s *Edge) takeRequest(ctx context.Context, a domain.Actor, now time.Time) (edgeport.RateDecision, time.Duration, *domain.Error, error) {
	var tightest edgeport.RateDecision
	for i, w := range [3]struct {
		key   string
		limit int
		who   string
	}{
		{"key:" + a.KeyID, s.opts.RateLimit, "this API key"},
		{"user:" + a.UserID, s.opts.UserRateLimit, "this API key's user, all its keys together"},
		{"workspace:" + a.WorkspaceID, s.opts.WorkspaceRateLimit, "this workspace, all its keys together"},
	} {
		d, err := s.opts.Limiter.Take(ctx, w.key, w.limit, s.opts.RateWindow, now)
		if err != nil {
			return edgeport.RateDecision{}, 0, nil, err
		}
		if i == 0 || !d.Allowed || d.Remaining < tightest.Remaining {
			tightest = d
		}
		if !d.Allowed {
			return d, s.opts.RateWindow, errRateLimited(w.who), nil
		}
	}
	return tightest, s.opts.RateWindow, nil, nil
}

// The rate-limit headers' names, in the form net/http writes them
// (http.CanonicalHeaderKey), so that they can be stored without being
// canonicalised again on every request.
const (
	headerLimit     = "X-Ratelimit-Limit"
	headerRemaining = "X-Ratelimit-Remaining"
	headerReset     = "X-Ratelimit-Reset"
	headerPolicy    = "Ratelimit-Policy"
	headerRateLimit = "Ratelimit"
)

// setRateLimitHeaders reports d, a window of the given length, in both the
// X-RateLimit-* headers and the IETF draft's RateLimit-Policy and
// RateLimit. Every authenticated request sends them, so the five values
// share one backing array.
func setRateLimitHeaders(h http.Header, d edgeport.RateDecision, window time.Duration, now time.Time) {
	reset := int64(math.Ceil(float64(d.Reset.UnixMilli()) / 1000))
	var buf [40]byte
	b := buf[:0]
	vals := make([]string, 5)
	vals[0] = strconv.Itoa(d.Limit)
	vals[1] = strconv.Itoa(d.Remaining)
	vals[2] = strconv.FormatInt(reset, 10)
	b = strconv.AppendInt(append(b, `"default";q=`...), int64(d.Limit), 10)
	b = strconv.AppendInt(append(b, ";w="...), int64(window.Seconds()), 10)
	vals[3] = string(b)
	b = strconv.AppendInt(append(b[:0], `"default";r=`...), int64(d.Remaining), 10)
	b = strconv.AppendInt(append(b, ";t="...), int64(secondsUntil(d.Reset, now)), 10)
	vals[4] = string(b)
	h[headerLimit] = vals[0:1:1]
	h[headerRemaining] = vals[1:2:2]
	h[headerReset] = vals[2:3:3]
	h[headerPolicy] = vals[3:4:4]
	h[headerRateLimit] = vals[4:5:5]
}

func errRateLimited(who string) *domain.Error {
	return domain.Refusal(wire.CodeTooManyRequests, domain.LimitRate,
		"Too many requests for %s. Retry after the time in the Retry-After header.", who)
}

// TakeRequest counts one request of a against its rate limits, as the API
// chain does, for what does not pass through the chain (a subscribe over
// WebSocket): too_many_requests past a limit. A limiter outage fails open.
func (s *Edge) TakeRequest(ctx context.Context, a domain.Actor) error {
	_, _, refusal, err := s.takeRequest(ctx, a, s.opts.Clock.Now())
	if err != nil {
		s.opts.Logger.Debug("rate limiter unavailable", "error", err.Error())
		return nil
	}
	if refusal != nil {
		return refusal
	}
	return nil
}

// secondsUntil is the whole seconds from now until t, rounded up, at least 1.
func secondsUntil(t, now time.Time) int {
	s := int(math.Ceil(t.Sub(now).Seconds()))
	if s < 1 {
		s = 1
	}
	return s
}

func setRetryAfter(c *gin.Context, reset, now time.Time) {
	c.Header("Retry-After", strconv.Itoa(secondsUntil(reset, now)))
}

// body enforces the size limit and the JSON media type on requests that carry
// a body.
func body(c *gin.Context, render Renderer) {
	r := c.Request
	if r.ContentLength > MaxBodyBytes {
		render.Abort(c, errTooLarge())
		return
	}
	hasBody := r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
	if hasBody {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			render.Abort(c, domain.Errorf(wire.CodeUnsupportedMediaType, "Request bodies must be sent with Content-Type: application/json."))
			return
		}
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(c.Writer, r.Body, MaxBodyBytes)
	}
	c.Next()
}
