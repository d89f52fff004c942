package graph_test

import (
	"crypto/sha256"
	"encoding/hex"
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

// expectHTTPError checks a request refused before GraphQL ran: the status,
// a GraphQL-shaped body ({"errors":[…],"data":null}) and the extensions.
func (r *result) expectHTTPError(t *testing.T, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("want status %d, got %d: %s", status, r.Status, r.Body)
	}
	r.expectError(t, code, "")
	if !strings.HasSuffix(string(r.Body), "\"data\":null}\n") || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("not GraphQL-shaped JSON: %s %s", r.Header.Get("Content-Type"), r.Body)
	}
}

func TestAuthenticationErrors(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		const q = `{ me { id } }`
		post(t, e, "", map[string]any{"query": q}).expectHTTPError(t, http.StatusUnauthorized, "missing_api_key")
		post(t, e, "wtk_"+strings.Repeat("x", 40), map[string]any{"query": q}).expectHTTPError(t, http.StatusUnauthorized, "invalid_api_key")
		r := decode(t, e.Do(apitest.Request{Method: http.MethodPost, Path: "/graphql", Body: map[string]any{"query": q},
			Header: map[string]string{"Authorization": "Basic abc"}}))
		r.expectHTTPError(t, http.StatusUnauthorized, "missing_api_key")
		if r.Header.Get("X-RateLimit-Limit") != "" {
			t.Fatal("a 401 belongs to no key and carries no rate-limit headers")
		}
		// The scheme is case-insensitive.
		r = decode(t, e.Do(apitest.Request{Method: http.MethodPost, Path: "/graphql", Body: map[string]any{"query": q},
			Header: map[string]string{"Authorization": "bearer " + e.Guest.Key}}))
		if str(r.ok(t), "me", "id") != e.Guest.User.ID {
			t.Fatalf("bearer: %s", r.Body)
		}
	})
}

func TestRateLimitOverGraphQL(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnvWith(t, db, []apitest.Option{func(o *httpedge.Options) { o.RateLimit = 2; o.RateWindow = 10 * time.Second }})
		start := e.Clock.Now()
		for i := 1; i <= 2; i++ {
			r := gql(t, e, e.Member.Key, `{ me { id } }`, nil)
			r.ok(t)
			if r.Header.Get("X-RateLimit-Limit") != "2" || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) ||
				r.Header.Get("X-RateLimit-Reset") != strconv.FormatInt(start.Add(10*time.Second).Unix(), 10) ||
				r.Header.Get("RateLimit-Policy") != `"default";q=2;w=10` {
				t.Fatalf("request %d headers: %v", i, r.Header)
			}
		}
		e.Clock.Advance(3 * time.Second)
		limited := gql(t, e, e.Member.Key, `{ me { id } }`, nil)
		limited.expectHTTPError(t, http.StatusTooManyRequests, "too_many_requests")
		if limited.Header.Get("Retry-After") != "7" || limited.Header.Get("X-RateLimit-Remaining") != "0" {
			t.Fatalf("429 headers: %v", limited.Header)
		}
		// REST and GraphQL share the key's window.
		e.Get("/v1/users/me", e.Member.Key).ExpectError(t, http.StatusTooManyRequests, "too_many_requests", "")
		e.Clock.Advance(7 * time.Second)
		gql(t, e, e.Member.Key, `{ me { id } }`, nil).ok(t)

		// Repeated failed authentication blocks the address for keys that do
		// not authenticate, over GraphQL too; a valid key still passes.
		attacker := "203.0.113.9:1234"
		for range 20 {
			decode(t, e.Do(apitest.Request{Method: http.MethodPost, Path: "/graphql", Body: map[string]any{"query": "{ me { id } }"}, RemoteAddr: attacker})).
				expectHTTPError(t, http.StatusUnauthorized, "missing_api_key")
		}
		blocked := decode(t, e.Do(apitest.Request{Method: http.MethodPost, Path: "/graphql",
			Body: map[string]any{"query": "{ me { id } }"}, RemoteAddr: attacker}))
		blocked.expectHTTPError(t, http.StatusTooManyRequests, "too_many_requests")
		if blocked.Header.Get("Retry-After") == "" {
			t.Fatal("Retry-After missing")
		}
		decode(t, e.Do(apitest.Request{Method: http.MethodPost, Path: "/graphql", Key: e.Admin.Key,
			Body: map[string]any{"query": "{ me { id } }"}, RemoteAddr: attacker})).ok(t)
	})
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		do := func(body any, contentType string) *result {
			return decode(t, e.Do(apitest.Request{Method: http.MethodPost, Path: "/graphql", Key: e.Guest.Key, Body: body, ContentType: contentType}))
		}
		for _, body := range []string{"", "null", "[]", `"q"`, "{", `{"query": "{ me { id } }"}{}`} {
			do(body, "").expectHTTPError(t, http.StatusBadRequest, "invalid_json")
		}
		do(`{"query": "{ me { id } }"}`, "text/plain").expectHTTPError(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
		do(`{"query": "`+strings.Repeat(" ", httpedge.MaxBodyBytes)+`{ me { id } }"}`, "").expectHTTPError(t, http.StatusRequestEntityTooLarge, "request_too_large")
		do(`{"query": "{ me { id } }"}`, "application/json; charset=utf-8").ok(t)

		// Documents that do not parse or validate are refused before they run.
		for _, q := range []string{`{ me { id `, `{ me { nope } }`, `{ projects(first: "x") { nodes { id } } }`, `query A { me { id } } query B { me { id } }`} {
			r := post(t, e, e.Guest.Key, map[string]any{"query": q})
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("%s: want 422, got %d: %s", q, r.Status, r.Body)
			}
			r.expectError(t, "validation_failed", "query")
		}
		// A variable of the wrong type names the variable's field.
		r := gql(t, e, e.Guest.Key, `query($n: Int) { projects(first: $n) { nodes { id } } }`, map[string]any{"n": "x"})
		r.expectError(t, "validation_failed", "n")

		// GET without a query serves GraphiQL to browsers; GET runs queries
		// (TestGraphQLOverGET); other methods are 405 after authentication.
		page := e.Do(apitest.Request{Method: http.MethodGet, Path: "/graphql", Header: map[string]string{"Accept": "text/html,application/xhtml+xml"}})
		if page.Status != http.StatusOK || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(strings.ToLower(string(page.Body)), "graphiql") {
			t.Fatalf("GraphiQL: %d %s", page.Status, page.Header)
		}
		decode(t, e.Get("/graphql", "")).expectHTTPError(t, http.StatusUnauthorized, "missing_api_key")
		for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch} {
			r := decode(t, e.Do(apitest.Request{Method: m, Path: "/graphql", Key: e.Guest.Key}))
			r.expectHTTPError(t, http.StatusMethodNotAllowed, "method_not_allowed")
			if r.Header.Get("Allow") != "GET, POST" {
				t.Fatalf("%s: Allow %q", m, r.Header.Get("Allow"))
			}
		}
	})
}

// POST /graphql does not take Idempotency-Key (docs/api.md#idempotent-requests): the
// header is ignored, so a repeated mutation runs again.
func TestIdempotencyKeyIgnored(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		send := func() *result {
			return decode(t, e.Do(apitest.Request{Method: http.MethodPost, Path: "/graphql", Key: e.Member.Key,
				Body:   map[string]any{"query": `mutation { createProject(input: {name: "I", key: "IDEM"}) { id } }`},
				Header: map[string]string{"Idempotency-Key": "same-key"}}))
		}
		send().ok(t)
		again := send()
		again.expectError(t, "resource_already_exists", "")
		if again.Header.Get("Idempotent-Replayed") != "" {
			t.Fatal("GraphQL responses are never replayed")
		}
	})
}

func TestIntrospection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.SQLite(t))
	data := gql(t, e, e.Guest.Key, `{ __schema { queryType { name } mutationType { name } types { name kind } }
		__type(name: "TaskStatus") { enumValues { name } } }`, nil).ok(t)
	if str(data, "__schema", "queryType", "name") != "Query" || str(data, "__schema", "mutationType", "name") != "Mutation" {
		t.Fatalf("schema: %v", data)
	}
	names := map[string]bool{}
	for _, ty := range list(data, "__schema", "types") {
		names[str(ty, "name")] = true
	}
	for _, want := range []string{"User", "Project", "Task", "Webhook", "Node", "DateTime", "PageInfo", "TaskConnection", "UpdateTaskInput"} {
		if !names[want] {
			t.Fatalf("type %s missing from introspection", want)
		}
	}
	if got := jsonString(get(data, "__type", "enumValues")); got != `[{"name":"OPEN"},{"name":"IN_PROGRESS"},{"name":"DONE"},{"name":"ARCHIVED"}]` {
		t.Fatalf("TaskStatus: %s", got)
	}
	// Any valid key introspects, whatever its scopes; no key is 401
	// (docs/graphql.md#introspection-and-tooling).
	narrow := e.KeyFor(e.Guest.User, []string{"events:read"}, nil)
	if d := gql(t, e, narrow, `{ __schema { queryType { name } } }`, nil).ok(t); str(d, "__schema", "queryType", "name") != "Query" {
		t.Fatalf("a key with events:read alone: %v", d)
	}
	if res := gql(t, e, "", `{ __schema { queryType { name } } }`, nil); res.Status != http.StatusUnauthorized {
		t.Fatalf("introspection without a key: %d %s", res.Status, res.Body)
	}
	// The full introspection query of GraphiQL passes the depth limit.
	gql(t, e, e.Guest.Key, introspectionQuery, nil).ok(t)
}

func TestAutomaticPersistedQueries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.SQLite(t))
	const q = `{ me { email } }`
	sum := sha256.Sum256([]byte(q))
	ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}

	// Unknown hash: the client retries with the query (Apollo's protocol).
	miss := post(t, e, e.Guest.Key, map[string]any{"extensions": ext})
	err := miss.expectError(t, "resource_not_found", "")
	if err.Message != "PersistedQueryNotFound" {
		t.Fatalf("message %q", err.Message)
	}
	if str(post(t, e, e.Guest.Key, map[string]any{"query": q, "extensions": ext}).ok(t), "me", "email") != "gus@acme.test" {
		t.Fatal("register")
	}
	if str(post(t, e, e.Guest.Key, map[string]any{"extensions": ext}).ok(t), "me", "email") != "gus@acme.test" {
		t.Fatal("hash only")
	}
	// A hash that is not the query's is refused.
	bad := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": strings.Repeat("0", 64)}}
	post(t, e, e.Guest.Key, map[string]any{"query": q, "extensions": bad}).expectError(t, "validation_failed", "query")
}

// A resolver failure that is not a domain error answers internal_error with
// no detail; the log has it, under the request id.
func TestInternalErrorsStayInTheLog(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "INT")
		if err := db.Gorm().Exec("ALTER TABLE tasks RENAME TO tasks_gone").Error; err != nil {
			t.Fatal(err)
		}
		r := gql(t, e, e.Guest.Key, `query($p: ID!) { project(id: $p) { key tasks { nodes { id } } } }`, map[string]any{"p": prj})
		got := r.expectError(t, "internal_error", "")
		// The random request id may spell "sql" by chance; look past it.
		body := strings.ReplaceAll(string(r.Body), r.Header.Get("X-Request-Id"), "")
		if strings.Contains(body, "tasks_gone") || strings.Contains(strings.ToLower(body), "sql") ||
			!strings.Contains(got.Message, "request id") {
			t.Fatalf("internals leaked: %s", r.Body)
		}
		if !strings.Contains(e.Logs.String(), r.Header.Get("X-Request-Id")) || !strings.Contains(e.Logs.String(), "tasks") {
			t.Fatalf("the log must hold the detail under the request id: %s", e.Logs.String())
		}
	})
}

func TestRequestIDsAreTheHeader(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.SQLite(t))
	r := gql(t, e, e.Guest.Key, `{ a: project(id: "prj_a") { id } b: task(id: "tsk_b") { id } }`, nil)
	if len(r.Errors) != 2 {
		t.Fatalf("want two errors: %s", r.Body)
	}
	for _, err := range r.Errors {
		if err.Extensions["request_id"] != r.Header.Get("X-Request-Id") || err.Extensions["code"] != "resource_not_found" {
			t.Fatalf("extensions: %s", r.Body)
		}
	}
	if r.Data["a"] != nil || r.Data["b"] != nil {
		t.Fatalf("data: %s", r.Body)
	}
}

// The answer is JSON unless the client asks for GraphQL's own response type
// first (GraphQL over HTTP); with that type, a document refused before it
// runs is 400 rather than 422.
func TestResponseMediaType(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.SQLite(t))
	for _, c := range []struct {
		accept, query, wantType string
		wantStatus              int
	}{
		{"", "{ me { id } }", "application/json", http.StatusOK},
		{"*/*", "{ me { id } }", "application/json", http.StatusOK},
		{"application/graphql-response+json, application/json;q=0.9", "{ me { id } }", "application/graphql-response+json", http.StatusOK},
		{"text/html;q=0.5, application/json", "{ me { nope } }", "application/json", http.StatusUnprocessableEntity},
		{"application/graphql-response+json", "{ me { nope } }", "application/graphql-response+json", http.StatusBadRequest},
	} {
		r := decode(t, e.Do(apitest.Request{Method: http.MethodPost, Path: "/graphql", Key: e.Guest.Key,
			Body: map[string]any{"query": c.query}, Header: map[string]string{"Accept": c.accept}}))
		if r.Status != c.wantStatus || r.Header.Get("Content-Type") != c.wantType {
			t.Errorf("Accept %q, %s: %d %q, want %d %q", c.accept, c.query, r.Status, r.Header.Get("Content-Type"), c.wantStatus, c.wantType)
		}
	}
}
