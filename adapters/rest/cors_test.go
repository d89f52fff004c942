package rest_test

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
)

const (
	boardOrigin   = "http://localhost:9097"
	foreignOrigin = "https://evil.example"
)

// preflight sends the OPTIONS request a browser sends before a call from
// origin with method and the request headers named.
func preflight(e *apitest.Env, path, origin, method, headers, addr string) *apitest.Response {
	h := map[string]string{"Origin": origin, "Access-Control-Request-Method": method}
	if headers != "" {
		h["Access-Control-Request-Headers"] = headers
	}
	return e.Do(apitest.Request{Method: http.MethodOptions, Path: path, Header: h, RemoteAddr: addr})
}

// accessControl lists the Access-Control-* headers of an answer.
func accessControl(h http.Header) []string {
	var names []string
	for name := range h {
		if strings.HasPrefix(name, "Access-Control-") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// hasToken reports whether the comma-separated header values hold tok,
// case-insensitively.
func hasToken(h http.Header, name, tok string) bool {
	for _, v := range h.Values(name) {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), tok) {
				return true
			}
		}
	}
	return false
}

// The preflights a dashboard's calls need are answered for an allowed
// origin on every path of both APIs, before authentication
// (docs/api.md#browsers-and-cors): 204 with the origin, the method, the
// headers asked for and a max age, never credentials.
func TestCORSPreflights(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db, func(o *httpedge.Options) { o.CORSOrigins = []string{boardOrigin} })
		calls := []struct{ path, method, headers string }{
			{"/graphql", http.MethodPost, "authorization,content-type"},
			{"/graphql", http.MethodGet, "authorization"},
			{"/v1/users/me", http.MethodGet, "authorization"},
			{"/v1/projects", http.MethodPost, "authorization,content-type,idempotency-key"},
			{"/v1/projects/prj_x/tasks/batch", http.MethodPost, "authorization,content-type,idempotency-key"},
			{"/v1/tasks/tsk_x", http.MethodPatch, "authorization,content-type"},
			{"/v1/tasks/tsk_x", http.MethodDelete, "authorization"},
			{"/v1/tasks/counts", http.MethodGet, "accept,authorization"},
			{"/v1/events", http.MethodGet, "authorization"},
			{"/v1/no/such/route", http.MethodGet, "authorization"},
		}
		for _, c := range calls {
			r := preflight(e, c.path, boardOrigin, c.method, c.headers, "")
			r.ExpectStatus(t, http.StatusNoContent)
			h := r.Header
			if h.Get("Access-Control-Allow-Origin") != boardOrigin || !hasToken(h, "Vary", "Origin") {
				t.Fatalf("%s %s: Allow-Origin %q, Vary %q", c.method, c.path, h.Get("Access-Control-Allow-Origin"), h.Values("Vary"))
			}
			if !hasToken(h, "Access-Control-Allow-Methods", c.method) {
				t.Fatalf("%s %s: Allow-Methods %q", c.method, c.path, h.Values("Access-Control-Allow-Methods"))
			}
			for asked := range strings.SplitSeq(c.headers, ",") {
				if !hasToken(h, "Access-Control-Allow-Headers", asked) {
					t.Fatalf("%s %s: Allow-Headers %q lacks %s", c.method, c.path, h.Values("Access-Control-Allow-Headers"), asked)
				}
			}
			if h.Get("Access-Control-Max-Age") != strconv.Itoa(httpedge.CORSMaxAge) {
				t.Fatalf("%s %s: Max-Age %q", c.method, c.path, h.Get("Access-Control-Max-Age"))
			}
			if h.Get("Access-Control-Allow-Credentials") != "" {
				t.Fatalf("%s %s: credentials allowed", c.method, c.path)
			}
			if len(r.Body) != 0 {
				t.Fatalf("%s %s: a preflight's body: %s", c.method, c.path, r.Body)
			}
		}
		// Another origin, a method the API has no use for, or a header it
		// does not read get no Access-Control-* header at all.
		for _, r := range []*apitest.Response{
			preflight(e, "/graphql", foreignOrigin, http.MethodPost, "authorization,content-type", ""),
			preflight(e, "/v1/projects", "http://localhost:9098", http.MethodPost, "authorization", ""),
			preflight(e, "/v1/projects", boardOrigin, http.MethodPut, "authorization", ""),
			preflight(e, "/v1/projects", boardOrigin, http.MethodPost, "authorization,x-not-read", ""),
		} {
			if got := accessControl(r.Header); len(got) != 0 {
				t.Fatalf("a refused preflight carries %v", got)
			}
		}
	})
}

// Preflights never count as failed authentications nor against a key's
// rate limit: 40 of them from one address leave a bad key there at its
// first failure (the 21st failure is still what blocks it).
func TestCORSPreflightsAreNotCounted(t *testing.T) {
	t.Parallel()
	for _, origins := range [][]string{{boardOrigin}, nil} {
		name := "allowed origin"
		if origins == nil {
			name = "without WORKTRACK_CORS_ORIGINS"
		}
		t.Run(name, func(t *testing.T) {
			storetest.ForEach(t, func(t *testing.T, db *store.DB) {
				e := apitest.New(t, db, func(o *httpedge.Options) { o.CORSOrigins = origins })
				const addr = "203.0.113.9:4000"
				for i := range 40 {
					path := []string{"/v1/users/me", "/graphql"}[i%2]
					r := preflight(e, path, boardOrigin, http.MethodPost, "authorization,content-type", addr)
					r.ExpectStatus(t, http.StatusNoContent)
					if origins == nil && len(accessControl(r.Header)) != 0 {
						t.Fatalf("without the variable a preflight carries %v", accessControl(r.Header))
					}
				}
				bad := "wtk_" + strings.Repeat("q", 40)
				for i := range 20 {
					r := e.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/users/me", Key: bad, RemoteAddr: addr})
					if r.Status != http.StatusUnauthorized {
						t.Fatalf("failure %d after 40 preflights: %d %s", i+1, r.Status, r.Body)
					}
				}
				e.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/users/me", Key: bad, RemoteAddr: addr}).
					ExpectError(t, http.StatusTooManyRequests, "too_many_requests", "")
				// The key's window holds this request alone.
				me := e.Get("/v1/users/me", e.Guest.Key)
				me.ExpectStatus(t, http.StatusOK)
				limit, _ := strconv.Atoi(me.Header.Get("X-RateLimit-Limit"))
				if rem, _ := strconv.Atoi(me.Header.Get("X-RateLimit-Remaining")); rem != limit-1 {
					t.Fatalf("X-RateLimit-Remaining %d of %d after one request and 40 preflights", rem, limit)
				}
			})
		})
	}
}

// Every answer to an allowed origin, REST and GraphQL, success and error,
// names the origin and exposes the headers a page's script reads; answers
// to another origin, or without the variable, carry no Access-Control-*
// header.
func TestCORSAnswersExposeHeaders(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db, func(o *httpedge.Options) { o.CORSOrigins = []string{boardOrigin, "https://board.example.com"} })
		plain := apitest.New(t, db)
		from := func(env *apitest.Env, origin string, r apitest.Request) *apitest.Response {
			if r.Header == nil {
				r.Header = map[string]string{}
			}
			r.Header["Origin"] = origin
			return env.Do(r)
		}
		gqlQuery := url.Values{"query": {`{ me { id } }`}}.Encode()
		calls := []apitest.Request{
			{Method: http.MethodGet, Path: "/v1/users/me", Key: e.Guest.Key},
			{Method: http.MethodPost, Path: "/v1/projects", Key: e.Member.Key, Body: map[string]any{"name": "CORS", "key": "CORS"},
				Header: map[string]string{"Idempotency-Key": "cors-1"}},
			{Method: http.MethodGet, Path: "/v1/users/me"},                         // 401
			{Method: http.MethodGet, Path: "/v1/tasks/tsk_none", Key: e.Guest.Key}, // 404
			{Method: http.MethodPost, Path: "/graphql", Key: e.Guest.Key, Body: map[string]any{"query": `{ me { id } }`}},
			{Method: http.MethodGet, Path: "/graphql?" + gqlQuery, Key: e.Guest.Key},
			{Method: http.MethodPost, Path: "/graphql", Body: map[string]any{"query": `{ me { id } }`}}, // 401
		}
		for _, c := range calls {
			r := from(e, boardOrigin, c)
			if r.Header.Get("Access-Control-Allow-Origin") != boardOrigin || !hasToken(r.Header, "Vary", "Origin") {
				t.Fatalf("%s %s (%d): Allow-Origin %q", c.Method, c.Path, r.Status, r.Header.Get("Access-Control-Allow-Origin"))
			}
			for _, h := range []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "Idempotent-Replayed"} {
				if !hasToken(r.Header, "Access-Control-Expose-Headers", h) {
					t.Fatalf("%s %s (%d): Expose-Headers %q lacks %s", c.Method, c.Path, r.Status, r.Header.Values("Access-Control-Expose-Headers"), h)
				}
			}
			if r.Header.Get("Access-Control-Allow-Credentials") != "" {
				t.Fatalf("%s %s: credentials allowed", c.Method, c.Path)
			}
		}
		// The idempotent replay, too.
		replay := from(e, "https://board.example.com", calls[1])
		if replay.Header.Get("Idempotent-Replayed") != "true" || replay.Header.Get("Access-Control-Allow-Origin") != "https://board.example.com" {
			t.Fatalf("replay: %d %v", replay.Status, replay.Header)
		}
		for _, c := range calls[:3] {
			c.Header = nil
			if r := from(e, foreignOrigin, c); len(accessControl(r.Header)) != 0 {
				t.Fatalf("%s %s from another origin carries %v", c.Method, c.Path, accessControl(r.Header))
			}
			c.Header = nil
			c.Key = map[string]string{e.Guest.Key: plain.Guest.Key, e.Member.Key: plain.Member.Key}[c.Key]
			if c.Body != nil {
				c.Body = map[string]any{"name": "Plain", "key": "PLAIN"}
			}
			if r := from(plain, boardOrigin, c); len(accessControl(r.Header)) != 0 {
				t.Fatalf("%s %s without the variable carries %v", c.Method, c.Path, accessControl(r.Header))
			}
		}
	})
}

// WORKTRACK_CORS_ORIGINS=* allows every origin, each answered with its own
// name, never with credentials.
func TestCORSEveryOrigin(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, storetest.SQLite(t), func(o *httpedge.Options) { o.CORSOrigins = []string{"*"} })
	for _, origin := range []string{boardOrigin, "https://portal.example.org:8443"} {
		r := preflight(e, "/graphql", origin, http.MethodPost, "authorization,content-type", "")
		if r.Header.Get("Access-Control-Allow-Origin") != origin || !hasToken(r.Header, "Vary", "Origin") || r.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Fatalf("preflight from %s: %v", origin, r.Header)
		}
		me := e.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/users/me", Key: e.Guest.Key, Header: map[string]string{"Origin": origin}})
		if me.Header.Get("Access-Control-Allow-Origin") != origin {
			t.Fatalf("answer to %s: %v", origin, me.Header)
		}
	}
}
