package graph_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/graph/server"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// newEnv is the API test environment (two workspaces, a member of each
// role, a controllable clock), with GraphQL mounted exactly as `worktrack
// serve` mounts it, configured by opts.
func newEnv(t *testing.T, db *store.DB, opts ...func(*server.Options)) *apitest.Env {
	t.Helper()
	return newEnvWith(t, db, nil, opts...)
}

func newEnvWith(t *testing.T, db *store.DB, edgeOpts []apitest.Option, opts ...func(*server.Options)) *apitest.Env {
	t.Helper()
	return apitest.NewWith(t, db, apitest.Settings{GraphQL: graphQLOptions(opts)}, edgeOpts...)
}

// newWebhookEnv is newEnv whose webhooks may point at loopback receivers.
func newWebhookEnv(t *testing.T, db *store.DB) *apitest.Env {
	t.Helper()
	return apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
}

func graphQLOptions(opts []func(*server.Options)) server.Options {
	var o server.Options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// gqlError is one element of a response's errors.
type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

// result is a decoded GraphQL HTTP response.
type result struct {
	*apitest.Response
	Data   map[string]any  `json:"data"`
	Errors []gqlError      `json:"errors"`
	Raw    json.RawMessage `json:"-"`
}

// gql posts a GraphQL request through the real router.
func gql(t *testing.T, e *apitest.Env, key, query string, vars map[string]any) *result {
	t.Helper()
	body := map[string]any{"query": query}
	if vars != nil {
		body["variables"] = vars
	}
	return post(t, e, key, body)
}

// post sends any JSON body to POST /graphql.
func post(t *testing.T, e *apitest.Env, key string, body any) *result {
	t.Helper()
	res := e.Do(apitest.Request{Method: http.MethodPost, Path: "/graphql", Key: key, Body: body})
	return decode(t, res)
}

func decode(t *testing.T, res *apitest.Response) *result {
	t.Helper()
	r := &result{Response: res}
	if err := json.Unmarshal(res.Body, r); err != nil {
		t.Fatalf("response is not JSON (%d): %s", res.Status, res.Body)
	}
	return r
}

// ok fails unless the response is a 200 without errors, and returns data.
func (r *result) ok(t *testing.T) map[string]any {
	t.Helper()
	if r.Status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("want 200 without errors, got %d: %s", r.Status, r.Body)
	}
	return r.Data
}

// expectError fails unless the response's only error has the code, and the
// param when one is given (and no param otherwise), with the
// extensions: type, code, request_id equal to X-Request-Id.
func (r *result) expectError(t *testing.T, code, param string) gqlError {
	t.Helper()
	if len(r.Errors) != 1 {
		t.Fatalf("want one error %s, got %d: %s", code, r.Status, r.Body)
	}
	e := r.Errors[0]
	ext := e.Extensions
	if ext["code"] != code || ext["type"] != domainType(code) {
		t.Fatalf("want code %s type %s, got %s", code, domainType(code), r.Body)
	}
	if got, _ := ext["param"].(string); got != param {
		t.Fatalf("want param %q, got %q: %s", param, got, r.Body)
	}
	if id, _ := ext["request_id"].(string); id == "" || id != r.Header.Get("X-Request-Id") || !strings.HasPrefix(id, "req_") {
		t.Fatalf("request_id %q must equal X-Request-Id %q", id, r.Header.Get("X-Request-Id"))
	}
	if e.Message == "" {
		t.Fatalf("empty message: %s", r.Body)
	}
	return e
}

func domainType(code string) string {
	switch code {
	case "missing_api_key", "invalid_api_key":
		return "authentication_error"
	case "too_many_requests":
		return "rate_limit_error"
	case "internal_error", "service_unavailable":
		return "api_error"
	}
	return "invalid_request_error"
}

// get walks a decoded JSON value: get(data, "projects", "nodes", 0, "id").
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any, path ...any) string {
	s, _ := get(v, path...).(string)
	return s
}

func list(v any, path ...any) []any {
	l, _ := get(v, path...).([]any)
	return l
}

// mustStr fails unless the value at path is a non-empty string.
func mustStr(t *testing.T, v any, path ...any) string {
	t.Helper()
	s := str(v, path...)
	if s == "" {
		t.Fatalf("no string at %v in %v", path, v)
	}
	return s
}

// createProject makes a project over GraphQL as the member and returns its id.
func createProject(t *testing.T, e *apitest.Env, key string) string {
	t.Helper()
	data := gql(t, e, e.Member.Key, `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
		map[string]any{"in": map[string]any{"name": "Project " + key, "key": key}}).ok(t)
	return mustStr(t, data, "createProject", "id")
}

// createTask makes a task over GraphQL as the member and returns its id.
func createTask(t *testing.T, e *apitest.Env, projectID string, in map[string]any) string {
	t.Helper()
	data := gql(t, e, e.Member.Key, `mutation($p: ID, $in: CreateTaskInput!) { createTask(projectId: $p, input: $in) { id } }`,
		map[string]any{"p": projectID, "in": in}).ok(t)
	return mustStr(t, data, "createTask", "id")
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return string(b)
}
