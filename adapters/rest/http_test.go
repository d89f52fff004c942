package rest_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
)

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		e.Get("/v1/nothing-here", e.Admin.Key).ExpectError(t, 404, "route_not_found", "")
		e.Get("/v1/projects/", e.Admin.Key).ExpectError(t, 404, "route_not_found", "")
		e.Get("/nothing", "").ExpectError(t, 404, "route_not_found", "")
		// Under the API, anonymous callers are asked for a key first.
		e.Get("/v1/nothing-here", "").ExpectError(t, 401, "missing_api_key", "")

		res := e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/projects", Key: e.Admin.Key})
		res.ExpectError(t, 405, "method_not_allowed", "")
		if allow := res.Header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
			t.Fatalf("Allow: %q", allow)
		}
		res = e.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/users/me", Key: e.Admin.Key})
		res.ExpectError(t, 405, "method_not_allowed", "")
		if res.Header.Get("Allow") != "GET" {
			t.Fatalf("Allow: %q", res.Header.Get("Allow"))
		}
	})
}

func TestHealth(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		for _, p := range []string{"/healthz", "/readyz"} {
			res := e.Get(p, "")
			res.ExpectStatus(t, 200)
			if !strings.HasPrefix(res.Header.Get("X-Request-Id"), "req_") {
				t.Fatalf("%s has no request id", p)
			}
		}
	})
	t.Run("readyz is 503 while the database does not answer", func(t *testing.T) {
		db := storetest.SQLite(t)
		e := apitest.New(t, db)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		e.Get("/readyz", "").ExpectStatus(t, http.StatusServiceUnavailable)
		e.Get("/healthz", "").ExpectStatus(t, http.StatusOK)
		// A request that needs the database fails without leaking internals.
		res := e.Get("/v1/projects", e.Admin.Key)
		if res.Status != 500 && res.Status != 503 {
			t.Fatalf("want 500 or 503, got %d %s", res.Status, res.Body)
		}
		code := res.ErrorField("code")
		if code != "internal_error" && code != "service_unavailable" {
			t.Fatalf("code %s", code)
		}
		if msg := strings.ToLower(res.ErrorField("message")); strings.Contains(msg, "sql") || strings.Contains(msg, "database is closed") {
			t.Fatalf("internals leaked: %s", res.Body)
		}
		if !strings.Contains(e.Logs.String(), res.ErrorField("request_id")) {
			t.Fatal("the failure is not in the log under its request id")
		}
	})
}

func TestRequestIDsAreUnique(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, storetest.SQLite(t))
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		id := e.Get("/v1/users/me", e.Admin.Key).Header.Get("X-Request-Id")
		if !strings.HasPrefix(id, "req_") || seen[id] {
			t.Fatalf("request id %q repeated or malformed", id)
		}
		seen[id] = true
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db, func(o *httpedge.Options) { o.RateLimit = 3; o.RateWindow = 10 * time.Second })
		start := e.Clock.Now()
		for i := 1; i <= 3; i++ {
			res := e.Get("/v1/users/me", e.Member.Key)
			res.ExpectStatus(t, 200)
			if res.Header.Get("X-RateLimit-Limit") != "3" || res.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(3-i) {
				t.Fatalf("request %d headers: %v", i, res.Header)
			}
			if res.Header.Get("X-RateLimit-Reset") != strconv.FormatInt(start.Add(10*time.Second).Unix(), 10) {
				t.Fatalf("reset %s", res.Header.Get("X-RateLimit-Reset"))
			}
			if res.Header.Get("RateLimit-Policy") != `"default";q=3;w=10` || res.Header.Get("RateLimit") != `"default";r=`+strconv.Itoa(3-i)+`;t=10` {
				t.Fatalf("draft headers: %q %q", res.Header.Get("RateLimit-Policy"), res.Header.Get("RateLimit"))
			}
		}
		e.Clock.Advance(4 * time.Second)
		// Every authenticated response is counted and carries the headers,
		// errors included.
		limited := e.Get("/v1/projects/prj_nope", e.Member.Key)
		limited.ExpectError(t, 429, "too_many_requests", "")
		if limited.Header.Get("Retry-After") != "6" || limited.Header.Get("X-RateLimit-Remaining") != "0" {
			t.Fatalf("429 headers: %v", limited.Header)
		}
		// Other keys have their own window.
		e.Get("/v1/users/me", e.Admin.Key).ExpectStatus(t, 200)
		e.Clock.Advance(6 * time.Second)
		res := e.Get("/v1/users/me", e.Member.Key)
		res.ExpectStatus(t, 200)
		if res.Header.Get("X-RateLimit-Remaining") != "2" {
			t.Fatalf("new window: %v", res.Header)
		}
		e.Get("/v1/nope", e.Admin.Key).ExpectError(t, 404, "route_not_found", "")
		if e.Get("/v1/nope", e.Admin.Key).Header.Get("X-RateLimit-Limit") != "3" {
			t.Fatal("an authenticated 404 must carry rate-limit headers")
		}
	})
}

// A user's keys share the user's window and a workspace's keys the
// workspace's: five keys of one user get no more requests than one, and a
// workspace's users together no more than its limit, while another
// workspace is served.
func TestRateLimitPerUserAndWorkspace(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db, func(o *httpedge.Options) {
			o.RateLimit, o.WorkspaceRateLimit, o.RateWindow = 3, 5, 10*time.Second
		})
		keys := make([]string, 5)
		for i := range keys {
			keys[i] = e.KeyFor(e.Member.User, nil, nil)
		}
		for i := range 3 {
			res := e.Get("/v1/users/me", keys[i])
			res.ExpectStatus(t, http.StatusOK)
			if got := res.Header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(2-i) {
				t.Fatalf("request %d of the user: remaining %s, want the user's %d", i+1, got, 2-i)
			}
		}
		over := e.Get("/v1/users/me", keys[3])
		over.ExpectError(t, http.StatusTooManyRequests, "too_many_requests", "")
		if !strings.Contains(over.ErrorField("message"), "user") || over.Header.Get("Retry-After") == "" {
			t.Fatalf("the user's 4th request through a 4th key: %s %v", over.Body, over.Header)
		}
		// The workspace has had 3 of its 5; another user takes the rest.
		e.Get("/v1/users/me", e.Admin.Key).ExpectStatus(t, http.StatusOK)
		e.Get("/v1/users/me", e.Admin.Key).ExpectStatus(t, http.StatusOK)
		full := e.Get("/v1/users/me", e.Guest.Key)
		full.ExpectError(t, http.StatusTooManyRequests, "too_many_requests", "")
		if !strings.Contains(full.ErrorField("message"), "workspace") {
			t.Fatalf("a request past the workspace's window: %s", full.Body)
		}
		e.Get("/v1/users/me", e.Other.Key).ExpectStatus(t, http.StatusOK)
		e.Clock.Advance(10 * time.Second)
		e.Get("/v1/users/me", keys[4]).ExpectStatus(t, http.StatusOK)
	})
}

// After 20 failed authentications from one address, that address gets 429
// for every key that does not authenticate, until the window closes; a
// valid key from it passes all the same (many clients share one address
// behind a proxy or NAT), and the health checks are never refused.
func TestFailedAuthenticationLimit(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, storetest.SQLite(t))
	attacker, bystander := "203.0.113.7:5555", "198.51.100.2:4444"
	get := func(addr, key string) *apitest.Response {
		return e.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/users/me", Key: key, RemoteAddr: addr})
	}
	bad := "wtk_" + strings.Repeat("x", 40)
	for i := 0; i < 20; i++ {
		key := bad
		if i%2 == 0 {
			key = ""
		}
		res := get(attacker, key)
		if res.Status != 401 {
			t.Fatalf("failure %d: %d", i+1, res.Status)
		}
		e.Clock.Advance(time.Second)
	}
	// The window opened at the first failure, 20s ago: 40s remain.
	blocked := get(attacker, bad)
	blocked.ExpectError(t, 429, "too_many_requests", "")
	if blocked.Header.Get("Retry-After") != "40" {
		t.Fatalf("Retry-After %q", blocked.Header.Get("Retry-After"))
	}
	get(attacker, "").ExpectError(t, 429, "too_many_requests", "")
	// A valid key is never refused for its address.
	get(attacker, e.Admin.Key).ExpectStatus(t, 200)
	get(attacker, e.Member.Key).ExpectStatus(t, 200)
	e.Do(apitest.Request{Method: http.MethodGet, Path: "/healthz", RemoteAddr: attacker}).ExpectStatus(t, 200)
	e.Do(apitest.Request{Method: http.MethodGet, Path: "/readyz", RemoteAddr: attacker}).ExpectStatus(t, 200)
	get(bystander, bad).ExpectError(t, 401, "invalid_api_key", "")
	e.Clock.Advance(40 * time.Second)
	get(attacker, bad).ExpectError(t, 401, "invalid_api_key", "")
}

// Behind a trusted proxy the client address is the right-most
// X-Forwarded-For address that is not a trusted proxy; from any other peer,
// X-Forwarded-For is ignored, so a client cannot dodge the limit by sending
// one.
func TestTrustedProxiesNameTheClient(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, storetest.SQLite(t), func(o *httpedge.Options) {
		o.TrustedProxies = []string{"10.0.0.0/24", "192.0.2.1"}
	})
	bad := "wtk_" + strings.Repeat("x", 40)
	via := func(peer, xff string) *apitest.Response {
		return e.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/users/me", Key: bad, RemoteAddr: peer,
			Header: map[string]string{"X-Forwarded-For": xff}})
	}
	// Through two trusted proxies: the client is 203.0.113.50 whatever it
	// put on the left of the header itself.
	for i := 0; i < 20; i++ {
		via("10.0.0.7:1000", fmt.Sprintf("198.51.100.%d, 203.0.113.50, 192.0.2.1", i)).ExpectError(t, 401, "invalid_api_key", "")
	}
	via("10.0.0.7:1000", "203.0.113.50, 192.0.2.1").ExpectError(t, 429, "too_many_requests", "")
	via("10.0.0.8:1000", "203.0.113.50").ExpectError(t, 429, "too_many_requests", "")
	// Another client behind the same proxy is not blocked.
	via("10.0.0.7:1000", "203.0.113.51").ExpectError(t, 401, "invalid_api_key", "")
	// An untrusted peer's X-Forwarded-For is ignored: it is its own client.
	for i := 0; i < 20; i++ {
		via("198.51.100.9:1000", "203.0.113.60").ExpectError(t, 401, "invalid_api_key", "")
	}
	via("198.51.100.9:1000", "203.0.113.61").ExpectError(t, 429, "too_many_requests", "")
	via("10.0.0.7:1000", "203.0.113.60").ExpectError(t, 401, "invalid_api_key", "")
}

// Every JSON body ends with a newline (curl's output then ends its line)
// and shows <, > and & as they are: no body is HTML. On both APIs, on
// success and on error.
func TestJSONBodiesEndTheirLineAndAreNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, storetest.SQLite(t))
	prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "R&D <core>", "key": "RND"})
	prj.ExpectStatus(t, http.StatusCreated)
	task := e.Send(http.MethodPost, "/v1/projects/"+prj.Str("id")+"/tasks", e.Member.Key, map[string]any{"title": "a < b && c > d"})
	task.ExpectStatus(t, http.StatusCreated)
	bodies := map[string]*apitest.Response{
		"created project": prj,
		"created task":    task,
		"task":            e.Get("/v1/tasks/"+task.Str("id"), e.Member.Key),
		"task list":       e.Get("/v1/projects/"+prj.Str("id")+"/tasks", e.Member.Key),
		"event":           e.Get("/v1/events?limit=1", e.Member.Key),
		"missing key":     e.Get("/v1/users/me", ""),
		"health":          e.Get("/healthz", ""),
		"graphql":         e.Send(http.MethodPost, "/graphql", e.Member.Key, map[string]any{"query": `{ task(id: "` + task.Str("id") + `") { title } }`}),
		"graphql error":   e.Send(http.MethodPost, "/graphql", "", map[string]any{"query": "{ me { id } }"}),
	}
	for name, res := range bodies {
		if !strings.HasSuffix(string(res.Body), "}\n") {
			t.Errorf("%s: the body does not end with a newline: %q", name, res.Body)
		}
		if strings.Contains(string(res.Body), `\u003c`) || strings.Contains(string(res.Body), `\u0026`) {
			t.Errorf("%s: HTML-escaped: %s", name, res.Body)
		}
	}
	for _, want := range []string{"a < b && c > d", "R&D <core>"} {
		if !strings.Contains(string(bodies["task"].Body)+string(bodies["event"].Body)+string(prj.Body), want) {
			t.Errorf("%q is not shown as it is", want)
		}
	}
	if !strings.Contains(string(bodies["missing key"].Body), "Bearer <API_KEY>") {
		t.Errorf("the missing key's message: %s", bodies["missing key"].Body)
	}
}
