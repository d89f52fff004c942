package httpedge_test

// The edge's behaviour over the real APIs is tested through them
// (adapters/rest, graph). These tests pin what only the edge decides: which
// renderer answers where, and which paths are an API's.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/edgeport"
	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/ratelimit"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
)

// keyring accepts one secret. The core's Auth needs a database; what the
// edge does with its answer does not.
type keyring struct{}

func (keyring) Authenticate(_ context.Context, secret string) (domain.Actor, error) {
	switch secret {
	case "":
		return domain.Actor{}, domain.Errorf(domain.CodeMissingAPIKey, "no key")
	case "good":
		return domain.Actor{UserID: "usr_1", KeyID: "key_1", Role: domain.RoleMember}, nil
	}
	return domain.Actor{}, domain.Errorf(domain.CodeInvalidAPIKey, "bad key")
}

func newEdge(t *testing.T) *httpedge.Edge {
	t.Helper()
	edge := httpedge.New(keyring{}, httpedge.Options{Limiter: ratelimit.NewMemory()})
	plain := edge.API("/plain", httpedge.ErrorObject)
	edge.Engine().GET("/plain/thing", plain.Chain(func(c *gin.Context) { c.String(http.StatusOK, httpedge.Actor(c).UserID) })...)
	// An API with its own error shape, as GraphQL mounts.
	other := edge.API("/other", func(c *gin.Context, status int, e *domain.Error, requestID string) {
		c.AbortWithStatusJSON(status, gin.H{"oops": string(e.Code), "id": requestID})
	})
	edge.Engine().POST("/other", other.Chain(func(c *gin.Context) {
		obj, err := httpedge.ReadObject(c, "n")
		if err != nil {
			other.Abort(c, err)
			return
		}
		n, err := httpedge.Field[float64](obj, "n", "a number")
		if err != nil {
			other.Abort(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"n": n.Value})
	})...)
	return edge
}

func do(edge *httpedge.Edge, method, path, key, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	edge.ServeHTTP(rec, req)
	return rec
}

func TestEachAPIRendersItsOwnErrors(t *testing.T) {
	edge := newEdge(t)
	for _, tc := range []struct {
		method, path, key, body string
		status                  int
		want                    string
	}{
		{http.MethodGet, "/plain/thing", "", "", 401, `"code":"missing_api_key"`},
		{http.MethodGet, "/plain/thing", "good", "", 200, "usr_1"},
		{http.MethodPost, "/other", "nope", `{}`, 401, `"oops":"invalid_api_key"`},
		{http.MethodPost, "/other", "good", `[]`, 400, `"oops":"invalid_json"`},
		{http.MethodPost, "/other", "good", `{"n": "x"}`, 400, `"oops":"validation_failed"`},
		{http.MethodPost, "/other", "good", `{"n": 2}`, 200, `{"n":2}`},
	} {
		rec := do(edge, tc.method, tc.path, tc.key, tc.body)
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s %s key=%q: want %d with %s, got %d %s", tc.method, tc.path, tc.key, tc.status, tc.want, rec.Code, rec.Body)
		}
	}
}

func TestUnmatchedRoutesAuthenticateOnlyUnderAPIPrefixes(t *testing.T) {
	edge := newEdge(t)
	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/plain/nothing", 401, "missing_api_key"},
		{"/plain", 401, "missing_api_key"},
		{"/other/nothing", 401, "missing_api_key"},
		{"/plainly", 404, "route_not_found"}, // not below /plain
		{"/nothing", 404, "route_not_found"},
	} {
		rec := do(edge, http.MethodGet, tc.path, "", "")
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), `"code":"`+tc.code+`"`) {
			t.Errorf("%s: want %d %s, got %d %s", tc.path, tc.status, tc.code, rec.Code, rec.Body)
		}
	}
	rec := do(edge, http.MethodGet, "/plain/nothing", "good", "")
	if rec.Code != 404 || rec.Header().Get("X-RateLimit-Limit") == "" {
		t.Fatalf("an authenticated 404 is counted: %d %v", rec.Code, rec.Header())
	}
}

func TestEveryCodeHasAStatusAndAType(t *testing.T) {
	for code, want := range map[domain.Code]struct {
		status int
		typ    string
	}{
		domain.CodeMissingAPIKey:           {401, wire.TypeAuthentication},
		domain.CodeInvalidAPIKey:           {401, wire.TypeAuthentication},
		domain.CodePermissionDenied:        {403, wire.TypeInvalidRequest},
		domain.CodeValidationFailed:        {400, wire.TypeInvalidRequest},
		domain.CodeNotFound:                {404, wire.TypeInvalidRequest},
		domain.CodeAlreadyExists:           {409, wire.TypeInvalidRequest},
		domain.CodeInvalidStatusTransition: {409, wire.TypeInvalidRequest},
		domain.CodeInternal:                {500, wire.TypeAPI},
		domain.CodeUnavailable:             {503, wire.TypeAPI},
		wire.CodeRouteNotFound:             {404, wire.TypeInvalidRequest},
		wire.CodeMethodNotAllowed:          {405, wire.TypeInvalidRequest},
		wire.CodeUnsupportedMediaType:      {415, wire.TypeInvalidRequest},
		wire.CodeRequestTooLarge:           {413, wire.TypeInvalidRequest},
		wire.CodeInvalidJSON:               {400, wire.TypeInvalidRequest},
		wire.CodeIdempotencyKeyReused:      {409, wire.TypeInvalidRequest},
		wire.CodeIdempotencyKeyInUse:       {409, wire.TypeInvalidRequest},
		wire.CodeTooManyRequests:           {429, wire.TypeRateLimit},
		wire.CodeClientClosedRequest:       {499, wire.TypeAPI},
	} {
		if got := httpedge.StatusOf(code); got != want.status {
			t.Errorf("StatusOf(%s) = %d, want %d", code, got, want.status)
		}
		if got := wire.TypeOf(code); got != want.typ {
			t.Errorf("wire.TypeOf(%s) = %s, want %s", code, got, want.typ)
		}
	}
}

// brokenLimiter fails every call, as an unreachable Redis does.
type brokenLimiter struct{}

func (brokenLimiter) Take(context.Context, string, int, time.Duration, time.Time) (edgeport.RateDecision, error) {
	return edgeport.RateDecision{}, errors.New("redis: connection refused")
}

func (brokenLimiter) Peek(context.Context, string, int, time.Duration, time.Time) (edgeport.RateDecision, error) {
	return edgeport.RateDecision{}, errors.New("redis: connection refused")
}

// A limiter outage must not become the API's: requests are served without
// rate limit headers, refused keys still get 401, and no request logs a
// warning (the guarded limiter reports the outage once).
func TestLimiterOutageFailsOpenQuietly(t *testing.T) {
	var logs bytes.Buffer
	edge := httpedge.New(keyring{}, httpedge.Options{
		Limiter: brokenLimiter{}, RateLimit: 1,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	plain := edge.API("/plain", httpedge.ErrorObject)
	edge.Engine().GET("/plain/thing", plain.Chain(func(c *gin.Context) { c.String(http.StatusOK, "ok") })...)
	for range 5 {
		rec := do(edge, http.MethodGet, "/plain/thing", "good", "")
		if rec.Code != http.StatusOK || rec.Header().Get("X-RateLimit-Limit") != "" {
			t.Fatalf("with the limiter down: %d %v %s", rec.Code, rec.Header(), rec.Body)
		}
	}
	if rec := do(edge, http.MethodGet, "/plain/thing", "bad", ""); rec.Code != http.StatusUnauthorized {
		t.Fatalf("a bad key with the limiter down: %d", rec.Code)
	}
	if strings.Contains(logs.String(), `"level":"WARN"`) || strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Fatalf("a request logged the outage:\n%s", logs.String())
	}
}
