package httpedge

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/rs/cors"
)

// Cross-origin requests (docs/api.md#browsers-and-cors): a dashboard served
// from its own origin calls both APIs with a bearer key. The rules are
// rs/cors's, set once here for every route of the edge:
//
//   - a preflight (OPTIONS with Access-Control-Request-Method) is answered
//     204 before authentication, so it never counts as a failed
//     authentication nor against a rate limit; it carries the
//     Access-Control-Allow-* headers only for an allowed origin, method and
//     headers;
//   - every other answer to an allowed origin carries
//     Access-Control-Allow-Origin (the origin itself, with Vary: Origin) and
//     Access-Control-Expose-Headers;
//   - credentials (cookies) are never allowed: the key is a bearer token.

// CORSMethods are the methods a preflight may ask for.
var CORSMethods = []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete}

// CORSRequestHeaders are the request headers the APIs read that a browser
// must ask leave to send.
var CORSRequestHeaders = []string{"Authorization", "Content-Type", "Accept", "Idempotency-Key", "Traceparent", "Tracestate"}

// CORSExposedHeaders are the response headers a page's script may read.
var CORSExposedHeaders = []string{
	"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
	"RateLimit", "RateLimit-Policy", "Retry-After", "Idempotent-Replayed",
}

// CORSMaxAge is how long, in seconds, a browser may keep a preflight's
// answer (Chromium keeps at most two hours).
const CORSMaxAge = 7200

// ParseCORSOrigins reads WORKTRACK_CORS_ORIGINS' value: "*", or
// comma-separated exact origins (scheme://host[:port], no path). Empty
// means none. The error says which entry is wrong and why.
func ParseCORSOrigins(v string) ([]string, error) {
	var origins []string
	for part := range strings.SplitSeq(v, ",") {
		o := strings.TrimSpace(part)
		if o == "" {
			continue
		}
		if o == "*" {
			origins = append(origins, o)
			continue
		}
		u, err := url.Parse(o)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%q is not an origin: %w", o, err)
		case u.Scheme != "http" && u.Scheme != "https":
			return nil, fmt.Errorf("%q is not an origin: want http:// or https:// followed by a host, e.g. http://localhost:5173", o)
		case u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#"):
			return nil, fmt.Errorf("%q is not an origin: an origin is scheme://host[:port], with no path (not even a trailing /), query or user", o)
		case strings.ContainsAny(u.Host, "*"):
			return nil, fmt.Errorf("%q is not an origin: wildcards are not allowed inside an origin; use * alone to allow every origin", o)
		}
		origins = append(origins, strings.ToLower(u.Scheme)+"://"+strings.ToLower(u.Host))
	}
	for _, o := range origins {
		if o == "*" && len(origins) > 1 {
			return nil, fmt.Errorf("* allows every origin: give it alone, or list origins without it")
		}
	}
	return origins, nil
}

// corsMiddleware answers preflights and marks the answers to allowed
// origins. Without origins, a preflight is still answered (204, no
// Access-Control-* header, so the browser refuses the call) before
// authentication, and nothing else changes.
func corsMiddleware(origins []string) gin.HandlerFunc {
	if len(origins) == 0 {
		return func(c *gin.Context) {
			if isPreflight(c.Request) {
				c.AbortWithStatus(http.StatusNoContent)
			}
		}
	}
	opts := cors.Options{
		AllowedOrigins:       origins,
		AllowedMethods:       CORSMethods,
		AllowedHeaders:       CORSRequestHeaders,
		ExposedHeaders:       CORSExposedHeaders,
		MaxAge:               CORSMaxAge,
		AllowCredentials:     false,
		OptionsSuccessStatus: http.StatusNoContent,
	}
	if len(origins) == 1 && origins[0] == "*" {
		// Every origin, echoed with Vary: Origin rather than answered "*",
		// so the answer names the page it serves as for a listed origin.
		opts.AllowedOrigins = nil
		opts.AllowOriginFunc = func(string) bool { return true }
	}
	h := cors.New(opts)
	return func(c *gin.Context) {
		h.HandlerFunc(c.Writer, c.Request)
		if isPreflight(c.Request) {
			c.Abort()
		}
	}
}

// isPreflight reports whether r is a CORS preflight.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
}
